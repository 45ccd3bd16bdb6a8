"""The ``openai`` and ``anthropic`` agents, driven through real runs by a fake LLM server.

The fake server (``fake_llm.py``) speaks the real wire formats over HTTP on 127.0.0.1, so
the official SDKs, their retries and their error handling run for real; the toy task's
candidates run for real in the sandbox and are scored for real.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_llm import Fail, FakeLLM, Plan, Reply
from rlab_agents import plugin as agents_plugin
from rlab_agents.llm_base import LLMAgentError
from rlab_agents.pricing import DEFAULT_PRICES, ModelPrice, PriceTable
from rlab_agents.prompt import SYSTEM

from rlab_core.api import (
    AgentAuthError,
    AgentContext,
    AgentError,
    BudgetProgress,
    NodeKind,
    NodeStatus,
    NodeSummary,
    RepairContext,
    Usage,
)
from rlab_core.config import RunConfig
from rlab_core.journal import read_events, replay
from rlab_core.plugins import PluginHost
from rlab_core.runner import RunOutcome, start_run
from rlab_core.testing import TOY_SEED_DIR, check_agent
from rlab_core.testing.toy import plugin as toy_plugin

KEY = "sk-rlab-test-5f0c2e9a71d84b36a0e4c1d2"
RLAB = str(Path(sys.executable).parent / "rlab")
#: (agent, api, model) for each wire format
FORMATS = [
    ("openai", "chat", "gpt-4o-mini"),
    ("openai", "responses", "gpt-4o-mini"),
    ("anthropic", None, "claude-haiku-4-5"),
]
FORMAT_IDS = ["openai-chat", "openai-responses", "anthropic"]


def edit(anchor: str, replacement: str) -> dict[str, str]:
    return {"file": "main.py", "anchor": anchor, "replacement": replacement}


SLOPE_3 = Plan("Slope 3 matches the trend of the data.", [edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")])
INTERCEPT_1 = Plan(
    "An intercept of 1 removes the bias.",
    [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n")],
    rationale="The residuals are all about +1.",
)
#: ".0\n" ends both the SLOPE and the INTERCEPT line: an ambiguous anchor
AMBIGUOUS = Plan("Nudge the slope down a little.", [edit(".0\n", ".98\n")])
SLOPE_298 = Plan("Nudge the slope down a little.", [edit("SLOPE = 3.0\n", "SLOPE = 2.98\n")])


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PluginHost:
    """A plugin host with the toy benchmark and this package's agents, and a private cache."""
    monkeypatch.setenv("RLAB_CACHE_HOME", str(tmp_path / "rlab-cache"))
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(agents_plugin, name="agents")
    return host


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    """The fake server, accepting only ``KEY``, which both key variables hold."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeLLM(api_key=KEY) as server:
        yield server


def options(server: FakeLLM, agent: str, api: str | None, model: str, **extra: Any) -> dict:
    """Agent options pointing at the fake server, with fast retries."""
    values: dict[str, Any] = {"model": model, "max_retries": 2, "timeout_s": 30, **extra}
    if agent == "openai":
        values.update(base_url=server.openai_url, api=api)
    else:
        values.update(base_url=server.anthropic_url)
    return values


def run(host: PluginHost, tmp_path: Path, agent: str, agent_options: dict, **config) -> RunOutcome:
    values = {"iterations": 3, "min_iterations": 100, **config}
    return start_run(
        host,
        RunConfig(
            task="toy:line",
            agent=agent,
            agent_options=agent_options,
            out=tmp_path / "runs",
            **values,
        ),
    )


def files_holding(folder: Path, secret: str) -> list[str]:
    """Every file under ``folder`` whose bytes contain ``secret``."""
    needle = secret.encode()
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def expected_cost(model: str, input_: int, output: int, cached: int, written: int = 0) -> float:
    price = DEFAULT_PRICES[model]
    write = price.cache_write if price.cache_write is not None else price.input
    uncached = input_ - cached - written
    total = uncached * price.input + cached * price.cached_input + written * write
    return (total + output * price.output) / 1e6


@pytest.mark.parametrize(("agent", "api", "model"), FORMATS, ids=FORMAT_IDS)
def test_a_multi_iteration_run_retries_bad_replies_backs_off_and_bills_tokens(
    host, fake, tmp_path, caplog, agent, api, model
):
    caplog.set_level(logging.DEBUG)  # the SDKs' debug logs must not show the key either
    fake.script(
        Reply(SLOPE_3.json(fenced=True), 1500, 300, cached_tokens=500, cache_write_tokens=200),
        Reply("I would raise the intercept, but I am not sure how.", 1400, 40),
        Reply(INTERCEPT_1.json(), 1600, 200, cached_tokens=1000),
        Fail("rate_limit", retry_after="0.2"),
        Reply(AMBIGUOUS.json(), 1700, 120),
        Reply(SLOPE_298.json(), 1900, 130, cached_tokens=1200),
    )
    outcome = run(host, tmp_path, agent, options(fake, agent, api, model))

    assert fake.left == 0 and [r.status for r in fake.requests] == [200, 200, 200, 429, 200, 200]
    seed, n1, n2, n3 = replay(outcome.run.journal_path).tree
    assert [n.status for n in (seed, n1, n2, n3)] == [NodeStatus.EVALUATED] * 4
    assert (n1.parent_id, n2.parent_id, n3.parent_id) == (seed.id, n1.id, n2.id)
    assert n1.hypothesis == SLOPE_3.hypothesis and "+SLOPE = 3.0" in n1.diff
    assert n2.hypothesis == INTERCEPT_1.hypothesis and "+INTERCEPT = 1.0" in n2.diff
    assert "\n+SLOPE = 2.98\n" in n3.diff and "+INTERCEPT" not in n3.diff
    assert seed.score.primary > 1.0 > n1.score.primary > n2.score.primary and n2.score.primary < 0.2
    assert outcome.best.id in (n2.id, n3.id)
    assert n2.rationale.startswith("The residuals are all about +1.")
    assert "2 call(s)" in n2.rationale and "retried after" in n2.rationale

    # what the model was told: system prompt, problem, parent source, tree, contract
    first, second = fake.requests[0], fake.requests[1]
    assert first.turns()[0] == ("system", SYSTEM)
    prompt = first.user_texts()[0]
    assert "# Task toy:line" in prompt and "rmse (lower is better)" in prompt
    assert "SLOPE = 1.0" in prompt and "Reply with ONE JSON object" in prompt
    assert "iterations 0/3" in prompt and "phase: explore" in prompt
    assert "# Your step (improve)" in prompt
    tree_part = second.user_texts()[0]
    assert SLOPE_3.hypothesis in tree_part and "+SLOPE = 3.0" in tree_part
    assert "# Parent n0001" in tree_part
    # the malformed reply was retried once, quoting it and the validation error
    retry = fake.requests[2].turns()
    assert retry[-2] == ("assistant", "I would raise the intercept, but I am not sure how.")
    assert retry[-1][0] == "user" and "could not be used: no JSON object found" in retry[-1][1]
    # the 429 was retried after the server's retry-after, then the ambiguous anchor was
    # retried with the edit error
    assert fake.requests[4].at - fake.requests[3].at >= 0.2
    assert fake.requests[4].body == fake.requests[3].body
    edit_retry = fake.requests[5].turns()
    assert edit_retry[-2] == ("assistant", AMBIGUOUS.json())
    assert "the anchor occurs 2 times in 'main.py' (lines 11, 12)" in edit_retry[-1][1]

    # tokens and cost per node, summed over the node's calls, in the journal
    finished = {
        e["node"]["id"]: e["node"]["usage"]
        for e in read_events(outcome.run.journal_path)[0]
        if e["type"] == "node_finished"
    }
    written = 200 if agent == "anthropic" else 0  # only Anthropic reports cache writes
    assert finished[n1.id] == pytest.approx(
        {
            "input_tokens": 1500,
            "output_tokens": 300,
            "cached_tokens": 500,
            "cost_usd": expected_cost(model, 1500, 300, 500, written),
        }
    )
    assert finished[n2.id] == pytest.approx(
        {
            "input_tokens": 3000,
            "output_tokens": 240,
            "cached_tokens": 1000,
            "cost_usd": expected_cost(model, 1400, 40, 0) + expected_cost(model, 1600, 200, 1000),
        }
    )
    assert finished[n3.id]["input_tokens"] == 3600 and finished[n3.id]["cached_tokens"] == 1200
    assert finished[seed.id]["input_tokens"] == 0 and finished[n1.id]["cost_usd"] > 0

    # each wire format's own fields
    if api == "responses":
        assert all(r.path == "/v1/responses" and r.body["store"] is False for r in fake.requests)
    elif api == "chat":
        assert all(r.path == "/v1/chat/completions" for r in fake.requests)
    else:
        body = fake.requests[0].body
        assert body["max_tokens"] == 16000 and body["system"] == SYSTEM
        assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}

    # the key travelled in the auth header only, and reached no file, log or candidate
    for request in fake.requests:
        assert request.key == KEY and KEY.encode() not in request.raw
        assert [k for k, v in request.headers.items() if KEY in v] in (
            ["authorization"],
            ["x-api-key"],
        )
    assert files_holding(outcome.run.root, KEY) == []
    assert KEY not in caplog.text


def test_the_real_executable_repairs_keeps_the_key_out_and_reads_options_from_file_and_cli(
    fake, tmp_path
):
    crash = Plan("Slope 3 fits the data.", [edit("SLOPE = 1.0\n", "SLOPE = 3.0 / 0\n")])
    fix = Plan("Repair: drop the division.", [edit("SLOPE = 3.0 / 0\n", "SLOPE = 3.0\n")])
    show_env = Plan(
        "Intercept 1 removes the bias; print the environment for the record.",
        [
            edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n"),
            edit("# extra behaviour\n", "print('ENV', sorted(os.environ.items()))\n"),
        ],
    )
    fake.script(crash.json(), fix.json(), show_env.json())
    config = tmp_path / "rlab.yaml"
    config.write_text(
        yaml.safe_dump(
            {"agent": "openai", "agent_options": {"model": "gpt-4.1-mini", "max_retries": 0}}
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLAB_", "OPENAI_"))}
    env.update(
        RLAB_PLUGIN_MODULES="rlab_core.testing.toy.plugin",
        RLAB_CACHE_HOME=str(tmp_path / "rlab-cache"),
        COLUMNS="200",
        OPENAI_API_KEY=KEY,
        OPENAI_LOG="debug",  # the SDK's own debug logging must not show the key
    )
    args = ["-v", "run", "toy:line", "--config", str(config), "-i", "3"]
    args += ["-o", f"agent.base_url={fake.openai_url}", "-o", "agent.temperature=0.3"]
    done = subprocess.run(
        [RLAB, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert KEY not in done.stdout + done.stderr

    run_dir = next((tmp_path / "runs").iterdir())
    _seed, failed, repair, last = replay(run_dir / "journal.jsonl").tree
    assert failed.status == NodeStatus.FAILED and "ZeroDivisionError" in failed.failure.message
    assert repair.kind == NodeKind.DEBUG and repair.repair_of == failed.id
    assert repair.status == NodeStatus.EVALUATED and last.status == NodeStatus.EVALUATED
    repair_prompt = fake.requests[1].user_texts()[0]
    assert f"Original hypothesis: {crash.hypothesis}" in repair_prompt
    assert "Error: exited with code 1: ZeroDivisionError: float division by zero" in repair_prompt
    assert "line 11, in <module>\n    SLOPE = 3.0 / 0" in repair_prompt  # the log tail
    assert "SLOPE = 3.0 / 0" in repair_prompt  # the failed node's own source
    # options from the file (model) and the command line (base URL, temperature)
    assert {r.body["model"] for r in fake.requests} == {"gpt-4.1-mini"}
    assert {r.body["temperature"] for r in fake.requests} == {0.3}
    info = json.loads((run_dir / "run.json").read_text())
    assert info["config"]["agent_options"]["base_url"] == fake.openai_url

    log = (run_dir / "nodes" / last.id / "log.txt").read_text()
    assert "ENV" in log and "RLAB_DATA_DIR" in log and "OPENAI" not in log
    assert files_holding(run_dir, KEY) == []
    assert sum(n.usage.total_tokens for n in (failed, repair, last)) == 3 * 1500


def test_refused_key_stops_the_run_with_exit_code_2_and_one_sentence(tmp_path):
    with FakeLLM(api_key="sk-the-right-key-0000") as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RLAB_", "OPENAI_"))}
        env.update(
            RLAB_PLUGIN_MODULES="rlab_core.testing.toy.plugin",
            RLAB_CACHE_HOME=str(tmp_path / "rlab-cache"),
            OPENAI_API_KEY=KEY,
        )
        args = ["run", "toy:line", "-d", "openai", "-o", f"agent.base_url={server.openai_url}"]
        done = subprocess.run(
            [RLAB, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert [r.status for r in server.requests] == [401]  # never retried
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and KEY not in done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "refused the key in OPENAI_API_KEY (HTTP 401)" in message
    assert message.count(". ") == 0 and message.rstrip().endswith("run again.")
    state = replay(next((tmp_path / "runs").glob("*/journal.jsonl")))
    assert state.stop_reason.startswith("agent credentials refused")
    assert [n.status for n in state.tree] == [NodeStatus.EVALUATED]  # the seed is kept


def test_a_missing_key_variable_is_named_before_any_run_starts(host, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AgentAuthError, match="environment variable ANTHROPIC_API_KEY"):
        run(host, tmp_path, "anthropic", {"base_url": "http://127.0.0.1:9"})
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("budget", "reason"),
    [({"max_tokens": 2500}, "token budget reached"), ({"max_cost": 0.0006}, "cost budget reached")],
)
def test_the_run_stops_on_the_token_or_cost_budget(host, fake, tmp_path, budget, reason):
    fake.script(Reply(SLOPE_3.json(), 1500, 300), Reply(INTERCEPT_1.json(), 1500, 300))
    outcome = run(
        host, tmp_path, "openai", options(fake, "openai", "chat", "gpt-4o-mini"), **budget
    )
    assert reason in outcome.stop_reason and fake.left == 0
    assert len(replay(outcome.run.journal_path).tree) == 3  # seed + two agent nodes


def _context(**extra: Any) -> dict[str, Any]:
    seed = NodeSummary(
        id="n0000", parent_id=None, kind=NodeKind.SEED, status="evaluated", hypothesis="seed"
    )
    return {
        "task": "toy:line",
        "problem": "Fit y from x.",
        "primary_metric": "rmse",
        "higher_is_better": False,
        "parent": seed,
        "parent_source": {"main.py": (TOY_SEED_DIR / "main.py").read_text()},
        "tree": [seed],
        "progress": BudgetProgress(iterations_max=5),
        "editable_files": ["*.py"],
        **extra,
    }


def _agent(host: PluginHost, server: FakeLLM, agent: str, api: str | None, model: str, **extra):
    return host.create("agents", agent, options(server, agent, api, model, **extra))


@pytest.mark.parametrize(("agent", "api", "model"), FORMATS, ids=FORMAT_IDS)
def test_each_agent_passes_the_conformance_check_and_repairs_with_the_error(
    host, fake, agent, api, model
):
    llm = _agent(host, fake, agent, api, model)
    fix = Plan("Fix the name.", [edit("INTERCEPT = 0.0", "INTERCEPT = 1.0")])
    fake.script(Reply(SLOPE_3.json(), 900, 100), fix.json())
    proposal = check_agent(llm, AgentContext(**_context()))
    assert proposal.usage.input_tokens == 900 and proposal.usage.cost_usd > 0
    repair = llm.repair(
        RepairContext(
            **_context(),
            original_hypothesis="Slope 3 fits.",
            error="exited with code 1: NameError: name 'SLOPEE' is not defined",
            log_tail="Traceback (most recent call last):\nNameError: name 'SLOPEE' is not defined",
        )
    )
    assert repair is not None and repair.hypothesis == fix.hypothesis
    prompt = fake.requests[-1].user_texts()[0]
    assert "Original hypothesis: Slope 3 fits." in prompt and "name 'SLOPEE'" in prompt
    llm.close()


def test_unusable_replies_become_agent_errors_that_carry_their_tokens(host, fake):
    llm = _agent(host, fake, "openai", "chat", "gpt-4o-mini", max_retries=1)
    context = AgentContext(**_context())
    fake.script(Reply("no json", 100, 10), Reply('{"hypothesis": "x"}', 100, 10))
    with pytest.raises(LLMAgentError, match="reply was unusable after one retry") as caught:
        llm.propose(context)
    assert "edits: Field required" in str(caught.value)
    assert caught.value.usage.input_tokens == 200

    missing = Plan("Change Z.", [edit("Z = 0\n", "Z = 1\n")]).json()
    nothing = Plan("No-op.", [edit("SLOPE = 1.0\n", "SLOPE = 1.0\n")]).json()
    fake.script(missing, nothing)
    with pytest.raises(AgentError, match=r"edits did not apply after one retry: .*changes nothing"):
        llm.propose(context)
    assert "the anchor does not occur in 'main.py'" in fake.requests[-1].user_texts()[-1]

    fake.script(Fail("server"), Fail("server"))
    with pytest.raises(AgentError, match=r"HTTP 500: .*Sorry about that"):
        llm.propose(context)
    fake.script(Fail("rate_limit"), Fail("rate_limit"))
    with pytest.raises(AgentError, match="still rate limiting after 1 retries"):
        llm.propose(context)
    slow = _agent(host, fake, "anthropic", None, "claude-haiku-4-5", timeout_s=0.3, max_retries=0)
    fake.script(Reply(SLOPE_3.json(), delay_s=1.5))
    with pytest.raises(AgentError, match=r"did not answer within 0\.3s"):
        slow.propose(context)


def test_a_refused_anthropic_key_is_an_auth_error_naming_the_variable(host, fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-1234567890")
    llm = _agent(host, fake, "anthropic", None, "claude-haiku-4-5")
    with pytest.raises(AgentAuthError, match=r"refused the key in ANTHROPIC_API_KEY \(HTTP 401\)"):
        llm.propose(AgentContext(**_context()))
    assert [r.status for r in fake.requests] == [401]


def test_a_server_without_keys_is_reached_with_api_key_env_null(host, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLM() as server:
        llm = _agent(host, server, "openai", "chat", "qwen2.5-coder", api_key_env=None)
        server.script(SLOPE_3.json())
        proposal = llm.propose(AgentContext(**_context()))
    assert proposal.usage.cost_usd == 0 and server.requests[0].key == "no-key-needed"


def test_prices_match_dated_names_accept_overrides_and_warn_once_for_unknown_models(caplog):
    table = PriceTable({"my-vllm-model": ModelPrice(input=1.0, output=2.0)})
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=500_000)
    assert table.lookup("gpt-4o-mini-2024-07-18") is DEFAULT_PRICES["gpt-4o-mini"]
    assert table.lookup("claude-sonnet-4-5-20250929") is DEFAULT_PRICES["claude-sonnet-4-5"]
    assert table.lookup("openai/gpt-4.1") is DEFAULT_PRICES["gpt-4.1"]
    assert table.cost("gpt-4o", usage) == pytest.approx(0.5 * 2.5 + 0.5 * 1.25 + 10.0)
    assert table.cost("my-vllm-model", usage) == pytest.approx(1.0 + 2.0)  # cached: input price
    with caplog.at_level(logging.WARNING):
        assert table.cost("mystery-model-x", usage) == 0.0
        assert table.cost("mystery-model-x", usage) == 0.0
    assert caplog.text.count("No price is known for model 'mystery-model-x'") == 1


def test_listing_agents_imports_no_sdk_and_shows_every_option(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from rlab_core.plugins import PluginHost
        host = PluginHost()
        agents = host.available("agents")
        assert {"openai", "anthropic"} <= set(agents), agents
        print([m for m in ("openai", "anthropic", "httpx", "httpx2") if m in sys.modules])
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    env = {**os.environ, "COLUMNS": "400"}
    listed = subprocess.run(
        [RLAB, "list", "agents"], capture_output=True, text=True, timeout=60, env=env
    )
    assert listed.returncode == 0, listed.stderr
    for option in (
        "api_key_env",
        "reasoning_effort",
        "tree_budget_chars",
        "prices",
        "api (default",
    ):
        assert option in listed.stdout
    assert "PydanticUndefined" not in listed.stdout
