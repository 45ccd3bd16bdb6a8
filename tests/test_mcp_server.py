"""``rlab mcp`` answers a real MCP client (the official SDK) over stdio, validation side only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from conftest import RLAB, edit, extra

from rlab_core.final import finalize
from rlab_core.knowledge import KnowledgePage, KnowledgeStore

pytest.importorskip("mcp", reason="the MCP SDK is the optional extra rlab-core[mcp]")
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SLOPE_2 = {
    "hypothesis": "Slope 2 is closer to the data.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
}
BROKEN = {"hypothesis": "A syntax slip.", "edits": [extra("SLOPE = = 1")]}


def _payload(result) -> dict:
    """A tool's answer as JSON (the SDK's field names differ between majors: isError/is_error)."""
    assert not getattr(result, "is_error", getattr(result, "isError", False)), result.content
    return json.loads(result.content[0].text)


async def _session_calls(server: StdioServerParameters, calls: list[tuple[str, dict]]):
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        answers = [_payload(await session.call_tool(name, args)) for name, args in calls]
        return {tool.name for tool in tools.tools}, answers


def test_mcp_server_answers_a_real_client(run_toy, toy_host, isolated_knowledge_base, tmp_path):
    outcome = run_toy([SLOPE_2, BROKEN], debug_tries=0)
    report = finalize(toy_host, outcome.run)  # the base now holds a test-side gap
    KnowledgeStore(isolated_knowledge_base).add_pages(
        [
            KnowledgePage(
                id="toy/lines",
                family="toy",
                title="Fitting lines",
                body="Least squares gives the slope and the intercept.",
                sources=["https://en.wikipedia.org/wiki/Least_squares"],
            )
        ]
    )
    server = StdioServerParameters(
        command=RLAB,
        args=["mcp", "--run", str(outcome.run.root)],
        env={
            "RLAB_KNOWLEDGE": str(isolated_knowledge_base),
            "PATH": str(Path(sys.executable).parent),
        },
        cwd=str(tmp_path),
    )
    names, (found, pages, lessons, history) = anyio.run(
        _session_calls,
        server,
        [
            ("search_knowledge", {"text": "slope data"}),
            ("search_knowledge", {"text": "least squares", "family": "toy"}),
            ("task_lessons", {"task": "toy:line"}),
            ("run_history", {}),
        ],
    )
    assert names == {"search_knowledge", "task_lessons", "run_history"}
    top = found["hits"][0]
    assert top["kind"] == "lesson" and top["lesson"]["hypothesis"] == SLOPE_2["hypothesis"]
    assert top["lesson"]["verdict"] == "better" and top["lesson"]["gain"] > 0
    assert pages["hits"][0]["id"] == "toy/lines"
    assert pages["hits"][0]["sources"] == ["https://en.wikipedia.org/wiki/Least_squares"]
    by_node = {lesson["node"]: lesson for lesson in lessons["lessons"]}
    assert len(by_node) == 3 and by_node["n0002"]["failure"].startswith("run:")
    assert [node["id"] for node in history["nodes"]] == ["n0000", "n0001", "n0002"]
    assert history["task"] == "toy:line" and history["best"] == "n0001"
    assert history["nodes"][1]["val_score"] == pytest.approx(outcome.best.score.primary)
    # never a test number: neither the gap nor the test score is in any answer
    everything = json.dumps([found, pages, lessons, history])
    assert "val_test_gap" not in everything and "test" not in " ".join(by_node["n0001"])
    assert f"{report['test_primary']:.6f}"[:8] not in everything


def test_a_run_without_knowledge_gets_none_through_mcp(run_toy, isolated_knowledge_base, tmp_path):
    first = run_toy([SLOPE_2])  # a first run writes its lessons back
    quiet = run_toy([SLOPE_2], knowledge={"enabled": False})  # --no-kg
    server = StdioServerParameters(
        command=RLAB,
        args=["mcp", "--run", str(quiet.run.root)],
        env={
            "RLAB_KNOWLEDGE": str(isolated_knowledge_base),
            "PATH": str(Path(sys.executable).parent),
        },
        cwd=str(tmp_path),
    )
    _, (found, lessons, history, earlier) = anyio.run(
        _session_calls,
        server,
        [
            ("search_knowledge", {"text": "slope data"}),
            ("task_lessons", {"task": "toy:line"}),
            ("run_history", {}),
            ("run_history", {"run": str(first.run.root)}),
        ],
    )
    assert found["hits"] == [] and "switched off" in found["note"]
    assert lessons["lessons"] == [] and "switched off" in lessons["note"]
    assert history["run"] == quiet.run.run_id and len(history["nodes"]) == 2  # its own run
    assert "switched off" in earlier["error"] and "nodes" not in earlier  # not an earlier one
