"""The ``mlflow`` observer: mirrors a run's journal into MLflow when the run asks for it.

Off unless the run's configuration says ``observer_options.mlflow.enabled: true``
(``-o observer.mlflow.enabled=true``), so installing the plugin changes nothing by itself.
The hook only reads the options (once per run folder) and queues the event: MLflow itself
is imported and called from a background thread (:mod:`rlab_mlflow.worker`).
"""

from __future__ import annotations

import atexit
import logging
import threading
from pathlib import Path
from typing import Any

from rlab_core.api import hookimpl
from rlab_mlflow.options import OptionsProblem, read_options, tracking_uri
from rlab_mlflow.worker import Worker, flush_all

log = logging.getLogger(__name__)

#: Events after which the backlog is written before the hook returns (bounded wait): the
#: process usually ends soon after them.
FLUSH_ON = frozenset({"run_stopped", "final"})
#: Longest wait at interpreter exit for what is still queued, seconds, all runs together.
EXIT_FLUSH_S = 10.0

_lock = threading.Lock()
#: Run folder -> its worker, or None where the mirror is off for that run.
_workers: dict[str, Worker | None] = {}


def _worker(run_dir: Path) -> Worker | None:
    key = str(Path(run_dir).resolve())
    with _lock:
        if key in _workers:
            return _workers[key]
        try:
            options = read_options(Path(run_dir))
        except OptionsProblem as exc:
            log.warning("%s.", exc)
            _workers[key] = None
            return None
        if options is None:
            return None  # no run.json yet: asked again with the next event
        worker = None
        if options.enabled:
            worker = Worker(Path(run_dir), options, tracking_uri(options, Path(run_dir)))
        _workers[key] = worker
        return worker


@hookimpl
def rlab_observe_event(event: dict[str, Any], run_dir: Path) -> None:
    """Queue the event for MLflow; on ``run_stopped`` and ``final``, wait for the backlog."""
    worker = _worker(run_dir)
    if worker is None:
        return
    worker.submit(event)
    if event.get("type") in FLUSH_ON:
        worker.flush()


@atexit.register
def _flush_at_exit() -> None:
    flush_all({k: w for k, w in _workers.items() if w is not None}, EXIT_FLUSH_S)
