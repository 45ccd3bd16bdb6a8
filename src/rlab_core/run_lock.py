"""One owner per run folder: the lock that ``rlab run``, ``rlab resume`` and ``rlab final`` hold.

Two processes writing one run would interleave journal lines, reuse node ids and turn each
other's live nodes into failures. So every command that writes a run holds an exclusive
``flock(2)`` on ``run.lock`` inside the run folder for as long as it runs. The kernel lets
go of the lock when the process ends however it ends (an exception, Ctrl-C, SIGKILL), so a
dead owner never blocks the run. The file names the owner — pid, host, command, since when —
so a refused command can say who holds the run; a clean release empties it, so a file that
still names an owner while the lock is free was left by an owner that died, and taking it
over is said in the log. Read-only commands (``rlab show``, ``rlab report``, the dashboard)
never take the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

from rlab_core.errors import RunFolderError, RunLockedError, storage_errno
from rlab_core.run_folder import RunFolder

LOCK_NAME = "run.lock"
#: ``flock`` errors of a file system that has no locks: the run goes on unguarded, said once.
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LockOwner:
    """Who holds (or held) a run's lock, as ``run.lock`` records it."""

    pid: int
    host: str
    command: str
    since: float

    def describe(self) -> str:
        """``rlab resume`` (pid 123 on host box, since 2025-01-02 10:00:00), in words."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"`rlab {self.command}` (pid {self.pid} on host {self.host}, since {when})"

    def is_alive(self) -> bool | None:
        """Whether the owner's process still runs (``None``: on another host, unknown)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # someone else's process has this pid
        return True


def _read_owner(fd: int) -> LockOwner | None:
    """The owner ``run.lock`` names, or ``None`` for an empty or unreadable file."""
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw) if raw.strip() else None
        return LockOwner(
            pid=int(data["pid"]),
            host=str(data["host"]),
            command=str(data["command"]),
            since=float(data["since"]),
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None


class RunLock:
    """The exclusive lock on one run folder, held from :meth:`acquire` to :meth:`release`.

    A context manager: ``with RunLock(root, "resume"): ...`` releases it on any exit.
    """

    def __init__(self, root: Path, command: str) -> None:
        self.root = Path(root)
        self.path = self.root / LOCK_NAME
        self.command = command
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise :class:`RunLockedError` naming the process that holds it.

        A lock left by an owner that died is taken over, with a warning naming it.
        """
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if storage_errno(exc) is not None:  # a read-only file system, say
                again = f"run `rlab {self.command}` again"
                raise RunFolder(self.root).storage_error(exc, self.path, then=again) from None
            raise RunFolderError(
                f"Cannot open the run's lock file {self.path}: {exc.strerror}; check the run "
                "folder is writable."
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(fd)
            os.close(fd)
            who = owner.describe() if owner else "another rlab process"
            stop = f" (kill {owner.pid} on host {owner.host})" if owner else ""
            raise RunLockedError(
                f"The run {self.root} is in use by {who}; wait for it to finish or stop "
                f"it{stop}, then try again."
            ) from None
        except OSError as exc:
            if exc.errno not in _NO_LOCKS:
                os.close(fd)
                raise
            log.warning(
                "The file system of %s has no file locks, so nothing stops a second rlab "
                "from writing this run at the same time.",
                self.root,
            )
        self._fd = fd
        self._say_takeover(_read_owner(fd))
        me = LockOwner(os.getpid(), socket.gethostname(), self.command, time.time())
        with contextlib.suppress(OSError):  # the names are for messages; the flock is the lock
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(asdict(me)).encode(), 0)
        return self

    def _say_takeover(self, previous: LockOwner | None) -> None:
        if previous is None:
            return
        gone = "is no longer running" if previous.is_alive() is False else "no longer holds it"
        log.warning(
            "Took over the lock of %s from %s, which %s (it was killed or crashed).",
            self.root,
            previous.describe(),
            gone,
        )

    def release(self) -> None:
        """Empty ``run.lock`` and let go of the lock (a no-op when not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # emptied: the next owner finds no one to report
        os.close(fd)  # closing the descriptor releases the flock

    def __enter__(self) -> RunLock:
        return self.acquire() if self._fd is None else self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()


__all__ = ["LOCK_NAME", "LockOwner", "RunLock"]
