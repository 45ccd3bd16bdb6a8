"""Exact-once anchored edits, the edit boundary and unified diffs.

An edit replaces the single occurrence of its anchor. Zero or several occurrences are
refused with a message showing the closest text (or where the copies are), so an agent
can correct itself. A new file may be created with an empty anchor. Only files matching
the task's editable patterns may change, whether by edit or by whole-file rewrite.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from rlab_core.blobs import LINK_FALLBACK_ERRNOS
from rlab_core.errors import EditError
from rlab_core.records import Edit

#: Folders and files never treated as candidate source.
IGNORED_PARTS = {"__pycache__", ".git", ".ipynb_checkpoints", ".rlab"}
MAX_SOURCE_FILE_BYTES = 2_000_000

SourceFiles = dict[str, str]


def read_source(folder: Path) -> SourceFiles:
    """Read every text file of a candidate folder into ``{relative posix path: text}``."""
    files: SourceFiles = {}
    root = Path(folder)
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or IGNORED_PARTS.intersection(rel.parts):
            continue
        if path.stat().st_size > MAX_SOURCE_FILE_BYTES:
            continue
        try:
            files[rel.as_posix()] = path.read_text()
        except UnicodeDecodeError:
            continue  # binary assets are copied with the folder, never edited
    return files


def copy_source(src: Path, dest: Path) -> None:
    """Copy a candidate folder (binary assets included), skipping caches.

    Every file is a copy of its own: this is the copy a candidate may run in and write.
    """
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*IGNORED_PARTS), dirs_exist_ok=True)


def share_source(src: Path, dest: Path) -> None:
    """Make ``dest`` a candidate folder holding ``src``'s files as hard links, skipping caches.

    For the run's records only (a child's ``src/`` from its parent's, ``best/src``): the two
    folders then share the storage of every file, so a large asset is kept once however many
    nodes inherit it. Never for a folder a candidate runs in or can write — a write in place
    there would change every node's copy; :func:`copy_source` makes that one. Files are
    copied where no link can be made (another file system, links refused).
    """
    shutil.copytree(
        src,
        dest,
        ignore=shutil.ignore_patterns(*IGNORED_PARTS),
        copy_function=link_or_copy,
        dirs_exist_ok=True,
    )


def link_or_copy(src: str, dest: str) -> str:
    """Hard-link the file ``src`` at ``dest`` (replacing it), or copy it where no link can be made."""
    if not os.path.islink(src):
        temp = f"{dest}.{uuid.uuid4().hex}.link"
        try:
            os.link(src, temp, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in LINK_FALLBACK_ERRNOS:
                raise
        else:
            os.replace(temp, dest)
            return dest
    return str(shutil.copy2(src, dest))


def write_source(folder: Path, files: Mapping[str, str], changed: Iterable[str]) -> None:
    """Write the changed files of ``files`` into ``folder``.

    Each file is written beside its target and renamed over it, never written in place: the
    old file may be a hard link another node's record shares (:func:`share_source`).
    """
    for rel in changed:
        target = Path(folder) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            temp.write_text(files[rel])
            if target.exists():
                shutil.copymode(target, temp)  # an edited script stays executable
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)


def check_path(rel: str, editable: Sequence[str]) -> str:
    """Normalise a relative path and check it lies inside the edit boundary."""
    posix = PurePosixPath(rel.replace(os.sep, "/"))
    if posix.is_absolute() or ".." in posix.parts or not posix.parts:
        raise EditError(f"Edit refused: '{rel}' is not a path inside the candidate folder.")
    norm = posix.as_posix()
    if IGNORED_PARTS.intersection(posix.parts):
        raise EditError(f"Edit refused: '{rel}' is inside a folder rlab does not track.")
    if not any(fnmatch.fnmatch(norm, pattern) for pattern in editable):
        raise EditError(
            f"Edit refused: '{norm}' is outside the files this task allows to change "
            f"({', '.join(editable)})."
        )
    return norm


def _closest_text(text: str, anchor: str) -> str:
    """The window of ``text`` most similar to ``anchor``, for an error message."""
    lines = text.splitlines()
    width = max(1, len(anchor.splitlines()))
    if not lines:
        return "(the file is empty)"
    best_ratio, best_start = -1.0, 0
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(anchor)
    for start in range(0, max(1, len(lines) - width + 1)):
        matcher.set_seq1("\n".join(lines[start : start + width]))
        ratio = matcher.quick_ratio()
        if ratio > best_ratio:
            exact = matcher.ratio()
            if exact > best_ratio:
                best_ratio, best_start = exact, start
    window = "\n".join(lines[best_start : best_start + width])
    return f"lines {best_start + 1}-{best_start + width} ({best_ratio:.0%} similar):\n{window}"


def apply_edit(files: SourceFiles, edit: Edit, editable: Sequence[str]) -> SourceFiles:
    """Return ``files`` with one edit applied; raise :class:`EditError` when it cannot apply."""
    rel = check_path(edit.file, editable)
    result = dict(files)
    if rel not in files:
        if edit.anchor == "":
            result[rel] = edit.replacement
            return result
        known = ", ".join(sorted(files)) or "none"
        raise EditError(f"Edit refused: file '{rel}' does not exist (files: {known}).")
    text = files[rel]
    if edit.anchor == "":
        raise EditError(
            f"Edit refused: empty anchor for existing file '{rel}'; quote the text to replace."
        )
    count = text.count(edit.anchor)
    if count == 0:
        raise EditError(
            f"Edit refused: the anchor does not occur in '{rel}'. Closest text, "
            f"{_closest_text(text, edit.anchor)}"
        )
    if count > 1:
        line_numbers, start = [], 0
        while (pos := text.find(edit.anchor, start)) != -1:
            line_numbers.append(text.count("\n", 0, pos) + 1)
            start = pos + 1
        raise EditError(
            f"Edit refused: the anchor occurs {count} times in '{rel}' (lines "
            f"{', '.join(map(str, line_numbers))}); include more surrounding text so it is unique."
        )
    result[rel] = text.replace(edit.anchor, edit.replacement, 1)
    return result


def apply_edits(files: SourceFiles, edits: Sequence[Edit], editable: Sequence[str]) -> SourceFiles:
    """Apply edits in order; each sees the result of the ones before it."""
    for index, edit in enumerate(edits, start=1):
        try:
            files = apply_edit(files, edit, editable)
        except EditError as exc:
            if len(edits) > 1:
                raise EditError(f"Edit {index} of {len(edits)}: {exc}") from None
            raise
    return files


def apply_rewrite(
    files: SourceFiles, rewrites: Mapping[str, str], editable: Sequence[str]
) -> SourceFiles:
    """Apply whole-file rewrites, enforcing the same boundary as anchored edits."""
    result = dict(files)
    for rel, content in rewrites.items():
        norm = check_path(rel, editable)
        result[norm] = content
    return result


def changed_files(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Relative paths whose content differs (or that exist on one side only)."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def check_boundary(
    before: Mapping[str, str], after: Mapping[str, str], editable: Sequence[str]
) -> list[str]:
    """Return the changed files, refusing any change outside the editable patterns."""
    changed = changed_files(before, after)
    for rel in changed:
        check_path(rel, editable)
    return changed


def unified_diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A git-style unified diff of every changed file, ``a/`` = parent, ``b/`` = child."""
    chunks: list[str] = []
    for rel in changed_files(before, after):
        old, new = before.get(rel), after.get(rel)
        chunks.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile="/dev/null" if old is None else f"a/{rel}",
                tofile="/dev/null" if new is None else f"b/{rel}",
            )
        )
        if chunks and not chunks[-1].endswith("\n"):
            chunks[-1] += "\n\\ No newline at end of file\n"
    return "".join(chunks)
