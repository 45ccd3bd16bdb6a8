"""The knowledge base on disk: one SQLite file with full-text search (FTS5).

Lessons are keyed by ``(run_id, node_id)`` and pages by their slug, so recording again
(a resumed run, a re-imported export) updates in place and never duplicates. The file runs
in WAL mode with a busy timeout and every write takes the write lock up front
(``BEGIN IMMEDIATE``), so several runs on one machine can write at once without losing a
lesson. Each call opens its own short connection: a store object is safe to share between
threads and cheap to keep.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlab_core.errors import RlabUserError
from rlab_core.knowledge.records import KnowledgeHit, KnowledgePage, Lesson

#: Bumped when the tables change shape; an older file is upgraded, a newer one refused.
SCHEMA_VERSION = 1
#: How long a writer waits for another process's write to finish, milliseconds.
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lessons (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    task TEXT NOT NULL,
    family TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, node_id)
);
CREATE INDEX IF NOT EXISTS lessons_task ON lessons (task);
CREATE INDEX IF NOT EXISTS lessons_family ON lessons (family);
CREATE TABLE IF NOT EXISTS pages (
    id TEXT PRIMARY KEY,
    family TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5 (
    kind UNINDEXED, key UNINDEXED, family UNINDEXED, title, body, code,
    tokenize = 'porter unicode61'
);
"""


class KnowledgeBaseError(RlabUserError):
    """The knowledge base file cannot be opened, read or written, or an import is malformed."""


def knowledge_path() -> Path:
    """Where the knowledge base lives: ``$RLAB_KNOWLEDGE``, else the user's data folder.

    The data folder is ``$XDG_DATA_HOME/rlab/knowledge.sqlite``, by default
    ``~/.local/share/rlab/knowledge.sqlite``. Test suites point ``$RLAB_KNOWLEDGE`` at a
    file of each test's own (``rlab_core.testing.fixtures.isolated_knowledge_base``).
    """
    explicit = os.environ.get("RLAB_KNOWLEDGE")
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or "~/.local/share"
    return Path(data_home).expanduser() / "rlab" / "knowledge.sqlite"


def _lesson_key(run_id: str, node_id: str) -> str:
    return f"{run_id}/{node_id}"


def _lesson_text(lesson: Lesson) -> tuple[str, str, str]:
    """(title, body, code) of a lesson as the full-text index sees them; never a test number."""
    fp = lesson.fingerprint
    body = [lesson.hypothesis, f"task {fp.task}", fp.task_type, fp.metric, fp.keys]
    if lesson.move_id:
        body.append(f"move {lesson.move_id}")
    if lesson.verdict:
        body.append(f"verdict {lesson.verdict}")
    if lesson.failure_cause:
        body.append(f"failed {lesson.failure_cause}")
    if lesson.repair_of:
        body.append(f"repair of {lesson.repair_of}")
    return lesson.title, "\n".join(part for part in body if part), lesson.diff


def _fts_query(text: str) -> str:
    """Free text as an FTS5 query: every word quoted (no operator injection), any may match."""
    words = re.findall(r"\w+", text.lower())
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


class KnowledgeStore:
    """Lessons from runs and curated pages in one SQLite file, searchable by text."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else knowledge_path()
        self._ready = False

    # -- connections ---------------------------------------------------------------------

    def _fail(self, exc: BaseException, doing: str) -> KnowledgeBaseError:
        if "locked" in str(exc) or "busy" in str(exc):
            return KnowledgeBaseError(
                f"The knowledge base {self.path} stayed locked by another process for "
                f"{BUSY_TIMEOUT_MS // 1000} s; try again when the other rlab command is done."
            )
        return KnowledgeBaseError(
            f"The knowledge base {self.path} cannot be {doing} ({exc}); move the file aside "
            "or point RLAB_KNOWLEDGE at another file."
        )

    @contextmanager
    def _connect(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise self._fail(exc, "opened") from None
        try:
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                if not self._ready:
                    self._prepare(conn)
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.DatabaseError as exc:
                raise self._fail(exc, "read") from None
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):  # a failed COMMIT may have ended it
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    raise self._fail(exc, "written" if write else "read") from None
                raise
        finally:
            conn.close()

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the tables, once per store object (both are idempotent)."""
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"it was written by a newer rlab (schema {row[0]} > {SCHEMA_VERSION})"
                )
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._ready = True

    # -- writing -------------------------------------------------------------------------

    def add_lessons(self, lessons: Iterable[Lesson]) -> int:
        """Insert or update lessons by ``(run_id, node_id)``; returns how many were written.

        A val-test gap already recorded (after ``rlab final``) survives a re-recording that
        does not carry one.
        """
        count = 0
        with self._connect(write=True) as conn:
            for lesson in lessons:
                self._put_lesson(conn, lesson)
                count += 1
        return count

    def _put_lesson(self, conn: sqlite3.Connection, lesson: Lesson) -> None:
        if lesson.val_test_gap is None:
            row = conn.execute(
                "SELECT data FROM lessons WHERE run_id = ? AND node_id = ?",
                (lesson.run_id, lesson.node_id),
            ).fetchone()
            if row is not None:
                kept = json.loads(row[0]).get("val_test_gap")
                if kept is not None:
                    lesson = lesson.model_copy(update={"val_test_gap": kept})
        conn.execute(
            "INSERT INTO lessons (run_id, node_id, task, family, recorded_at, data) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, node_id) DO UPDATE SET "
            "task = excluded.task, family = excluded.family, "
            "recorded_at = excluded.recorded_at, data = excluded.data",
            (
                lesson.run_id,
                lesson.node_id,
                lesson.fingerprint.task,
                lesson.fingerprint.family,
                lesson.recorded_at,
                lesson.model_dump_json(),
            ),
        )
        key = _lesson_key(lesson.run_id, lesson.node_id)
        conn.execute("DELETE FROM search_index WHERE kind = 'lesson' AND key = ?", (key,))
        conn.execute(
            "INSERT INTO search_index (kind, key, family, title, body, code) "
            "VALUES ('lesson', ?, ?, ?, ?, ?)",
            (key, lesson.fingerprint.family, *_lesson_text(lesson)),
        )

    def add_pages(self, pages: Iterable[KnowledgePage]) -> int:
        """Insert or update curated pages by id; returns how many were written."""
        count = 0
        with self._connect(write=True) as conn:
            for page in pages:
                self._put_page(conn, page)
                count += 1
        return count

    def _put_page(self, conn: sqlite3.Connection, page: KnowledgePage) -> None:
        conn.execute(
            "INSERT INTO pages (id, family, data) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE "
            "SET family = excluded.family, data = excluded.data",
            (page.id, page.family, page.model_dump_json()),
        )
        conn.execute("DELETE FROM search_index WHERE kind = 'page' AND key = ?", (page.id,))
        conn.execute(
            "INSERT INTO search_index (kind, key, family, title, body, code) "
            "VALUES ('page', ?, ?, ?, ?, ?)",
            (page.id, page.family, page.title, f"{page.body}\n{' '.join(page.tags)}", ""),
        )

    def set_val_test_gap(self, run_id: str, node_id: str, gap: float) -> bool:
        """Record the val-test gap of a run's chosen node; False when that lesson is unknown."""
        with self._connect(write=True) as conn:
            row = conn.execute(
                "SELECT data FROM lessons WHERE run_id = ? AND node_id = ?", (run_id, node_id)
            ).fetchone()
            if row is None:
                return False
            data = json.loads(row[0])
            data["val_test_gap"] = gap
            conn.execute(
                "UPDATE lessons SET data = ? WHERE run_id = ? AND node_id = ?",
                (json.dumps(data), run_id, node_id),
            )
        return True

    def forget_run(self, run_id: str) -> int:
        """Delete every lesson of one run; returns how many were deleted."""
        with self._connect(write=True) as conn:
            conn.execute(
                "DELETE FROM search_index WHERE kind = 'lesson' AND key IN "
                "(SELECT run_id || '/' || node_id FROM lessons WHERE run_id = ?)",
                (run_id,),
            )
            return conn.execute("DELETE FROM lessons WHERE run_id = ?", (run_id,)).rowcount

    # -- reading -------------------------------------------------------------------------

    def search(
        self,
        text: str,
        *,
        family: str | None = None,
        kind: str | None = None,
        limit: int = 20,
    ) -> list[KnowledgeHit]:
        """Lessons and pages that match ``text`` (any of its words), best first (bm25).

        ``family`` keeps one task family, ``kind`` only ``"lesson"`` or ``"page"``.
        """
        query = _fts_query(text)
        if not query or limit <= 0:
            return []
        where, params = ["search_index MATCH ?"], [query]
        if family is not None:
            where.append("family = ?")
            params.append(family)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        sql = (
            "SELECT kind, key, title, snippet(search_index, 4, '', '', '…', 32), "
            "bm25(search_index, 0, 0, 0, 4.0, 2.0, 1.0) AS rank FROM search_index "
            f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?"
        )
        hits: list[KnowledgeHit] = []
        with self._connect() as conn:
            for row_kind, key, title, excerpt, rank in conn.execute(sql, [*params, limit]):
                found = self._load(conn, row_kind, key)
                if found is None:
                    continue
                hits.append(
                    KnowledgeHit(
                        kind=row_kind,
                        title=title,
                        text=" ".join(excerpt.split()),
                        score=-rank,
                        lesson=found if isinstance(found, Lesson) else None,
                        page=found if isinstance(found, KnowledgePage) else None,
                    )
                )
        return hits

    @staticmethod
    def _load(conn: sqlite3.Connection, kind: str, key: str) -> Lesson | KnowledgePage | None:
        if kind == "page":
            row = conn.execute("SELECT data FROM pages WHERE id = ?", (key,)).fetchone()
            return None if row is None else KnowledgePage.model_validate_json(row[0])
        run_id, _, node_id = key.rpartition("/")
        row = conn.execute(
            "SELECT data FROM lessons WHERE run_id = ? AND node_id = ?", (run_id, node_id)
        ).fetchone()
        return None if row is None else Lesson.model_validate_json(row[0])

    def lessons(
        self, *, task: str | None = None, family: str | None = None, run_id: str | None = None
    ) -> list[Lesson]:
        """Lessons in the order they were recorded, optionally of one task, family or run."""
        where, params = [], []
        for column, value in (("task", task), ("family", family), ("run_id", run_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT data FROM lessons {clause} ORDER BY recorded_at, rowid", params
            ).fetchall()
        return [Lesson.model_validate_json(data) for (data,) in rows]

    def pages(self, *, family: str | None = None) -> list[KnowledgePage]:
        """Curated pages, by id, optionally of one family."""
        clause, params = ("WHERE family = ?", [family]) if family is not None else ("", [])
        with self._connect() as conn:
            rows = conn.execute(f"SELECT data FROM pages {clause} ORDER BY id", params).fetchall()
        return [KnowledgePage.model_validate_json(data) for (data,) in rows]

    def tasks(self) -> list[str]:
        """Every task with lessons, sorted."""
        with self._connect() as conn:
            rows = conn.execute("SELECT DISTINCT task FROM lessons ORDER BY task").fetchall()
        return [task for (task,) in rows]

    def stats(self) -> dict[str, Any]:
        """Counts: lessons, runs, tasks, pages, and lessons and pages per family."""
        with self._connect() as conn:
            one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
            families: dict[str, dict[str, int]] = {}
            for family, count in conn.execute(
                "SELECT family, COUNT(*) FROM lessons GROUP BY family"
            ):
                families.setdefault(family, {"lessons": 0, "pages": 0})["lessons"] = count
            for family, count in conn.execute("SELECT family, COUNT(*) FROM pages GROUP BY family"):
                families.setdefault(family, {"lessons": 0, "pages": 0})["pages"] = count
            return {
                "path": str(self.path),
                "lessons": one("SELECT COUNT(*) FROM lessons"),
                "runs": one("SELECT COUNT(DISTINCT run_id) FROM lessons"),
                "tasks": one("SELECT COUNT(DISTINCT task) FROM lessons"),
                "pages": one("SELECT COUNT(*) FROM pages"),
                "families": dict(sorted(families.items())),
            }

    # -- sharing -------------------------------------------------------------------------

    def export_jsonl(self, path: Path | str) -> int:
        """Write every lesson and page as JSON lines (``{"kind": ..., "lesson"|"page": ...}``)."""
        lessons, pages = self.lessons(), self.pages()
        target = Path(path).expanduser()
        try:
            with target.open("w", encoding="utf-8") as out:
                for lesson in lessons:
                    out.write(json.dumps({"kind": "lesson", "lesson": lesson.model_dump()}) + "\n")
                for page in pages:
                    out.write(json.dumps({"kind": "page", "page": page.model_dump()}) + "\n")
        except OSError as exc:
            raise KnowledgeBaseError(
                f"Cannot write the export {target} ({exc.strerror or exc}); choose a writable path."
            ) from None
        return len(lessons) + len(pages)

    def import_jsonl(self, path: Path | str) -> int:
        """Read an export back (every line checked before anything is written); idempotent.

        Returns how many lessons and pages the file held.
        """
        source = Path(path).expanduser()
        try:
            lines = source.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise KnowledgeBaseError(
                f"Cannot read {source} ({reason}); give the path of a file written by "
                "`rlab knowledge export`."
            ) from None
        records: list[Lesson | KnowledgePage] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if entry.get("kind") == "lesson":
                    records.append(Lesson.model_validate(entry["lesson"]))
                elif entry.get("kind") == "page":
                    records.append(KnowledgePage.model_validate(entry["page"]))
                else:
                    raise ValueError("kind must be 'lesson' or 'page'")
            except (ValueError, KeyError, AttributeError, ValidationError) as exc:
                reason = str(exc).splitlines()[0]
                raise KnowledgeBaseError(
                    f"Line {number} of {source} is not a knowledge record ({reason}); import "
                    "a file written by `rlab knowledge export`."
                ) from None
        with self._connect(write=True) as conn:
            for record in records:
                if isinstance(record, Lesson):
                    self._put_lesson(conn, record)
                else:
                    self._put_page(conn, record)
        return len(records)
