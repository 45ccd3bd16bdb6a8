"""Candidate outputs taken as data: regular files only, never through a link.

Everything a candidate leaves behind is untrusted. A link named ``val_predictions.npy``
that points at the private labels would score the labels against themselves if the
harness followed it; a link named like a file the harness writes would redirect that
write. So once a candidate has exited, :func:`take_outputs` copies its output folder into
a folder only the harness writes, walking it through file descriptors and opening every
entry with ``O_NOFOLLOW``: regular files and folders are copied, anything else — a
symbolic link, a hard link to a file elsewhere, a fifo, a socket, a device — refuses the
whole folder with one sentence naming the entry and why. Validation scoring, private
outputs, ``best/``, submissions and ``rlab final`` read only such a copy.

Taking from a folder the harness owns (a node's outputs, for ``best/`` or ``rlab final``),
the caller may name ``shared`` files: the run's own stored files
(:class:`rlab_core.blobs.BlobStore`), which have several names by design. Those are taken
(copied, like any file); any other file with several names is still refused.

:func:`disk_usage_bytes` measures what a candidate's folders really hold on disk, for the
sandboxes' disk limit, without following links either.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from rlab_core.errors import ContractError

#: Most entries (files and folders) one output folder may hold.
MAX_OUTPUT_ENTRIES = 10_000
#: Deepest folder nesting taken.
MAX_OUTPUT_DEPTH = 32
_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a fifo must not wait for a writer; O_NOCTTY: never adopt a terminal
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class OutputsRefused(ContractError):
    """The outputs are not plain data (a link, a fifo, too large); the node fails with this."""


@dataclass(frozen=True)
class TakenOutputs:
    """What :func:`take_outputs` copied: relative posix paths and their total size."""

    files: tuple[str, ...]
    total_bytes: int


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _shown(rel: str) -> str:
    """A candidate-chosen name, safe to print: quoted, escapes visible, bounded."""
    text = repr(rel)
    return text if len(text) <= 120 else text[:117] + "...'"


class _Taker:
    def __init__(
        self,
        dest: Path,
        max_bytes: int,
        max_entries: int,
        shared: Collection[tuple[int, int]] = (),
    ) -> None:
        self.dest = dest
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.shared = shared
        self.total = 0
        self.entries = 0
        self.files: list[str] = []

    def refuse(self, rel: str, why: str) -> OutputsRefused:
        return OutputsRefused(
            f"output {_shown(rel)} {why}; write plain files into $RLAB_OUTPUT_DIR — rlab takes "
            "outputs as data and never follows a candidate's links"
        )

    def take_dir(self, dir_fd: int, rel_dir: str, depth: int) -> None:
        if depth > MAX_OUTPUT_DEPTH:
            raise self.refuse(rel_dir, f"is nested more than {MAX_OUTPUT_DEPTH} folders deep")
        with os.scandir(dir_fd) as scan:
            names = sorted(entry.name for entry in scan)
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            self.entries += 1
            if self.entries > self.max_entries:
                raise self.refuse(rel, f"is one entry too many (at most {self.max_entries})")
            try:
                seen = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while we looked: nothing to take
            if stat.S_ISDIR(seen.st_mode):
                self._take_subdir(dir_fd, name, rel, seen, depth)
            elif stat.S_ISREG(seen.st_mode):
                self._take_file(dir_fd, name, rel, seen)
            else:
                detail = ""
                if stat.S_ISLNK(seen.st_mode):
                    try:
                        detail = f" to {_shown(os.readlink(name, dir_fd=dir_fd))}"
                    except OSError:
                        detail = ""
                raise self.refuse(rel, f"is {_kind(seen.st_mode)}{detail}")

    def _open(self, dir_fd: int, name: str, rel: str, flags: int, seen: os.stat_result) -> int:
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
                raise self.refuse(rel, "was replaced by a link or special file") from None
            raise self.refuse(rel, f"cannot be read ({exc.strerror})") from None
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            os.close(fd)
            raise self.refuse(rel, "changed while it was being taken")
        return fd

    def _take_subdir(
        self, dir_fd: int, name: str, rel: str, seen: os.stat_result, depth: int
    ) -> None:
        fd = self._open(dir_fd, name, rel, _DIR_FLAGS, seen)
        try:
            (self.dest / rel).mkdir()
            self.take_dir(fd, rel, depth + 1)
        finally:
            os.close(fd)

    def _take_file(self, dir_fd: int, name: str, rel: str, seen: os.stat_result) -> None:
        if seen.st_nlink > 1 and (seen.st_dev, seen.st_ino) not in self.shared:
            raise self.refuse(rel, f"is a hard link ({seen.st_nlink} names for one file)")
        self.total += seen.st_size
        if self.total > self.max_bytes:
            raise self.refuse(
                rel, f"takes the outputs past their {self.max_bytes / 2**20:g} MiB limit"
            )
        fd = self._open(dir_fd, name, rel, _FILE_FLAGS, seen)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise self.refuse(rel, "is not a regular file")
            os.set_blocking(fd, True)
            target = os.open(
                self.dest / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644
            )
            try:
                self._copy(fd, target, rel, seen.st_size)
            finally:
                os.close(target)
        finally:
            os.close(fd)
        self.files.append(rel)

    def _copy(self, source: int, target: int, rel: str, size: int) -> None:
        left = size
        while True:
            chunk = os.read(source, min(_CHUNK, left + 1))  # one byte more shows growth
            if not chunk:
                return
            left -= len(chunk)
            if left < 0:
                raise self.refuse(rel, "grew while it was being taken")
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]


def take_outputs(
    source: Path,
    dest: Path,
    *,
    max_bytes: int,
    max_entries: int = MAX_OUTPUT_ENTRIES,
    shared: Collection[tuple[int, int]] = (),
) -> TakenOutputs:
    """Copy the candidate folder ``source`` into the new folder ``dest``, as data.

    Only regular files (with a single name) and folders are taken, at most ``max_bytes``
    in all. Raises :class:`OutputsRefused` naming the first entry that is anything else —
    ``dest`` is then removed, so nothing half-taken is ever scored. A missing ``source``
    gives an empty ``dest`` (the benchmark's contract check then says what is missing).
    ``dest`` must not exist; its parent must be a folder only the harness writes.

    ``shared`` are the ``(st_dev, st_ino)`` of the run's stored files
    (:meth:`rlab_core.blobs.BlobStore.inodes`), only for a ``source`` the harness owns: a
    file that is one of them is taken although it has several names. ``dest`` always gets
    copies, so whoever reads it (a scorer, a submission writer) may write there freely.
    """
    dest = Path(dest)
    dest.mkdir()
    taker = _Taker(dest, max_bytes, max_entries, shared)
    try:
        try:
            root = os.open(source, _DIR_FLAGS)
        except FileNotFoundError:
            return TakenOutputs((), 0)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OutputsRefused(
                    "the output folder itself was replaced by a link or a file; write plain "
                    "files into $RLAB_OUTPUT_DIR"
                ) from None
            raise
        try:
            taker.take_dir(root, "", 0)
        finally:
            os.close(root)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return TakenOutputs(tuple(taker.files), taker.total)


def disk_usage_bytes(folders: Iterable[Path]) -> int:
    """Bytes the folders really hold on disk (allocated blocks), never following a link.

    A sparse file counts as what it occupies, a file with several names once; entries that
    vanish during the walk are skipped, so this is safe while a candidate still writes.
    """
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [os.fspath(folder) for folder in folders]
    while stack:
        path = stack.pop()
        try:
            scan = os.scandir(path)
        except OSError:
            continue
        with scan:
            for entry in scan:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue
                seen.add(key)
                total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
    return total
