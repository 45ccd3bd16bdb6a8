"""Lessons from a run folder, and writing them back to the knowledge base.

Everything here reads the journal (validation side) and ``run.json`` only: no test number
enters a lesson from a run. The one test-side number the base ever holds is the val-test
gap of the chosen node, written by :func:`record_final` after ``rlab final`` — and it is
never shown to an agent.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlab_core.errors import RlabUserError
from rlab_core.journal import replay
from rlab_core.knowledge.records import DIFF_LIMIT, Lesson, TaskFingerprint
from rlab_core.knowledge.store import KnowledgeStore
from rlab_core.records import PROMOTE, SCREEN_REFERENCE, Node
from rlab_core.run_folder import RunFolder
from rlab_core.tree import Tree

log = logging.getLogger(__name__)

#: The longest failure message a lesson keeps.
CAUSE_LIMIT = 600
_warned = False


def fingerprint_from_run(info: Mapping[str, Any]) -> TaskFingerprint:
    """The task's fingerprint from a run's ``run.json`` (its task, metric and task facts)."""
    task = str(info.get("task", ""))
    benchmark = task.partition(":")[0]
    facts = info.get("task_facts") or {}
    task_type = facts.get("task_type") or facts.get("family") or ""
    keys = facts.get("keys")
    rows = facts.get("rows")
    if not isinstance(keys, str):
        # several tables without stated keys: their names are the structure we know
        tables = (
            [name for name in rows if name not in ("train", "val", "test")]
            if isinstance(rows, dict)
            else []
        )
        keys = f"tables {', '.join(sorted(tables))}" if len(tables) > 1 else ""
    return TaskFingerprint(
        benchmark=benchmark,
        task=task,
        family=benchmark,
        task_type=task_type if isinstance(task_type, str) else "",
        metric=str(info.get("primary_metric", "")),
        higher_is_better=bool(info.get("higher_is_better", True)),
        rows=_count(rows),
        columns=_count(facts.get("columns")),
        keys=keys,
    )


def _count(value: Any) -> int | None:
    """A size from task facts: a number, or a mapping's training rows (else its largest)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        if isinstance(value.get("train"), int):
            return int(value["train"])
        numbers = [v for v in value.values() if isinstance(v, int) and not isinstance(v, bool)]
        return max(numbers) if numbers else None
    return None


def _evaluated_ancestor(tree: Tree, node: Node) -> Node | None:
    parent_id = node.parent_id
    while parent_id is not None and parent_id in tree.nodes:
        parent = tree.nodes[parent_id]
        if parent.evaluated:
            return parent
        parent_id = parent.parent_id
    return None


def lesson_from_node(
    node: Node, tree: Tree, *, run_id: str, fingerprint: TaskFingerprint
) -> Lesson:
    """The lesson of one finished node: its change and how it fared against its parent."""
    verdict = gain = interval = None
    if node.gain is not None:
        gain = node.gain.delta
        if node.gain.verdict != "unmeasured":
            verdict = node.gain.verdict
        if node.gain.low is not None or node.gain.high is not None:
            interval = (node.gain.low, node.gain.high)
    elif node.evaluated and node.score is not None:
        parent = _evaluated_ancestor(tree, node)
        if parent is not None and parent.score is not None:
            sign = 1.0 if node.score.higher_is_better else -1.0
            gain = sign * (node.score.primary - parent.score.primary)
    cause = None
    if node.failure is not None:
        cause = f"{node.failure.stage.value}: {node.failure.message}"[:CAUSE_LIMIT]
    diff = node.diff if len(node.diff) <= DIFF_LIMIT else node.diff[:DIFF_LIMIT] + "\n… (cut)"
    return Lesson(
        run_id=run_id,
        node_id=node.id,
        parent_id=node.parent_id,
        # the node's own time, so recording again writes the very same lesson
        recorded_at=node.finished_at or node.created_at or time.time(),
        fingerprint=fingerprint,
        move_id=node.move_id,
        hypothesis=node.hypothesis,
        diff=diff,
        status=node.status.value,
        node_kind=node.kind.value,
        val_score=node.score.primary if node.evaluated and node.score is not None else None,
        verdict=verdict,
        gain=gain,
        interval=interval,
        failure_cause=cause,
        repair_of=node.repair_of,
    )


def lessons_from_run(run_dir: Path | str) -> list[Lesson]:
    """A lesson per finished node of a run (seeds, improvements, failures, repairs).

    The core's bookkeeping runs teach nothing on their own: a screen's yardstick is left
    out, and a promoted screen's lesson is its promotion's (the full-fidelity evidence)
    under the screened change's move, hypothesis and diff.
    """
    folder = RunFolder.open(run_dir)
    info = folder.read_record()
    fingerprint = fingerprint_from_run(info)
    tree = replay(folder.journal_path).tree
    promoted = {n.parent_id for n in tree if n.move_id == PROMOTE}
    lessons = []
    for node in tree:
        if node.move_id == SCREEN_REFERENCE or node.id in promoted:
            continue
        lesson = lesson_from_node(node, tree, run_id=folder.run_id, fingerprint=fingerprint)
        screened = tree.nodes.get(node.parent_id or "") if node.move_id == PROMOTE else None
        if screened is not None:
            lesson = lesson.model_copy(
                update={
                    "move_id": screened.move_id,
                    "hypothesis": screened.hypothesis,
                    "diff": lesson_from_node(
                        screened, tree, run_id=folder.run_id, fingerprint=fingerprint
                    ).diff,
                }
            )
        lessons.append(lesson)
    return lessons


def record_run(run_dir: Path | str, store: KnowledgeStore) -> int:
    """Write a run's lessons into ``store`` (an upsert: safe to call at every end); the count."""
    return store.add_lessons(lessons_from_run(run_dir))


def record_final(
    run_dir: Path | str, store: KnowledgeStore, report: Mapping[str, Any] | None = None
) -> bool:
    """After ``rlab final``: the run's lessons, and the val-test gap of the chosen node.

    ``report`` is the ``final_report.json`` just written (read from the run folder when
    omitted). Returns False when the report holds no gap (unusable test predictions).
    """
    folder = RunFolder.open(run_dir)
    if report is None:
        try:
            report = json.loads(folder.final_report.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RlabUserError(
                f"Cannot read {folder.final_report} ({exc}); run `rlab final {folder.root}` first."
            ) from None
    record_run(folder.root, store)
    gap = report.get("val_test_gap")
    if gap is None or report.get("node") is None:
        return False
    return store.set_val_test_gap(folder.run_id, str(report["node"]), float(gap))


def run_knowledge_settings(run_dir: Path | str) -> dict[str, Any]:
    """The run's own ``knowledge`` settings from ``run.json`` (``enabled``, ``record``, ``path``).

    Read from the record rather than the live configuration, so a resume, ``rlab final``
    and ``rlab mcp --run`` all honour what the run was started with.
    """
    config = RunFolder(Path(run_dir)).read_record().get("config") or {}
    settings = config.get("knowledge") or {}
    return {
        "enabled": bool(settings.get("enabled", True)),
        "record": bool(settings.get("record", True)),
        "path": settings.get("path"),
    }


def write_back(run_dir: Path | str, *, report: Mapping[str, Any] | None = None) -> int | None:
    """Record a run in the knowledge base unless its config says ``knowledge.record: false``.

    Called by the runner at every end of a search and by ``rlab final`` (with its
    ``report``). Never raises: the base is a side effect, so a failure to write it warns
    once per process and the run goes on. Returns the lessons written (None if none).
    """
    global _warned
    try:
        settings = run_knowledge_settings(run_dir)
        if not settings["record"]:
            return None
        store = KnowledgeStore(settings["path"])
        if report is not None:
            record_final(run_dir, store, report)
            return len(store.lessons(run_id=RunFolder(Path(run_dir)).run_id))
        return record_run(run_dir, store)
    except Exception as exc:  # the run's own outcome must never depend on this
        if not _warned:
            _warned = True
            log.warning(
                "The run's lessons were not written to the knowledge base (%s); the run "
                "itself is unaffected — set RLAB_KNOWLEDGE to a writable file or pass "
                "-o knowledge.record=false.",
                exc,
            )
        return None
