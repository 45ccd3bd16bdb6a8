"""The agents and the knowledge of earlier runs, on real toy runs.

The playbook agent tries first a move that held up on an earlier run (and keeps its static
order with ``--no-kg``); the LLM agents' prompt and the CLI coding agents' task file carry the
"What worked before" section; Claude Code gets rlab's MCP server, and the config it is given
starts a server a real MCP client can query.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from rlab_agents import plugin as agents_plugin
from rlab_agents.cli_agents import ClaudeCodeAgent, ClaudeCodeConfig
from rlab_agents.prompt import build_instructions, build_prompt
from standin_tools import write_standins

from rlab_core.api import AgentContext, BudgetProgress, KnowledgeDigest
from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import Node
from rlab_core.runner import RunOutcome, start_run
from rlab_core.testing.toy import edit, plugin as toy_plugin

pytest_plugins = ["rlab_core.testing.fixtures"]

#: rank order: a move that hurts, then two that help; a first run learns which is which
PLAYBOOK = [
    {
        "id": "nudge",
        "hypothesis": "Shift the intercept down.",
        "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = -5.0\n")],
    },
    {
        "id": "slope",
        "hypothesis": "Use the slope of the data, 3.",
        "edits": [edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")],
    },
    {
        "id": "intercept",
        "hypothesis": "Use the intercept of the data, 1.",
        "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n")],
    },
]


@pytest.fixture
def host() -> PluginHost:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(agents_plugin, name="agents")
    return host


def _run(host: PluginHost, tmp_path: Path, agent: str, options: dict[str, Any], **values: Any):
    config = RunConfig(
        task="toy:line",
        agent=agent,
        agent_options=options,
        benchmark_options={"playbook": PLAYBOOK},
        out=tmp_path / "runs",
        **{"iterations": 1, "min_iterations": 100, "finalists": 0, "noise_seeds": 0, **values},
    )
    outcome = start_run(host, config)
    return outcome, [n for n in replay(outcome.run.journal_path).tree if n.parent_id]


def _context(outcome: RunOutcome, node: str) -> dict[str, Any]:
    return json.loads((outcome.run.node_dir(node) / "context.json").read_text())


# --------------------------------------------------------------------------- playbook


def test_the_playbook_agent_tries_first_the_move_that_held_before(host, tmp_path, rlab_cache):
    playbook = {"exploration": 0.0}
    # a first run, knowing nothing, follows the static ranks: nudge (worse), then the others
    _, learned = _run(host, tmp_path, "playbook", playbook, iterations=3)
    assert [n.move_id for n in learned] == ["nudge", "slope", "intercept"]
    verdicts = {n.move_id: n.gain.verdict for n in learned if n.gain}
    assert verdicts == {"nudge": "worse", "slope": "better", "intercept": "better"}

    # the next run tries the move with the largest verified gain first, the hurtful one last
    outcome, (first,) = _run(host, tmp_path, "playbook", playbook)
    assert first.move_id == "slope"
    assert "held 1/1 tries on similar tasks" in first.rationale
    stats = _context(outcome, first.id)["knowledge"]["move_stats"]
    assert stats["slope"]["held"] == 1 and stats["nudge"]["worse"] == 1

    # without knowledge the static order stands
    _, (blind,) = _run(host, tmp_path, "playbook", playbook, knowledge={"enabled": False})
    assert blind.move_id == "nudge"


# --------------------------------------------------------------------------- prompts


def _learned_context(host: PluginHost, tmp_path: Path) -> tuple[AgentContext, Node]:
    """A real context with knowledge: a second run's first node, after a first run."""
    _run(host, tmp_path, "playbook", {"exploration": 0.0}, iterations=3)
    outcome, (node,) = _run(host, tmp_path, "playbook", {"exploration": 0.0})
    digest = KnowledgeDigest.model_validate(_context(outcome, node.id)["knowledge"])
    tree = replay(outcome.run.journal_path).tree
    seed = tree.summary(tree.get("n0000"))
    context = AgentContext(
        task="toy:line",
        problem="Fit a line.",
        primary_metric="rmse",
        higher_is_better=False,
        parent=seed,
        parent_source={"main.py": "SLOPE = 1.0\n"},
        tree=[seed],
        progress=BudgetProgress(iterations_max=3),
        editable_files=["*.py"],
        knowledge=digest,
    )
    return context, node


def test_llm_prompts_and_task_files_carry_what_worked_before(host, tmp_path, rlab_cache):
    context, _ = _learned_context(host, tmp_path)
    prompt = build_prompt(context)
    assert "# What worked before" in prompt
    section = prompt[prompt.index("# What worked before") :]
    assert "`slope`" in section and "`nudge`" in section.split("Warnings")[1]
    assert "# What worked before" not in build_prompt(
        context.model_copy(update={"knowledge": None})
    )

    task_file = build_instructions(context, tools=True)
    assert "## What worked before" in task_file and "`run_history`" in task_file
    assert "## What worked before" not in build_instructions(
        context.model_copy(update={"knowledge": None})
    )


def test_claude_code_gets_the_section_and_rlab_mcp_and_no_kg_takes_both_away(
    host, tmp_path, rlab_cache
):
    tools = write_standins(tmp_path / "bin")
    record = tmp_path / "calls.jsonl"
    options = {
        "executable": str(tools["claude"]),
        "env": {"STANDIN_RECORD": str(record), "STANDIN_BEHAVIOUR": "improve"},
    }
    _run(host, tmp_path, "claude-code", options)  # a first run: lessons to tell
    _run(host, tmp_path, "claude-code", options)
    _run(host, tmp_path, "claude-code", options, knowledge={"enabled": False})
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    first, second, blind = calls
    assert "What worked before" not in first["task"]  # nothing learned yet ...
    assert "--mcp-config" in first["argv"] and "`run_history`" in first["task"]  # ... tools
    assert "## What worked before" in second["task"] and "Raise the slope" in second["task"]
    assert "`search_knowledge`" in second["task"]
    argv = second["argv"]
    assert argv[argv.index("--allowedTools") + 1] == "mcp__rlab"
    assert "--mcp-config" not in blind["argv"] and "What worked before" not in blind["task"]


def test_the_mcp_config_starts_a_server_a_real_client_can_query(host, tmp_path, rlab_cache):
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    context, node = _learned_context(host, tmp_path)
    agent = ClaudeCodeAgent(ClaudeCodeConfig(executable="python3"))
    assert agent.has_rlab_tools(context)
    state = tmp_path / "state"
    state.mkdir()
    argv = agent.command(context, tmp_path, state)
    config = json.loads(Path(argv[argv.index("--mcp-config") + 1]).read_text())
    server = config["mcpServers"]["rlab"]
    assert server["args"][:2] == ["mcp", "--run"]

    async def ask() -> tuple[list[str], str, str]:
        params = StdioServerParameters(
            command=server["command"], args=server["args"], env=server["env"]
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = sorted(tool.name for tool in (await session.list_tools()).tools)
            found = await session.call_tool("search_knowledge", {"text": "slope"})
            history = await session.call_tool("run_history", {})
            return names, found.content[0].text, history.content[0].text

    names, found, history = asyncio.run(asyncio.wait_for(ask(), timeout=60))
    assert names == ["run_history", "search_knowledge", "task_lessons"]
    assert "slope" in found  # the first run's lesson, from the run's own knowledge base
    assert node.id in history  # the run the call belongs to
