"""The world of one hostile attack: the folders a run has, a victim, listeners and a secret.

:func:`make_site` lays out the data folder, a private side (labels the candidate must never
see), a run folder and a host folder with a victim file; :class:`Listeners` count who
connects to a TCP port and a unix socket on the host; :func:`start_secret_holder` starts a
process whose environment holds a secret, as rlab's own does with an API key.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SECRET_VARIABLE = "RLAB_HOSTILE_SECRET"
SECRET_VALUE = "hostile-suite-secret-4711"
PRIVATE_BYTES = b"PRIVATE-LABELS-0123456789"
VICTIM_TEXT = "victim: must never change"

#: The small limits the memory and disk attacks run under, in MiB.
LIMIT_MB = {"memory": 192, "disk": 48}


@dataclass
class Site:
    """The folders of one attack: what a run would have, with a private side and a victim."""

    root: Path
    data: Path
    private: Path
    run: Path
    host: Path
    listener_port: int
    unix_socket: Path

    @property
    def labels(self) -> Path:
        return self.private / "labels.npy"

    @property
    def journal(self) -> Path:
        return self.run / "journal.jsonl"

    @property
    def victim(self) -> Path:
        return self.host / "victim.txt"


def make_site(root: Path) -> Site:
    """Lay out the site under ``root``: data, private labels, a run folder and a victim."""
    data, private, run, host = (root / n for n in ("data", "private", "run", "host"))
    for folder in (data, private, run, host):
        folder.mkdir(parents=True)
        folder.chmod(0o755)  # a sandbox running candidates as another user reads the data
    (data / "input.txt").write_text("42")
    (private / "labels.npy").write_bytes(PRIVATE_BYTES)
    (run / "journal.jsonl").write_text('{"type": "run_started"}\n')
    (host / "victim.txt").write_text(VICTIM_TEXT)
    return Site(root, data, private, run, host, 0, host / "daemon.sock")


class Listeners:
    """A TCP listener and a unix socket on the host that count who connects."""

    def __init__(self, unix_path: Path) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(str(unix_path))
        self.unix.listen()
        self.connections = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve, args=(s,), daemon=True)
            for s in (self.tcp, self.unix)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def port(self) -> int:
        return int(self.tcp.getsockname()[1])

    def _serve(self, server: socket.socket) -> None:
        server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        self.tcp.close()
        self.unix.close()


def heartbeat_alive(cache: Path, wait_s: float = 1.0) -> bool:
    """Whether a detached grandchild still writes its heartbeat into ``cache``."""
    beat = cache / "heartbeat"
    before = beat.read_text() if beat.exists() else None
    time.sleep(wait_s)
    after = beat.read_text() if beat.exists() else None
    return after is not None and after != before


def start_secret_holder() -> subprocess.Popen[bytes]:
    """Start a process of this user with a secret in its environment, as rlab has an API key.

    ``/proc/<pid>/environ`` shows what a process started with: a candidate must not read it.
    """
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={**os.environ, SECRET_VARIABLE: SECRET_VALUE},
        stdin=subprocess.DEVNULL,
    )
