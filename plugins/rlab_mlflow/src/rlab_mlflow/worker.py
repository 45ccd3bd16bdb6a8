"""The background thread that talks to MLflow, so the research loop never waits on it.

Events queue up (a bounded queue: past it they are dropped, not waited for). Each event is
tried, retried a few times with a short pause, then dropped and counted. After a drop the
worker stops trying for a while (``COOLDOWN_S``) and drops what comes meanwhile at once:
an unreachable server costs the run one timeout, not one per event. The count reaches the
run's facts (``mlflow.json``, ``dropped_events``) and one warning when the run stops.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from rlab_mlflow.link import FILE
from rlab_mlflow.options import MlflowOptions, redact

log = logging.getLogger(__name__)

#: After a dropped event, the seconds during which new events are dropped without a try.
COOLDOWN_S = 30.0
#: Pause before the first retry of an event; doubled for each next one.
RETRY_PAUSE_S = 0.5


def _client_settings(options: MlflowOptions, uri: str) -> None:
    # MLflow reads these at each request; the user's own values win. Its defaults (120 s,
    # 7 retries with backoff) would hold a dead server's event for minutes.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, round(options.timeout_s))))
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    # no usage report to MLflow's makers from a research run unless the user opts in
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # the client would print each run's URL on stdout (rlab's, `--json` included), with the
    # server's user and password where the URI holds them
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    if uri.startswith("file:"):
        # MLflow 3 keeps its file store (the local mlruns/ folder) behind this switch
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")


_OS_ERROR = re.compile(r"\[Errno -?\d+\] [^\"')]+")


def _reason(exc: BaseException) -> str:
    """Why a call failed, in one short line (the OS's words for a network error)."""
    text = str(exc)
    found = _OS_ERROR.search(text)
    if found:
        return found.group(0).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first[:200]}"


class Worker:
    """Mirrors one run's events into MLflow from a daemon thread."""

    def __init__(self, run_dir: Path, options: MlflowOptions, uri: str) -> None:
        self.run_dir = Path(run_dir)
        self.options = options
        self.uri = uri
        self.shown_uri = redact(uri)
        self.dropped = 0  # since the last time the count was written
        self.dropped_total = 0  # in this process
        self.first_error: str | None = None
        self.warned = False
        self._mirror: Any = None
        self._down_until = 0.0
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=options.queue)
        self._thread = threading.Thread(target=self._work, name="rlab-mlflow", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ caller's side

    def submit(self, event: dict[str, Any]) -> None:
        """Queue one event; never blocks (a full queue drops it, counted)."""
        try:
            self._queue.put_nowait(("event", event))
        except queue.Full:
            self._drop(1, "the queue of events for MLflow was full")

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait (at most ``timeout_s``, default the ``flush_s`` option) for the backlog.

        Then writes the dropped count to ``mlflow.json`` and, once per process, warns when
        events were dropped. True when everything queued before the call was handled.
        """
        done = threading.Event()
        wait = self.options.flush_s if timeout_s is None else timeout_s
        try:
            self._queue.put(("flush", done), timeout=wait)
            finished = done.wait(wait)
        except queue.Full:
            finished = False
        if not finished:
            log.debug("MLflow backlog not written within %.0f s", wait)
        self._warn_once(finished)
        return finished

    def _warn_once(self, finished: bool) -> None:
        if self.warned or not (self.dropped_total or not finished):
            return
        self.warned = True
        reason = f" ({redact(self.first_error)})" if self.first_error else ""
        backlog = "" if finished else "; events still waiting were not logged"
        log.warning(
            "MLflow at %s could not take this run's events%s: %d event(s) were not logged%s "
            "(counted as dropped_events in %s); the run itself is unaffected.",
            self.shown_uri,
            reason,
            self.dropped_total,
            backlog,
            self.run_dir / FILE,
        )

    # ------------------------------------------------------------------ worker's side

    def _drop(self, count: int, reason: str) -> None:
        self.dropped += count
        self.dropped_total += count
        if self.first_error is None:
            self.first_error = reason

    def _work(self) -> None:
        while True:
            kind, item = self._queue.get()
            if kind == "flush":
                self._write_count()
                item.set()
            else:
                self._handle(item)

    def _handle(self, event: dict[str, Any]) -> None:
        if time.monotonic() < self._down_until:
            self._drop(1, self.first_error or "unreachable")
            return
        pause = RETRY_PAUSE_S
        for attempt in range(self.options.retries + 1):
            try:
                self.mirror().apply(event)
                return
            except Exception as exc:
                error = _reason(exc)
                # the first failure's traceback, with --verbose: redacted (a URI in an
                # exception's text may hold a password)
                trace = "".join(traceback.format_exception(exc)) if attempt == 0 else error
                log.debug(
                    "MLflow event %s, attempt %d failed: %s",
                    event.get("type"),
                    attempt + 1,
                    redact(trace),
                )
                if attempt < self.options.retries:
                    time.sleep(pause)
                    pause *= 2
        self._drop(1, error)
        self._down_until = time.monotonic() + COOLDOWN_S

    def mirror(self) -> Any:
        """The event-to-MLflow translator, made (and mlflow imported) in this thread."""
        if self._mirror is None:
            _client_settings(self.options, self.uri)
            from mlflow.tracking import MlflowClient

            from rlab_mlflow.mirror import Mirror

            client = MlflowClient(tracking_uri=self.uri)
            self._mirror = Mirror(client, self.run_dir, self.options.experiment, self.shown_uri)
        return self._mirror

    def _write_count(self) -> None:
        if not self.dropped:
            return
        try:
            if self._mirror is not None:
                self._mirror.record_dropped(self.dropped)
            else:
                from rlab_mlflow.link import Link

                link = Link.read(self.run_dir)
                link.dropped_events += self.dropped
                link.write(self.run_dir)
            self.dropped = 0
        except Exception as exc:  # a full disk: the run says so itself; the count waits
            log.debug("cannot write %s: %s", FILE, exc)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


def flush_all(workers: dict[str, Worker], timeout_s: float) -> None:
    """Flush every worker within ``timeout_s`` in all (at interpreter exit)."""
    deadline = time.monotonic() + timeout_s
    for worker in list(workers.values()):
        worker.flush(max(0.0, deadline - time.monotonic()))
