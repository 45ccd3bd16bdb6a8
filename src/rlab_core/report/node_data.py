"""One node as the dashboard shows it: its record, outcome, failure cause, diff and log tail.

Finished nodes come from the journal's tree; nodes still running (or lost with a killed run)
from their ``node_started`` events (:func:`in_flight_nodes`).
"""

from __future__ import annotations

import json
from typing import Any

from rlab_core.journal import RunState
from rlab_core.records import Gain, Node
from rlab_core.report.numbers import format_se, gain_detail, gain_text
from rlab_core.report.status import Outcome, failure_cause
from rlab_core.run_folder import RunFolder

LOG_TAIL_BYTES = 4096
DIFF_MAX_CHARS = 30_000


def se_text(node: Node) -> str | None:
    """The node's standard error as the views print it (``None`` when unmeasured)."""
    if node.score is None or node.score.standard_error is None:
        return None
    return format_se(node.score.standard_error)


def _gain_data(gain: Gain | None) -> dict[str, Any] | None:
    if gain is None:
        return None
    return {**gain.model_dump(), "text": gain_text(gain), "detail": gain_detail(gain)}


def node_data(
    run: RunFolder,
    node: Node,
    outcome: Outcome,
    state: RunState,
    best_after: Node | None,
    on_path: bool,
) -> dict[str, Any]:
    """A finished node for the page: ``outcome`` from :func:`~rlab_core.report.status.classify`,
    ``best_after`` the run's best once it had finished, ``on_path`` on the winner's path."""
    execution = node.execution
    diff = node.diff
    if len(diff) > DIFF_MAX_CHARS:
        diff = diff[:DIFF_MAX_CHARS] + f"\n… ({len(node.diff) - DIFF_MAX_CHARS} more characters)"
    timing = node.timing.model_dump()
    timing["total_s"] = node.timing.total_s
    return {
        "id": node.id,
        "parent_id": node.parent_id,
        "iteration": node.iteration,
        "kind": str(node.kind),
        "status": str(node.status),
        "outcome": str(outcome),
        "hypothesis": node.hypothesis,
        "rationale": node.rationale,
        "move_id": node.move_id,
        "repair_of": node.repair_of,
        "changed_files": node.changed_files,
        "diff": diff,
        "primary": node.score.primary if node.score else None,
        "standard_error": node.score.standard_error if node.score else None,
        "se_text": se_text(node),
        "resample_unit": node.score.resample_unit if node.score else None,
        "metrics": dict(node.score.metrics) if node.score else {},
        "gain": _gain_data(node.gain),
        "versus_best": _gain_data(node.versus_best),
        "accepted": node.accepted,
        #: became the run's best when it finished (under the run's acceptance rule)
        "new_best": best_after is not None and best_after.id == node.id,
        #: the run's best once this node had finished: its id and score (the chart's line)
        "best_after": (
            {"id": best_after.id, "score": best_after.score.primary}
            if best_after is not None and best_after.score is not None
            else None
        ),
        "on_winner_path": on_path,
        "failure": _failure(node),
        "closed_reason": state.tree.closed_reasons.get(node.id),
        "execution": (execution.model_dump(exclude={"log_tail", "command"}) if execution else None),
        "timing": timing,
        "usage": {**node.usage.model_dump(), "total_tokens": node.usage.total_tokens},
        "created_at": node.created_at,
        "finished_at": node.finished_at,
        "log_tail": _log_tail(run, node),
    }


def _failure(node: Node) -> dict[str, Any] | None:
    """Stage and message of a failure, with its cause in a word or two (status.py)."""
    cause = failure_cause(node)
    if node.failure is None or cause is None:
        return None
    return {
        "stage": str(node.failure.stage),
        "message": node.failure.message,
        "cause": cause.label,
        "cause_detail": cause.detail,
    }


def _log_tail(run: RunFolder, node: Node) -> str:
    """The last few KB of the node's log (its folder's log.txt, else the recorded tail)."""
    path = run.node_dir(node.id) / "log.txt"
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - LOG_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
        return ("…" if size > LOG_TAIL_BYTES else "") + text
    except OSError:
        pass
    if node.execution is not None and node.execution.log_tail:
        return node.execution.log_tail[-LOG_TAIL_BYTES:]
    return node.failure.log_tail[-LOG_TAIL_BYTES:] if node.failure else ""


def in_flight_nodes(run: RunFolder, state: RunState) -> list[dict[str, Any]]:
    """Nodes that started but did not finish, from their ``node_started`` events."""
    if not state.in_flight:
        return []
    wanted = set(state.in_flight)
    started: dict[str, dict[str, Any]] = {}
    with open(run.journal_path, "rb") as handle:
        for line in handle:
            if b'"node_started"' not in line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("id") in wanted:
                started[event["id"]] = event
    return [
        {
            "id": node_id,
            "parent_id": event.get("parent_id"),
            "iteration": event.get("iteration"),
            "kind": event.get("kind", "?"),
            "status": "running",
            "outcome": str(Outcome.RUNNING),
            "hypothesis": event.get("hypothesis") or "(waiting for the agent)",
            "created_at": event.get("t"),
            "metrics": {},
            "primary": None,
        }
        for node_id, event in sorted(started.items())
    ]
