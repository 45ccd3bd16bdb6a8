"""The knowledge one run reads: the store opened once, the plugins' pages synced into it.

The runner calls :func:`open_run_knowledge` when a run starts or resumes; the loop asks the
returned :class:`RunKnowledge` for a digest each time it builds an agent's context. With
``knowledge.enabled`` false (``--no-kg``) there is none, and agents see nothing of earlier
runs. Reading the store goes wrong only as a warning mid-run: memory is a help, never a
reason to stop a search.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rlab_core.errors import RlabUserError
from rlab_core.knowledge.harvest import fingerprint_from_run
from rlab_core.knowledge.records import KnowledgePage, Lesson, TaskFingerprint
from rlab_core.knowledge.retrieve import KnowledgeDigest, relevant_knowledge, similar_lessons
from rlab_core.knowledge.store import KnowledgeStore

if TYPE_CHECKING:
    from rlab_core.config import KnowledgeSettings
    from rlab_core.plugins import PluginHost
    from rlab_core.run_folder import RunFolder

log = logging.getLogger(__name__)


def store_for(settings: KnowledgeSettings) -> KnowledgeStore:
    """The knowledge base a run uses: ``knowledge.path``, else the default location."""
    return KnowledgeStore(settings.path)


def plugin_pages(host: PluginHost) -> list[KnowledgePage]:
    """Every plugin's curated pages; a plugin whose hook fails is logged and skipped."""
    pages: list[KnowledgePage] = []
    for impl in host.manager.hook.rlab_knowledge_pages.get_hookimpls():
        try:
            found = list(impl.function() or [])
        except Exception:  # one plugin's broken pages must not stop a run
            log.exception("plugin %s: its knowledge pages could not be read", impl.plugin_name)
            continue
        bad = [p for p in found if not isinstance(p, KnowledgePage)]
        if bad:
            log.warning(
                "plugin %s: rlab_knowledge_pages returned %s, not KnowledgePage; skipped",
                impl.plugin_name,
                type(bad[0]).__name__,
            )
            continue
        pages += found
    return pages


class RunKnowledge:
    """Digests for one run's agent calls, from lessons read once when first asked."""

    def __init__(
        self,
        store: KnowledgeStore,
        fingerprint: TaskFingerprint,
        *,
        run_id: str,
        budget_chars: int = 4000,
        run_folder: str | None = None,
    ) -> None:
        self.store = store
        self.run_folder = run_folder
        self.fingerprint = fingerprint
        self.run_id = run_id
        self.budget_chars = budget_chars
        self._lock = threading.Lock()
        self._lessons: list[tuple[Lesson, float]] | None = None
        self._digests: dict[str, KnowledgeDigest] = {}

    def lessons(self) -> list[tuple[Lesson, float]]:
        """Lessons of similar tasks from other runs, with their similarity (read once)."""
        with self._lock:
            if self._lessons is None:
                self._lessons = similar_lessons(
                    self.store, self.fingerprint, exclude_run=self.run_id
                )
            return self._lessons

    def digest(self, parent_hypothesis: str = "") -> KnowledgeDigest | None:
        """The digest for a call whose parent made ``parent_hypothesis``; None if unreadable."""
        with self._lock:
            if parent_hypothesis in self._digests:
                return self._digests[parent_hypothesis]
        try:
            digest = relevant_knowledge(
                self.store,
                self.fingerprint,
                parent_hypothesis=parent_hypothesis,
                budget_chars=self.budget_chars,
                exclude_run=self.run_id,
                lessons=self.lessons(),
            ).model_copy(update={"run_folder": self.run_folder})
        except RlabUserError as exc:
            log.warning("the knowledge base could not be read; agents go without it: %s", exc)
            return None
        with self._lock:
            self._digests[parent_hypothesis] = digest
        return digest


def open_run_knowledge(
    settings: KnowledgeSettings,
    fingerprint: TaskFingerprint,
    *,
    run_id: str,
    pages: Iterable[KnowledgePage] = (),
    run_folder: str | None = None,
) -> RunKnowledge | None:
    """The run's knowledge, its plugins' ``pages`` synced first; None when retrieval is off.

    Pages are synced whenever the run may touch the base (retrieval or recording on), so
    ``rlab knowledge search`` finds them after any run. An unreadable base is a user error
    here, before the search starts.
    """
    if not (settings.enabled or settings.record):
        return None
    store = store_for(settings)
    pages = list(pages)
    if pages:
        store.add_pages(pages)
    if not settings.enabled:
        return None
    knowledge = RunKnowledge(
        store,
        fingerprint,
        run_id=run_id,
        budget_chars=settings.budget_chars,
        run_folder=run_folder,
    )
    knowledge.lessons()  # read now: a broken base fails the start, not a mid-run call
    return knowledge


def knowledge_for_run(
    host: PluginHost, settings: KnowledgeSettings, run: RunFolder
) -> RunKnowledge | None:
    """:func:`open_run_knowledge` for a run folder whose ``run.json`` is written."""
    if not (settings.enabled or settings.record):
        return None
    return open_run_knowledge(
        settings,
        fingerprint_from_run(run.read_record()),
        run_id=run.run_id,
        pages=plugin_pages(host),
        run_folder=str(run.root),
    )
