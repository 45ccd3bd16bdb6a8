"""``rlab mcp``: the knowledge base and a run's experiment history as MCP tools over stdio.

CLI coding agents (Claude Code, Codex, ...) that speak the Model Context Protocol query it
while they work: ``search_knowledge`` (lessons and curated pages by text), ``task_lessons``
(what earlier runs learned on one task) and ``run_history`` (the current run's nodes,
hypotheses, validation scores and verdicts). Every answer is validation-side: no test
number — not even the val-test gap a lesson may carry after ``rlab final`` — is ever given.

Needs the official ``mcp`` SDK (``pip install 'rlab-core[mcp]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlab_core.errors import RlabUserError
from rlab_core.journal import replay
from rlab_core.knowledge.harvest import run_knowledge_settings
from rlab_core.knowledge.records import KnowledgeHit, Lesson
from rlab_core.knowledge.store import KnowledgeStore
from rlab_core.run_folder import RunFolder

#: What the knowledge tools answer for a run started with ``--no-kg``.
OFF_NOTE = "Knowledge is switched off for this run (--no-kg or knowledge.enabled=false)."
#: Characters of a diff or page body one answer carries (an agent's context is precious).
TEXT_LIMIT = 1500


class McpUnavailableError(RlabUserError):
    """The ``mcp`` SDK is not installed."""


def lesson_view(lesson: Lesson) -> dict[str, Any]:
    """A lesson as an agent may see it: everything but the test-side gap."""
    return {
        "task": lesson.fingerprint.task,
        "run": lesson.run_id,
        "node": lesson.node_id,
        "parent": lesson.parent_id,
        "kind": lesson.node_kind,
        "move": lesson.move_id,
        "hypothesis": lesson.hypothesis,
        "status": lesson.status,
        "val_score": lesson.val_score,
        "metric": lesson.fingerprint.metric,
        "higher_is_better": lesson.fingerprint.higher_is_better,
        "gain": lesson.gain,
        "verdict": lesson.verdict,
        "interval": list(lesson.interval) if lesson.interval else None,
        "failure": lesson.failure_cause,
        "repair_of": lesson.repair_of,
        "diff": lesson.diff[:TEXT_LIMIT],
    }


def hit_view(hit: KnowledgeHit) -> dict[str, Any]:
    """A search hit for an agent: the page's text and sources, or the lesson's view."""
    view: dict[str, Any] = {"kind": hit.kind, "title": hit.title, "score": hit.score}
    if hit.page is not None:
        view.update(
            id=hit.page.id,
            family=hit.page.family,
            body=hit.page.body[:TEXT_LIMIT],
            tags=hit.page.tags,
            sources=hit.page.sources,
        )
    if hit.lesson is not None:
        view["lesson"] = lesson_view(hit.lesson)
    return view


def run_history_view(run: Path | str, out: Path = Path("runs")) -> dict[str, Any]:
    """A run's experiment history from its journal: nodes, scores, verdicts (validation only)."""
    folder = RunFolder.open(run, out)
    state = replay(folder.journal_path)
    info = state.run_info
    nodes = []
    for node in state.tree:
        nodes.append(
            {
                "id": node.id,
                "parent": node.parent_id,
                "kind": node.kind.value,
                "status": node.status.value,
                "move": node.move_id,
                "hypothesis": node.hypothesis,
                "val_score": node.score.primary if node.evaluated and node.score else None,
                "gain": node.gain.delta if node.gain else None,
                "verdict": node.gain.verdict if node.gain else None,
                "interval": [node.gain.low, node.gain.high] if node.gain else None,
                "failure": (
                    f"{node.failure.stage.value}: {node.failure.message}"[:TEXT_LIMIT]
                    if node.failure
                    else None
                ),
                "repair_of": node.repair_of,
            }
        )
    best = state.tree.best()
    return {
        "run": folder.run_id,
        "task": info.get("task"),
        "metric": info.get("primary_metric"),
        "higher_is_better": info.get("higher_is_better"),
        "best": best.id if best else None,
        "stop_reason": state.stop_reason,
        "nodes": nodes,
    }


def build_server(
    store: KnowledgeStore,
    *,
    run: str | None = None,
    out: Path = Path("runs"),
    knowledge: bool = True,
) -> Any:
    """The MCP server with its three tools; ``run`` is the run ``run_history`` reads by default.

    With ``knowledge=False`` (a run started with ``--no-kg``) the two knowledge tools answer
    with nothing but that note: the switch holds for every way an agent could ask.
    """
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp ≥ 2
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x
        except ImportError:
            raise McpUnavailableError(
                "`rlab mcp` needs the MCP SDK, which is not installed; install it with "
                "`pip install 'rlab-core[mcp]'`."
            ) from None

    default_run = run
    server = Server(
        "rlab",
        instructions="Search rlab's knowledge base (lessons from earlier runs, curated pages) "
        "and the current run's experiment history. Scores are validation scores.",
    )

    @server.tool()
    def search_knowledge(text: str, family: str | None = None, limit: int = 10) -> dict[str, Any]:
        """Lessons from earlier runs and curated pages matching the words of ``text``, best first.

        ``family`` keeps one task family (relbench, mle, kuairand...).
        """
        if not knowledge:
            return {"hits": [], "note": OFF_NOTE}
        hits = store.search(text, family=family, limit=max(1, min(limit, 50)))
        return {"hits": [hit_view(hit) for hit in hits]}

    @server.tool()
    def task_lessons(task: str) -> dict[str, Any]:
        """Every lesson recorded for one task (``BENCHMARK:TASK``): moves, gains, verdicts, failures."""
        if not knowledge:
            return {"task": task, "lessons": [], "note": OFF_NOTE}
        lessons = store.lessons(task=task)
        return {"task": task, "lessons": [lesson_view(lesson) for lesson in lessons]}

    @server.tool()
    def run_history(run: str | None = None) -> dict[str, Any]:
        """A run's nodes with hypotheses, validation scores, gains and verdicts (default: this run).

        ``run`` is a run folder or its id; a test score is never part of the answer.
        """
        target = run or default_run
        if not knowledge and target != default_run:
            return {"error": OFF_NOTE + " Only this run's own history is available."}
        if target is None:
            return {"error": "No run given and the server was started without --run."}
        try:
            return run_history_view(target, out)
        except RlabUserError as exc:
            return {"error": str(exc)}

    return server


def serve(run: str | None = None, out: Path = Path("runs")) -> None:
    """Answer MCP requests on stdin/stdout until the client closes them.

    With a ``run``, its own knowledge settings hold: its base file (``knowledge.path``) and
    its switch (``knowledge.enabled``); otherwise the default base, switched on.
    """
    settings: dict[str, Any] = {"enabled": True, "path": None}
    if run is not None:
        settings = run_knowledge_settings(RunFolder.open(run, out).root)
    store = KnowledgeStore(settings["path"])
    store.stats()  # an unreadable base is one sentence now, not an error inside the protocol
    build_server(store, run=run, out=out, knowledge=settings["enabled"]).run("stdio")
