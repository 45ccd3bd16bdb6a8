"""What an agent is told of earlier runs: the knowledge digest for one task and parent.

:func:`relevant_knowledge` reads the lessons of similar tasks (the same family, or the same
task type and metric) and the curated pages of the task's family, and ranks them the way the
issue asks: similar tasks first; moves whose gain held up (verdict ``better`` on more than one
run) above one-off gains; failures and moves that hurt as warnings. The digest keeps only what
fits its size budget when rendered, and never carries a test-side number: lessons hold the
val-test gap of a chosen node after ``rlab final``, and it is left out here on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import Field

from rlab_core.knowledge.records import Lesson, TaskFingerprint
from rlab_core.knowledge.store import KnowledgeStore
from rlab_core.records import Record

#: Lessons of tasks less alike than this are left out (a same-family task scores 0.4,
#: another family with the same task type and metric 0.4 too).
MIN_SIMILARITY = 0.4
#: A repair's move id ends with this (``rlab_core.playbook_rules.FIX_SUFFIX``).
_FIX_SUFFIX = ":fix"
#: Entries considered per section before the size budget decides (keeps ranking cheap).
_SECTION_CAP = 12
_PAGE_LIMIT = 4
_PAGE_EXCERPT = 360
_TEXT_LIMIT = 160


class MoveStat(Record):
    """How one move fared on similar tasks: tries with a measured gain, how many held."""

    tries: int = 0
    held: int = 0
    worse: int = 0
    mean_gain: float | None = None
    #: How alike the most similar task it was tried on is, in [0, 1].
    similarity: float = 0.0


class DigestEntry(Record):
    """One move (or free-form hypothesis) as earlier runs on similar tasks saw it."""

    title: str
    move_id: str | None = None
    hypothesis: str = ""
    tasks: list[str] = Field(default_factory=list)
    runs: int = 0
    tries: int = 0
    held: int = 0
    worse: int = 0
    mean_gain: float | None = None
    failures: int = 0
    cause: str | None = None
    similarity: float = 0.0


class PageExcerpt(Record):
    """A curated page, cut to a few lines for the agent."""

    id: str
    title: str
    text: str
    sources: list[str] = Field(default_factory=list)


class KnowledgeDigest(Record):
    """The knowledge one agent call sees, within ``budget_chars`` once rendered.

    ``move_stats`` covers every move tried on a similar task (not cut by the budget): the
    playbook agent orders its moves by it.
    """

    task: str
    lessons_held: list[DigestEntry] = Field(default_factory=list)
    one_off: list[DigestEntry] = Field(default_factory=list)
    warnings: list[DigestEntry] = Field(default_factory=list)
    pages: list[PageExcerpt] = Field(default_factory=list)
    move_stats: dict[str, MoveStat] = Field(default_factory=dict)
    #: Lessons of similar tasks the digest was drawn from.
    lessons_seen: int = 0
    budget_chars: int = 4000
    #: The knowledge base file, and the run folder the call belongs to: where a tool that
    #: queries further (``rlab mcp``) looks. Never rendered.
    store_path: str | None = None
    run_folder: str | None = None

    @property
    def empty(self) -> bool:
        """True when there is nothing to tell."""
        return not (self.lessons_held or self.one_off or self.warnings or self.pages)

    def render(self) -> str:
        """The compact "What worked before" markdown section (empty text when empty)."""
        if self.empty:
            return ""
        lines = [
            "## What worked before",
            f"From {self.lessons_seen} earlier node(s) on tasks like this one (validation "
            "gains over the parent; similar tasks first).",
        ]
        if self.lessons_held:
            lines += ["", "Held up on more than one run:"]
            lines += [_entry_line(e) for e in self.lessons_held]
        if self.one_off:
            lines += ["", "Gained once (not confirmed yet):"]
            lines += [_entry_line(e) for e in self.one_off]
        if self.warnings:
            lines += ["", "Warnings (failed or hurt before):"]
            lines += [_warning_line(e) for e in self.warnings]
        if self.pages:
            lines += ["", "Notes for this task family:"]
            lines += [f"- **{p.title}** ({p.id}): {p.text}" for p in self.pages]
        return "\n".join(lines)


def _gain_text(entry: DigestEntry) -> str:
    return "gain n/a" if entry.mean_gain is None else f"mean gain {entry.mean_gain:+.4g}"


def _where(entry: DigestEntry) -> str:
    shown = ", ".join(entry.tasks[:3]) + (" ..." if len(entry.tasks) > 3 else "")
    return f"on {shown}" if shown else ""


def _entry_line(entry: DigestEntry) -> str:
    head = f"`{entry.move_id}`" if entry.move_id else f'"{entry.title}"'
    facts = f"{_gain_text(entry)}, held {entry.held}/{entry.tries} tries, {_where(entry)}"
    hypothesis = f" — {entry.hypothesis}" if entry.hypothesis and entry.move_id else ""
    return f"- {head} ({facts}){hypothesis}"


def _warning_line(entry: DigestEntry) -> str:
    head = f"`{entry.move_id}`" if entry.move_id else f'"{entry.title}"'
    parts = []
    if entry.failures:
        parts.append(f"failed {entry.failures}x" + (f": {entry.cause}" if entry.cause else ""))
    if entry.worse:
        parts.append(f"worse {entry.worse}/{entry.tries} tries ({_gain_text(entry)})")
    return f"- {head} {'; '.join(parts)} {_where(entry)}".rstrip()


def _short(text: str, limit: int = _TEXT_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def base_move(move_id: str | None) -> str | None:
    """The move a node applied: its id without a repair's suffix."""
    return move_id.removesuffix(_FIX_SUFFIX) if move_id else move_id


def _key(lesson: Lesson) -> str:
    move = base_move(lesson.move_id)
    if move:
        return f"move:{move}"
    first = lesson.hypothesis.strip().splitlines()[0] if lesson.hypothesis.strip() else ""
    return "text:" + " ".join(first.lower().split())[:120]


@dataclass
class _Group:
    """The lessons of one move across similar tasks, while they are counted."""

    move_id: str | None
    title: str
    hypothesis: str = ""
    similarity: float = 0.0
    tasks: dict[str, float] = field(default_factory=dict)
    runs: set[str] = field(default_factory=set)
    held_runs: set[str] = field(default_factory=set)
    gains: list[float] = field(default_factory=list)
    held: int = 0
    worse: int = 0
    #: Tries with a verdict (a benchmark without a bootstrap gives none).
    judged: int = 0
    failures: int = 0
    cause: str | None = None

    @property
    def tries(self) -> int:
        return len(self.gains)

    @property
    def mean_gain(self) -> float | None:
        return sum(self.gains) / len(self.gains) if self.gains else None

    def add(self, lesson: Lesson, similarity: float) -> None:
        self.similarity = max(self.similarity, similarity)
        task = lesson.fingerprint.task
        self.tasks[task] = max(self.tasks.get(task, 0.0), similarity)
        self.runs.add(lesson.run_id)
        if lesson.hypothesis and not self.hypothesis:
            self.hypothesis = _short(lesson.hypothesis)
        if lesson.status != "evaluated":
            self.failures += 1
            self.cause = _short(lesson.failure_cause or lesson.status)
            return
        if lesson.gain is None:
            return  # a seed or a repair of a failed node: no parent score to gain over
        self.gains.append(lesson.gain)
        self.judged += lesson.verdict is not None
        if lesson.verdict == "better":
            self.held += 1
            self.held_runs.add(lesson.run_id)
        elif lesson.verdict == "worse" or (lesson.verdict is None and lesson.gain < 0):
            self.worse += 1

    def entry(self) -> DigestEntry:
        tasks = sorted(self.tasks, key=lambda t: (-self.tasks[t], t))
        mean = self.mean_gain
        return DigestEntry(
            title=self.title,
            move_id=self.move_id,
            hypothesis=self.hypothesis,
            tasks=tasks,
            runs=len(self.runs),
            tries=self.tries,
            held=self.held,
            worse=self.worse,
            mean_gain=None if mean is None else round(mean, 6),
            failures=self.failures,
            cause=self.cause,
            similarity=round(self.similarity, 6),
        )


def _useful(lesson: Lesson) -> bool:
    """Lessons an agent can learn from: not seeds, not an agent's own failure to answer."""
    if lesson.node_kind == "seed":
        return False
    return not (lesson.failure_cause or "").startswith("agent")


def _groups(lessons: Iterable[tuple[Lesson, float]]) -> list[_Group]:
    groups: dict[str, _Group] = {}
    for lesson, similarity in lessons:
        key = _key(lesson)
        if key not in groups:
            move = base_move(lesson.move_id)
            first = lesson.hypothesis.strip().splitlines()[0] if lesson.hypothesis.strip() else ""
            title = move or first or "(no hypothesis)"
            groups[key] = _Group(move_id=move, title=_short(title, 80))
        groups[key].add(lesson, similarity)
    return list(groups.values())


def _rank(group: _Group) -> tuple[float, ...]:
    # similar tasks first (to one decimal: siblings tie), then the stronger evidence
    return (-round(group.similarity, 1), -group.held, -(group.mean_gain or 0.0))


def _page_query(fingerprint: TaskFingerprint, parent_hypothesis: str) -> str:
    words = [parent_hypothesis, fingerprint.task_type, fingerprint.metric, fingerprint.keys]
    words.append(fingerprint.task.partition(":")[2].replace("/", " ").replace("-", " "))
    return " ".join(w for w in words if w)


def _pages(
    store: KnowledgeStore, fingerprint: TaskFingerprint, parent_hypothesis: str
) -> list[PageExcerpt]:
    hits = store.search(
        _page_query(fingerprint, parent_hypothesis),
        family=fingerprint.family,
        kind="page",
        limit=_PAGE_LIMIT,
    )
    pages = [hit.page for hit in hits if hit.page is not None]
    if not pages:
        pages = store.pages(family=fingerprint.family)[:2]
    return [
        PageExcerpt(id=p.id, title=p.title, text=_short(p.body, _PAGE_EXCERPT), sources=p.sources)
        for p in pages
    ]


def similar_lessons(
    store: KnowledgeStore, fingerprint: TaskFingerprint, *, exclude_run: str | None = None
) -> list[tuple[Lesson, float]]:
    """Lessons of tasks at least :data:`MIN_SIMILARITY` alike, each with its similarity."""
    found = []
    alike: dict[str, float] = {}
    for lesson in store.lessons():
        if lesson.run_id == exclude_run or not _useful(lesson):
            continue
        task = lesson.fingerprint.task
        if task not in alike:
            alike[task] = fingerprint.similarity(lesson.fingerprint)
        if alike[task] >= MIN_SIMILARITY:
            found.append((lesson, alike[task]))
    return found


def _fit(digest: KnowledgeDigest, sections: dict[str, list[object]]) -> KnowledgeDigest:
    """The digest with as many entries as fit its budget: each section's best ones first."""
    order: list[tuple[str, object]] = []
    heads = {"lessons_held": 3, "warnings": 2, "one_off": 2, "pages": 2}
    for name, count in heads.items():
        order += [(name, item) for item in sections[name][:count]]
    for name, count in heads.items():
        order += [(name, item) for item in sections[name][count:]]
    chosen: dict[str, list[object]] = {name: [] for name in heads}
    for name, item in order:
        chosen[name].append(item)
        trial = digest.model_copy(update=chosen)
        if len(trial.render()) > digest.budget_chars:
            chosen[name].pop()
    return digest.model_copy(update=chosen)


def relevant_knowledge(
    store: KnowledgeStore,
    fingerprint: TaskFingerprint,
    *,
    parent_hypothesis: str = "",
    budget_chars: int = 4000,
    exclude_run: str | None = None,
    lessons: list[tuple[Lesson, float]] | None = None,
) -> KnowledgeDigest:
    """The knowledge for one agent call on ``fingerprint``'s task, from ``parent_hypothesis``.

    ``exclude_run`` leaves out the current run's own lessons (the agent sees its tree);
    ``lessons`` (from :func:`similar_lessons`) saves reading the store again.
    """
    if lessons is None:
        lessons = similar_lessons(store, fingerprint, exclude_run=exclude_run)
    groups = sorted(_groups(lessons), key=_rank)
    stats = {
        g.move_id: MoveStat(
            tries=g.tries,
            held=g.held,
            worse=g.worse,
            mean_gain=None if g.mean_gain is None else round(g.mean_gain, 6),
            similarity=round(g.similarity, 6),
        )
        for g in groups
        if g.move_id and g.tries
    }
    held, one_off, warnings = [], [], []
    for group in groups:
        gain = group.mean_gain
        if group.held and len(group.held_runs) > 1 and gain is not None and gain > 0:
            held.append(group.entry())
        elif gain is not None and gain > 0 and (group.held or not group.judged):
            one_off.append(group.entry())
        elif group.failures or (group.worse and not group.held):
            warnings.append(group.entry())
    digest = KnowledgeDigest(
        task=fingerprint.task,
        move_stats=stats,
        lessons_seen=len(lessons),
        budget_chars=budget_chars,
        store_path=str(store.path),
    )
    sections: dict[str, list[object]] = {
        "lessons_held": list(held[:_SECTION_CAP]),
        "one_off": list(one_off[:_SECTION_CAP]),
        "warnings": list(warnings[:_SECTION_CAP]),
        "pages": list(_pages(store, fingerprint, parent_hypothesis)),
    }
    return _fit(digest, sections)
