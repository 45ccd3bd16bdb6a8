"""The recorder: the one writer of a run's events.

Each event is written once, in this order: the journal line (flushed before anything else
learns of it), the observers (``notify(event, run_dir)``: the plugin host's
``rlab_observe_event`` hook, which the dashboard also listens on) and the caller's
``on_event`` sink (the live terminal view). A finished node's record goes to its
``result.json`` first, whole or not at all, then to the journal: a node is finished only
once its journal line is in. Events from worker threads are written one at a time, under
``lock``. A storage error on the way (a full disk) is the run's failure: it stops the run
as :class:`~rlab_core.errors.StorageFullError` and leaves no half-written record.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlab_core.errors import StorageFullError
from rlab_core.events import Event, NodeFinished
from rlab_core.journal import Journal
from rlab_core.records import Node

if TYPE_CHECKING:
    from rlab_core.run_folder import RunFolder

#: Receives each event as its journal line (a mapping with ``seq``, ``t`` and ``type``).
EventSink = Callable[[dict[str, Any]], None]
#: Receives each event and the run folder (the shape of the ``rlab_observe_event`` hook).
Notify = Callable[[dict[str, Any], Path], None]


class Recorder:
    """Writes typed events to the journal, ``result.json`` and the observers."""

    def __init__(
        self,
        journal: Journal,
        run: RunFolder,
        *,
        notify: Notify | None = None,
        on_event: EventSink | None = None,
        lock: threading.RLock | None = None,
        then: str | None = None,
    ) -> None:
        self.journal = journal
        self.run = run
        self.notify = notify
        self.on_event = on_event
        #: What a storage error's message says to do once there is room (default: resume).
        self.then = then
        #: Held while an event is written; the loop guards its shared state with it too.
        self.lock = lock if lock is not None else threading.RLock()

    def record(self, event: Event) -> dict[str, Any]:
        """Write one event; return its journal line."""
        with self.lock:
            return self._write(event.TYPE, event.payload())

    def node_finished(self, node: Node, *, bookkeeping_since: float) -> dict[str, Any]:
        """Write a finished node's ``result.json``, then journal it.

        The time since ``bookkeeping_since`` (the record's serialisation included) is stored
        with the node as ``timing.bookkeeping_s``; the ``result.json`` and journal line
        written right after are the only bookkeeping not in the figure.
        """
        with self.lock:
            payload = NodeFinished(node=node).payload()
            node.timing.bookkeeping_s = payload["node"]["timing"]["bookkeeping_s"] = round(
                time.perf_counter() - bookkeeping_since, 4
            )
            result = self.run.node_dir(node.id) / "result.json"
            with self.run.storage_guard(result, then=self.then):
                write_atomically(result, json.dumps(payload["node"], indent=1))
            try:
                return self._write(NodeFinished.TYPE, payload)
            except StorageFullError:
                result.unlink(missing_ok=True)  # not journaled: the node is unfinished
                raise

    def _write(self, event_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self.run.storage_guard(self.journal.path, then=self.then):
            line = self.journal.append(event_type, **payload)
        if self.notify is not None:
            self.notify(line, self.run.root)
        if self.on_event is not None:
            self.on_event(line)
        return line

    def close(self) -> None:
        """Close the journal; nothing is written after this."""
        self.journal.close()


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file renamed over it."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
