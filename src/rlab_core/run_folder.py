"""The layout of one run on disk (docs/user-guide.md, "The run folder").

Also what rlab says when the storage under a run folder fails while rlab writes to it
(:meth:`RunFolder.storage_error`): the run's failure, never a candidate's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlab_core.config import RunConfig
from rlab_core.errors import RunFolderError, StorageFullError, storage_errno
from rlab_core.journal import JOURNAL_NAME, RunState, replay

#: Bytes written (and removed) to learn whether a folder's storage still takes writes.
PROBE_BYTES = 64 * 1024
_STORAGE_WORDS = {
    errno.ENOSPC: ("No space is left on the file system mounted at {}", "free some space there"),
    errno.EROFS: ("The file system mounted at {} is read-only", "make it writable again"),
    errno.EDQUOT: (
        "Your disk quota is used up on the file system mounted at {}",
        "free space within your quota or raise it",
    ),
}


class RunFolder:
    """Paths of one run folder; creating one checks it is writable."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL_NAME

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def nodes_dir(self) -> Path:
        return self.root / "nodes"

    def node_dir(self, node_id: str) -> Path:
        return self.nodes_dir / node_id

    def node_src(self, node_id: str) -> Path:
        return self.node_dir(node_id) / "src"

    @property
    def private_dir(self) -> Path:
        return self.root / "private"

    def private_node_dir(self, node_id: str) -> Path:
        return self.private_dir / "nodes" / node_id

    @property
    def best_dir(self) -> Path:
        return self.root / "best"

    @property
    def cache_dir(self) -> Path:
        """``RLAB_CACHE_DIR``: shared by the nodes of this run."""
        return self.root / "cache"

    @property
    def scratch_dir(self) -> Path:
        """Working copies of candidates while they run."""
        return self.root / "tmp"

    @property
    def final_report(self) -> Path:
        return self.root / "final_report.json"

    @classmethod
    def create(cls, out: Path, task: str) -> RunFolder:
        """Make a new, uniquely named run folder under ``out``."""
        slug = re.sub(r"[^A-Za-z0-9]+", "-", task).strip("-").lower()[:60] or "run"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
            for n in range(1000):
                name = f"{stamp}-{slug}" + (f"-{n}" if n else "")
                try:
                    (Path(out) / name).mkdir()
                except FileExistsError:
                    continue
                run = cls(Path(out) / name)
                for folder in (run.nodes_dir, run.private_dir, run.cache_dir, run.scratch_dir):
                    folder.mkdir()
                os.chmod(run.private_dir, 0o700)
                return run
        except OSError as exc:
            raise RunFolderError(
                f"Cannot create a run folder in {out}: {exc.strerror}; pass a writable folder with --out."
            ) from None
        raise RunFolderError(f"Too many runs named {stamp}-{slug} in {out}; try again in a second.")

    @classmethod
    def open(cls, path: Path | str, out: Path = Path("runs")) -> RunFolder:
        """Find an existing run by path, by id under ``out``, or ``latest``."""
        candidate = Path(path)
        if str(path) == "latest":
            runs = sorted(p for p in Path(out).glob("*") if (p / JOURNAL_NAME).exists())
            if not runs:
                raise RunFolderError(f"No runs in {out}; start one with `rlab run`.")
            candidate = runs[-1]
        elif not candidate.exists() and (Path(out) / str(path)).exists():
            candidate = Path(out) / str(path)
        if not (candidate / JOURNAL_NAME).exists():
            raise RunFolderError(
                f"{path} is not a run folder (no {JOURNAL_NAME}); give the path `rlab run` printed."
            )
        run = cls(candidate)
        # a damaged record is said by every command; a missing one only by those that need it
        if run.run_json.exists():
            run.read_record()
        return run

    def storage_error(
        self, error: OSError, where: Path | None = None, *, then: str | None = None
    ) -> StorageFullError:
        """The one sentence for a storage ``error`` met while rlab wrote ``where`` in this run.

        It names the path, the file system (its mount point) and the bytes still free there,
        and the way on: make room, then ``then`` (by default: ``rlab resume`` the run).
        """
        code = storage_errno(error) or errno.ENOSPC
        path = Path(error.filename) if isinstance(error.filename, str) else (where or self.root)
        what, way = _STORAGE_WORDS[code]
        mount, free = _mount_and_free(path)
        room = f" ({_bytes_text(free)} free)" if free is not None else ""
        then = then or (
            f"continue with `rlab resume {self.root}` (the node that was running starts again)"
        )
        return StorageFullError(
            f"{what.format(mount)}{room}, where rlab wrote {path}; {way}, then {then}."
        )

    @contextlib.contextmanager
    def storage_guard(
        self, where: Path | None = None, *, then: str | None = None
    ) -> Iterator[None]:
        """Turn a storage ``OSError`` raised inside into :class:`StorageFullError`.

        For the harness's own writes in the run folder: what it meets there is the run's
        failure, so it must stop the run instead of becoming a candidate's failure.
        """
        try:
            yield
        except OSError as exc:
            if storage_errno(exc) is None:
                raise
            raise self.storage_error(exc, where, then=then) from exc

    def probe_storage(self, where: Path) -> None:
        """Raise :class:`StorageFullError` when ``where`` (a folder here) takes no more writes.

        A candidate's log is written by the candidate's own process, so a full disk only
        shows as a candidate that failed with an empty log; after a failure this probe tells
        that apart from the candidate's own fault.
        """
        probe = where / ".rlab-storage-probe"
        try:
            with self.storage_guard(where):
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
                fd = os.open(probe, flags, 0o600)  # never through a planted link
                try:
                    view = memoryview(bytes(PROBE_BYTES))
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)  # some file systems report a full disk only here
                finally:
                    os.close(fd)
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()

    def write_run_json(self, data: dict[str, Any]) -> None:
        tmp = self.run_json.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, default=str))
        tmp.replace(self.run_json)

    def read_record(self) -> dict[str, Any]:
        """``run.json`` checked to be a run's record: a mapping with its task and configuration."""
        info = self.read_run_json()
        if not isinstance(info.get("task"), str) or not isinstance(info.get("config"), dict):
            raise RunFolderError(
                f"{self.run_json} lacks the task or the configuration; the run folder is "
                "damaged: restore run.json from a copy."
            )
        return info

    def read_run_json(self) -> dict[str, Any]:
        """``run.json`` as a mapping; a missing, torn or foreign file is one clear sentence."""
        try:
            data = json.loads(self.run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunFolderError(
                f"Cannot read {self.run_json}: {exc}; the run folder is incomplete."
            ) from None
        if not isinstance(data, dict):
            raise RunFolderError(
                f"{self.run_json} holds a {type(data).__name__}, not a run's record; the run "
                "folder is damaged: restore run.json from a copy."
            )
        return data


@dataclass
class OpenedRun:
    """An existing run, read once: its folder, ``run.json``, its configuration and the
    journal's replayed state."""

    folder: RunFolder
    info: dict[str, Any]
    config: RunConfig
    state: RunState
    #: The journal's size when it was read: a later, larger journal means a newer state.
    journal_bytes: int = 0

    @property
    def task(self) -> str:
        return str(self.info["task"])

    def current(self) -> OpenedRun:
        """This run as it is now: read again if its journal changed since it was read.

        Called once the run's lock is held: another process may have written events
        between the first reading and the lock.
        """
        if _size(self.folder.journal_path) == self.journal_bytes:
            return self
        return open_run(self.folder.root)


def open_run(path: Path | str, out: Path = Path("runs")) -> OpenedRun:
    """Find a run (path, id under ``out``, or ``latest``) and read it once.

    The one way the CLI and the runner open a run: ``run.json`` is checked and its
    configuration validated, and the journal is replayed, a single time.
    """
    folder = RunFolder.open(path, out)
    info = folder.read_record()
    try:
        config = RunConfig.model_validate(info["config"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise RunFolderError(
            f"The configuration in {folder.run_json} is not valid for this rlab ({where}: "
            f"{first['msg']}); resume it with the rlab version that started it."
        ) from None
    size = _size(folder.journal_path)  # before the replay: growth during it reads again later
    return OpenedRun(folder, info, config, replay(folder.journal_path), size)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _mount_and_free(path: Path) -> tuple[Path, int | None]:
    """The mount point of the file system holding ``path``, and the bytes free there."""
    existing = Path(os.path.abspath(path))
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    mount = existing
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        free: int | None = shutil.disk_usage(existing).free
    except OSError:
        free = None
    return mount, free


def _bytes_text(count: int) -> str:
    size = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{count} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"
