"""The agents and tuning: the playbook interleaves tuning trials with its moves, LLM agents see
the tuning so far and may ask for a burst, CLI coding agents are told the declarations.

Real toy runs on a seed that declares its slope and intercept tunable; the LLM agents talk
to the fake server over real HTTP (``fake_llm.py``), which counts their calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLM, Plan, Reply
from rlab_agents import plugin as agents_plugin
from rlab_agents.llm_base import LLMAgentError
from rlab_agents.playbook import PlaybookAgent, PlaybookConfig
from rlab_agents.prompt import build_instructions, build_prompt
from standin_tools import write_standins

from rlab_core.api import AgentContext, BudgetProgress, NodeKind, NodeSummary, NothingToPropose
from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import Node
from rlab_core.runner import RunOutcome, start_run
from rlab_core.testing import TOY_SEED_DIR
from rlab_core.testing.toy import edit, plugin as toy_plugin

KEY = "sk-rlab-test-tuning-0b1c2d3e4f5a6b7c"
DECLARED = {
    "SLOPE = 1.0\n": "SLOPE = 1.0  # tune: float 0.0..5.0\n",
    "INTERCEPT = 0.0\n": "INTERCEPT = 0.0  # tune: float -2.0..2.0\n",
}
#: Moves that change nothing the score sees: each is a structural node the search rejects.
PLAYBOOK = [
    {
        "id": "digits",
        "hypothesis": "Keep six digits of each prediction.",
        "edits": [edit("# extra behaviour\n", "# extra behaviour\nDIGITS = 6\n")],
    },
    {
        "id": "note",
        "hypothesis": "Name the model in a constant.",
        "edits": [edit("# extra behaviour\n", "# extra behaviour\nNOTE = 'line'\n")],
    },
    {
        "id": "marker",
        "hypothesis": "Mark the program's version.",
        "edits": [edit("# extra behaviour\n", "# extra behaviour\nVERSION = 2\n")],
    },
]


def tunable_source() -> str:
    """The toy seed with its slope and intercept declared tunable."""
    text = (TOY_SEED_DIR / "main.py").read_text()
    for line, declared in DECLARED.items():
        text = text.replace(line, declared)
    return text


@pytest.fixture
def seed_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "seed"
    folder.mkdir()
    (folder / "main.py").write_text(tunable_source())
    return folder


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PluginHost:
    monkeypatch.setenv("RLAB_CACHE_HOME", str(tmp_path / "rlab-cache"))
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(agents_plugin, name="agents")
    return host


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeLLM(api_key=KEY) as server:
        yield server


def run(
    host: PluginHost, tmp_path: Path, seed_dir: Path, agent: str, options: dict, iterations: int
) -> tuple[RunOutcome, list[Node]]:
    config = RunConfig(
        task="toy:line",
        agent=agent,
        agent_options=options,
        benchmark_options={"playbook": PLAYBOOK, "seed_dir": str(seed_dir)},
        out=tmp_path / "runs",
        iterations=iterations,
        min_iterations=100,
        finalists=0,
        noise_seeds=0,
    )
    outcome = start_run(host, config)
    return outcome, list(replay(outcome.run.journal_path).tree)


def openai_options(server: FakeLLM) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "api": "chat",
        "base_url": server.openai_url,
        "max_retries": 0,
        "timeout_s": 30,
    }


def setting(node: Node) -> tuple[float, float]:
    assert node.tuning is not None
    return node.tuning.params["SLOPE"], node.tuning.params["INTERCEPT"]


# --------------------------------------------------------------------------- playbook


def test_the_playbook_tunes_after_structural_moves_stall_then_moves_on_the_tuned_best(
    host, tmp_path, seed_dir
):
    outcome, tree = run(host, tmp_path, seed_dir, "playbook", {"exploration": 0.0}, 9)
    seed, *made = tree
    assert seed.tunables == ["SLOPE", "INTERCEPT"]
    # two moves that change nothing stall the search; a burst of max(4, 2) trials follows,
    # then the last move on top of the tuned best, then tuning again (no move is left)
    assert [n.move_id for n in made] == ["digits", "note", *["tune"] * 4, "marker", "tune", "tune"]
    assert [n.accepted for n in made[:2]] == [False, False]
    trials = [n for n in made if n.move_id == "tune"]
    assert [n.tuning.number for n in trials] == [1, 2, 3, 4, 5, 6]
    assert {n.tuning.base for n in trials} == {seed.id}
    assert len({setting(n) for n in trials}) == 6  # never the same setting twice
    assert all(setting(n) != (1.0, 0.0) for n in trials)  # nor the seed's own
    first = trials[0]
    assert first.hypothesis.startswith(f"Tuning trial 1 on {seed.id} (TPE over 2 declared")
    slope, _ = setting(first)
    assert f"+SLOPE = {slope!r}  # tune: float 0.0..5.0" in first.diff
    assert "+DIGITS" not in first.diff and first.parent_id == seed.id
    # the structural move after the burst builds on a tuned parent the search accepted
    marker = next(n for n in made if n.move_id == "marker")
    parent = next(n for n in tree if n.id == marker.parent_id)
    assert parent.tuning is not None and parent.accepted
    assert parent.score.primary < seed.score.primary - 0.5
    assert "VERSION = 2" in (outcome.run.node_dir(marker.id) / "src" / "main.py").read_text()
    assert outcome.best.tuning is not None  # the run's best is a tuned setting


def test_without_tuning_the_playbook_plays_its_moves_through_a_stall(host, tmp_path, seed_dir):
    _, tree = run(host, tmp_path, seed_dir, "playbook", {"tuning": False}, 3)
    assert [n.move_id for n in tree[1:]] == ["digits", "note", "marker"]
    assert all(n.tuning is None for n in tree)


def _seed_context(source: dict[str, str], **extra: Any) -> AgentContext:
    seed = NodeSummary(
        id="n0000",
        parent_id=None,
        kind=NodeKind.SEED,
        status="evaluated",
        hypothesis="seed",
        primary=2.7,
    )
    return AgentContext(
        task="toy:line",
        problem="Fit y from x.",
        primary_metric="rmse",
        higher_is_better=False,
        parent=seed,
        parent_source=source,
        tree=[seed],
        progress=BudgetProgress(iterations_max=5),
        editable_files=["*.py"],
        **extra,
    )


def test_the_playbook_tunes_when_no_move_applies_and_gives_up_when_neither_does():
    agent = PlaybookAgent(PlaybookConfig())
    proposal = agent.propose(_seed_context({"main.py": tunable_source()}))
    assert proposal.move_id == "tune" and proposal.tuning.number == 1
    plain = {"main.py": (TOY_SEED_DIR / "main.py").read_text()}
    with pytest.raises(NothingToPropose, match="n0000 and nothing is left to tune"):
        agent.propose(_seed_context(plain))


# --------------------------------------------------------------------------- LLM agents


def test_a_tune_reply_runs_a_burst_of_trials_on_one_call_and_later_prompts_show_them(
    host, fake, tmp_path, seed_dir
):
    intercept = Plan(
        "Keep a version constant to mark the tuned program.",
        [edit("# extra behaviour\n", "# extra behaviour\nVERSION = 2\n")],
    )
    fake.script(
        Reply(json.dumps({"tune": 3, "rationale": "The values were never searched."}), 1000, 20),
        Reply(intercept.json(), 1400, 120),
    )
    _, tree = run(host, tmp_path, seed_dir, "openai", openai_options(fake), 4)

    _, t1, t2, t3, last = tree
    # one call made three trials: the burst's first carries the call's tokens, the rest none
    assert [r.status for r in fake.requests] == [200, 200] and fake.left == 0
    assert [n.move_id for n in (t1, t2, t3)] == ["tune"] * 3
    assert [n.tuning.number for n in (t1, t2, t3)] == [1, 2, 3]
    assert [n.tuning.burst for n in (t1, t2, t3)] == [3, None, None]
    assert [n.usage.input_tokens for n in (t1, t2, t3)] == [1000, 0, 0]
    assert t1.rationale.startswith("The values were never searched.")
    assert "no call" in t2.rationale
    assert len({setting(n) for n in (t1, t2, t3)}) == 3
    assert all(n.status == "evaluated" for n in (t1, t2, t3))

    # the first prompt offered the burst; the later one lists each trial with its score
    first, later = (r.user_texts()[0] for r in fake.requests)
    assert "# Tuning so far" in first and 'you may reply {"tune": N} (1 <= N <= 20' in first
    assert "- SLOPE (main.py): float 0..5, now 1.0" in first
    assert "No trial has tuned n0000's parameters yet." in first
    assert 'Or, instead of a code change, reply {"tune": N}' in first
    section = later[later.index("# Tuning so far") : later.index("# Parent ")]
    for trial in (t1, t2, t3):
        slope, intercept_value = setting(trial)
        line = next(
            x for x in section.splitlines() if x.startswith(f"- trial {trial.tuning.number} ")
        )
        assert f"SLOPE={slope!r}, INTERCEPT={intercept_value!r}" in line
        assert f"val rmse={trial.score.primary:.6g}" in line and "(full)" in line
    assert "burst of 3" in section
    # trials show in the tree without their diffs: the section holds their settings
    assert "+SLOPE =" not in later.split("# Tuning so far")[0]
    assert last.move_id is None and last.usage.input_tokens == 1400
    assert "+VERSION = 2" in last.diff


def test_a_malformed_or_impossible_tune_request_is_a_clear_agent_error(host, fake):
    llm = host.create("agents", "openai", openai_options(fake))
    tunable = _seed_context({"main.py": tunable_source()})
    fake.script('{"tune": 0}', '{"tune": 50, "rationale": "many"}')
    with pytest.raises(LLMAgentError) as caught:
        llm.propose(tunable)
    message = str(caught.value)
    assert message.startswith("the model's reply was unusable after one retry: ")
    assert 'is invalid: write {"tune": N} with N a whole number from 1 to 20' in message
    assert caught.value.usage.input_tokens == 2 * 1200
    retry = fake.requests[1].user_texts()[-1]
    assert 'the tuning request {"tune": 0} is invalid' in retry

    fake.script('{"tune": 3, "edits": []}', '{"tune": 2}')
    plain = _seed_context({"main.py": (TOY_SEED_DIR / "main.py").read_text()})
    with pytest.raises(LLMAgentError, match="a tuning burst cannot run on n0000: n0000 declares"):
        llm.propose(plain)
    assert "either asks for a tuning burst" in fake.requests[3].user_texts()[-1]
    assert "# Tuning so far" not in fake.requests[2].user_texts()[0]  # nothing to tune there
    llm.close()


# --------------------------------------------------------------------------- CLI agents


def test_the_coding_agents_task_file_names_the_declared_parameters_without_a_burst(
    host, tmp_path, seed_dir
):
    tools = write_standins(tmp_path / "bin")
    record = tmp_path / "calls.jsonl"
    env = {"STANDIN_RECORD": str(record), "STANDIN_BEHAVIOUR": "nochange"}
    run(host, tmp_path, seed_dir, "codex", {"executable": str(tools["codex"]), "env": env}, 1)
    (call,) = [json.loads(line) for line in record.read_text().splitlines()]
    task = call["task"]  # RLAB_TASK.md as the tool read it
    section = task[task.index("## Tuning so far") : task.index("## Budget")]
    assert "The parent n0000 declares 2 tunable parameter(s):" in section
    assert "- INTERCEPT (main.py): float -2..2, now 0.0" in section
    assert "# tune: float LOW..HIGH" in section and '{"tune"' not in task
    plain = _seed_context({"main.py": (TOY_SEED_DIR / "main.py").read_text()})
    assert "Tuning so far" not in build_instructions(plain)
    assert "Tuning so far" not in build_prompt(plain)


def test_a_playbook_that_only_tunes_still_converges(host, seed_dir, tmp_path):
    from rlab_core.builtin.convergence import TUNING_STALL_FACTOR

    # the generating line y = 3x + 1 exactly: no trial can raise the best beyond the noise
    source = (seed_dir / "main.py").read_text()
    source = source.replace("SLOPE = 1.0  #", "SLOPE = 3.0  #")
    (seed_dir / "main.py").write_text(source.replace("INTERCEPT = 0.0  #", "INTERCEPT = 1.0  #"))
    config = RunConfig(
        task="toy:line",
        agent="playbook",
        benchmark_options={"seed_dir": str(seed_dir), "playbook": []},
        out=tmp_path / "runs",
        iterations=40,  # only a bound for a broken rule: the run must end long before
        window=2,
        finalists=0,
        noise_seeds=0,
    )
    outcome = start_run(host, config)
    tree = replay(outcome.run.journal_path).tree
    # no move applies, so the agent only tunes; the run still ends, long before its budget:
    # 2 declared parameters need 4 trials (two each, at least `window` 2): then 2 + 3 * 4
    # evaluated nodes without a gain
    span = 2 + TUNING_STALL_FACTOR * 4
    assert outcome.stop_reason == (
        f"converged: nothing raised the best over the last {span} evaluated nodes, tuning included"
    )
    assert [n.move_id for n in tree][1:] == ["tune"] * span and tree.best().id == "n0000"


def test_a_run_does_not_converge_while_the_playbook_has_untried_moves(host, tmp_path):
    # the plain toy seed declares nothing to tune; five moves that change nothing the score
    # sees: each is a stalled iteration
    moves = [
        {
            "id": f"noop{i}",
            "hypothesis": f"Name constant {i}.",
            "edits": [edit("# extra behaviour\n", f"# extra behaviour\nNAME{i} = {i}\n")],
        }
        for i in range(5)
    ]
    config = RunConfig(
        task="toy:line",
        agent="playbook",
        agent_options={"exploration": 0.0},
        benchmark_options={"playbook": moves},
        out=tmp_path / "runs",
        iterations=20,
        window=2,
        min_iterations=0,
        finalists=0,
        noise_seeds=0,
    )
    outcome = start_run(host, config)
    tree = replay(outcome.run.journal_path).tree
    # two stalls would have ended it; the budget remained and the agent had untried moves
    # for the best, so every move was tried before the run converged
    assert [n.move_id for n in tree][1:] == [f"noop{i}" for i in range(5)]
    assert outcome.stop_reason.startswith("converged")
