"""Memory across runs: lessons every run writes back and curated pages plugins ship.

:mod:`~rlab_core.knowledge.records` holds the records, :mod:`~rlab_core.knowledge.store`
the SQLite file with full-text search, :mod:`~rlab_core.knowledge.harvest` turns a run
folder into lessons.
"""

from __future__ import annotations

from rlab_core.knowledge.records import KnowledgeHit, KnowledgePage, Lesson, TaskFingerprint
from rlab_core.knowledge.store import KnowledgeBaseError, KnowledgeStore, knowledge_path

__all__ = [
    "KnowledgeBaseError",
    "KnowledgeHit",
    "KnowledgePage",
    "KnowledgeStore",
    "Lesson",
    "TaskFingerprint",
    "knowledge_path",
]
