"""A run's files stored once: identical files share one copy on disk, and a size warning.

Every node keeps its own program (``nodes/<id>/src``), validation outputs
(``nodes/<id>/outputs``) and test-side predictions (``private/nodes/<id>``), and ``best/``
keeps the winner's again. Most of these files are identical to one kept before: the seed's
assets in every descendant, predictions a change did not move, the submission. The
:class:`BlobStore` (``private/store``, named by content) holds one name of every such file
and each record is another name of it (a hard link), so identical content takes its space
once. Where no link can be made (another file system, links refused) the record keeps its
own copy, which is as correct and only larger.

Only the harness's records are ever shared, after it has written them and never writes
them in place again; a candidate runs in its own copy (:func:`rlab_core.edits.copy_source`)
and never sees the run folder, so nothing it writes can reach a shared file.

:class:`RunStorage` does this per node and watches the run folder's real size: past
:data:`WARN_BYTES` it logs one warning naming the size and what takes the space.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlab_core.run_folder import RunFolder

log = logging.getLogger(__name__)

#: The store's folder inside the run's private folder (the test side is stored there too).
STORE_NAME = "store"
#: A run folder past this many bytes on disk gets one warning.
WARN_BYTES = 1 << 30
#: Least seconds between two measurements of the candidates' shared cache.
CACHE_RECHECK_S = 300.0
#: ``errno`` values for which a hard link cannot be made but a copy can: another file
#: system, a file system without links or refusing them, a file with too many names.
LINK_FALLBACK_ERRNOS = frozenset(
    {errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}
)


def _blocks(info: os.stat_result) -> int:
    return info.st_blocks * 512


def _digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class BlobStore:
    """A folder of files named by their SHA-256, each one more name of identical records."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @classmethod
    def of_run(cls, run: RunFolder) -> BlobStore:
        """The store of ``run``: ``private/store``."""
        return cls(run.private_dir / STORE_NAME)

    def _entry(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def share(self, folder: Path) -> int:
        """Make each file of ``folder`` one more name of the stored file of the same content.

        Files with several names already (linked from a parent's record) are left as they
        are. Returns the bytes the folder adds to the disk: files whose content was not
        stored before, and files that could only stay copies. Never follows a link.
        """
        added = 0
        for path, info in _regular_files(Path(folder)):
            if info.st_nlink > 1:
                continue
            added += self._share_file(path, info)
        return added

    def _share_file(self, path: Path, info: os.stat_result) -> int:
        entry = self._entry(_digest(path))
        entry.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, entry, follow_symlinks=False)
            return _blocks(info)  # the first of its content: it is the stored copy now
        except FileExistsError:
            pass
        except OSError as exc:
            if exc.errno in LINK_FALLBACK_ERRNOS:
                return _blocks(info)
            raise
        if entry.stat().st_size != info.st_size:
            return _blocks(info)  # a damaged store entry is never shared further
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.link")
        try:
            os.link(entry, temp, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in LINK_FALLBACK_ERRNOS:  # e.g. the entry has too many names
                return _blocks(info)
            raise
        os.replace(temp, path)  # the record's own copy goes; its content stays, stored
        return 0

    def inodes(self) -> frozenset[tuple[int, int]]:
        """``(st_dev, st_ino)`` of every stored file (for :func:`~rlab_core.outputs.take_outputs`)."""
        return frozenset((info.st_dev, info.st_ino) for _, info in _regular_files(self.root))

    def prune(self) -> int:
        """Remove stored files no record names any more (a dropped node's); returns bytes freed."""
        freed = 0
        for path, info in _regular_files(self.root):
            if info.st_nlink == 1:
                path.unlink(missing_ok=True)
                freed += _blocks(info)
        return freed


def _walk(folder: Path) -> Iterable[tuple[Path, os.stat_result]]:
    """Every entry under ``folder`` with its ``lstat``, never following a link.

    Entries that vanish during the walk are skipped.
    """
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            scan = os.scandir(current)
        except (FileNotFoundError, NotADirectoryError):
            continue
        with scan:
            for entry in scan:
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                yield Path(entry.path), info
                if stat.S_ISDIR(info.st_mode):
                    stack.append(Path(entry.path))


def _regular_files(folder: Path) -> Iterable[tuple[Path, os.stat_result]]:
    return ((path, info) for path, info in _walk(folder) if stat.S_ISREG(info.st_mode))


def _bytes_text(size: float) -> str:
    if size < 1024:
        return f"{size:.0f} bytes"
    for unit in ("KiB", "MiB"):
        size /= 1024
        if size < 1024:
            return f"{size:.1f} {unit}"
    return f"{size / 1024:.1f} GiB"


class RunStorage:
    """A run's storage: each node's files stored once, and one warning when the run grows large.

    Measures the run folder once when made (start or resume), then adds what each node adds,
    so nothing large is walked per node; the candidates' shared cache is re-measured at most
    every :data:`CACHE_RECHECK_S` seconds. Safe to use from several workers at once.
    """

    def __init__(self, run: RunFolder, *, warn_bytes: int | None = None) -> None:
        self.run = run
        self.store = BlobStore.of_run(run)
        self.warn_bytes = WARN_BYTES if warn_bytes is None else warn_bytes
        self._lock = threading.Lock()
        self._warned = False
        self.store.prune()  # a node dropped on resume leaves stored files nobody names
        self._cache_bytes = _usage([run.cache_dir], set())
        self._cache_checked = time.monotonic()
        self.size_bytes = 0
        self._check(sum(measure_run(run).values()))

    def keep_node(self, node_id: str) -> int:
        """Store the node's program, outputs and test-side outputs once; returns bytes it added.

        Call it when the node's files are final (after it was scored), never before a write.
        """
        node_dir = self.run.node_dir(node_id)
        added = sum(
            self.store.share(folder)
            for folder in (
                node_dir / "src",
                node_dir / "outputs",
                self.run.private_node_dir(node_id),
            )
        )
        try:
            with os.scandir(node_dir) as scan:  # its logs and records, one level only
                added += sum(
                    _blocks(entry.stat(follow_symlinks=False))
                    for entry in scan
                    if entry.is_file(follow_symlinks=False)
                )
        except FileNotFoundError:
            pass
        with self._lock:
            if time.monotonic() - self._cache_checked >= CACHE_RECHECK_S:
                cache = _usage([self.run.cache_dir], set())
                added += cache - self._cache_bytes
                self._cache_bytes, self._cache_checked = cache, time.monotonic()
            self._check(self.size_bytes + added)
        return added

    def _check(self, estimate: int) -> None:
        self.size_bytes = estimate
        if self._warned or estimate <= self.warn_bytes:
            return
        parts = measure_run(self.run)  # once: the exact size and what takes it
        self.size_bytes = sum(parts.values())
        if self.size_bytes <= self.warn_bytes:
            return
        self._warned = True
        biggest = sorted(((size, name) for name, size in parts.items() if size), reverse=True)
        detail = ", ".join(f"{name} {_bytes_text(size)}" for size, name in biggest[:4])
        log.warning(
            "The run folder %s holds %s on disk, more than %s: %s. Identical files are already "
            "stored once; free space or delete old runs if the disk is filling up (said once).",
            self.run.root,
            _bytes_text(self.size_bytes),
            _bytes_text(self.warn_bytes),
            detail,
        )


def _usage(folders: Iterable[Path], seen: set[tuple[int, int]]) -> int:
    """Allocated bytes under ``folders``, each file counted once across calls sharing ``seen``."""
    total = 0
    for folder in folders:
        for _, info in _walk(folder):
            key = (info.st_dev, info.st_ino)
            if key not in seen:
                seen.add(key)
                total += _blocks(info)
    return total


def measure_run(run: RunFolder) -> dict[str, int]:
    """The run folder's real size on disk by what takes it; a file with several names once.

    Shared content is counted where it is first met, in this order: the programs, the
    outputs, the nodes' logs and records, ``best/``, the cache, the seed replicates, the
    rest (the journal, the store's names, working copies).
    """
    seen: set[tuple[int, int]] = set()
    nodes = sorted(run.nodes_dir.iterdir()) if run.nodes_dir.is_dir() else []
    private_nodes = run.private_dir / "nodes"
    parts = {
        "program sources": [node / "src" for node in nodes],
        "outputs": [node / "outputs" for node in nodes] + [private_nodes],
        "logs and records": [run.nodes_dir],
        "best/": [run.best_dir],
        "the candidates' cache": [run.cache_dir],
        "seed replicates": [run.root / "replicates"],
        "other": [run.root],
    }
    return {name: _usage(folders, seen) for name, folders in parts.items()}
