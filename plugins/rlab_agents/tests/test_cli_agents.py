"""The CLI coding agents (aider, claude-code, codex) driving real runs of the toy task.

The tools are stand-ins that parse the real tools' flags and edit files as the real tools
do (``standin_tools.py``); one test runs the real aider against the fake OpenAI server
when aider is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_llm import FakeLLM, Reply
from rlab_agents import plugin as agents_plugin
from rlab_agents.cli_agent_base import TOOL_ENV_BASE, split_hypothesis, tool_environment
from standin_tools import write_standins

from rlab_core.api import (
    AgentContext,
    AgentError,
    BudgetProgress,
    FailureStage,
    Node,
    NodeKind,
    NodeStatus,
    NodeSummary,
    RlabUserError,
    is_secret_name,
)
from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.runner import RunOutcome, start_run
from rlab_core.testing import TOY_SEED_DIR
from rlab_core.testing.toy import plugin as toy_plugin

pytest_plugins = ["rlab_core.testing.fixtures"]

RLAB = str(Path(sys.executable).parent / "rlab")
SEED_MAIN = (TOY_SEED_DIR / "main.py").read_text()
AIDER = os.environ.get("RLAB_TEST_AIDER") or shutil.which("aider")


@pytest.fixture
def host() -> PluginHost:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(agents_plugin, name="agents")
    return host


@pytest.fixture
def bins(tmp_path: Path) -> dict[str, Path]:
    return write_standins(tmp_path / "bin")


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


def _calls(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def _options(tool: Path, record: Path, behaviour: str = "improve", **more: Any) -> dict[str, Any]:
    env = {"STANDIN_RECORD": str(record), "STANDIN_BEHAVIOUR": behaviour, **more.pop("env", {})}
    return {"executable": str(tool), "env": env, **more}


def _run(
    host: PluginHost, tmp_path: Path, agent: str, options: dict[str, Any], **overrides: Any
) -> tuple[RunOutcome, list[Node]]:
    config = RunConfig(
        task="toy:line",
        agent=agent,
        agent_options=options,
        out=tmp_path / "runs",
        **{"iterations": 1, "min_iterations": 100, **overrides},
    )
    outcome = start_run(host, config)
    return outcome, list(replay(outcome.run.journal_path).tree)


def _context(source: dict[str, str] | None = None) -> AgentContext:
    seed = NodeSummary(
        id="n0000",
        parent_id=None,
        kind=NodeKind.SEED,
        status="evaluated",
        hypothesis="slope 1, intercept 0",
        primary=2.1,
    )
    return AgentContext(
        task="toy:line",
        problem="Predict y from x.",
        primary_metric="rmse",
        higher_is_better=False,
        parent=seed,
        parent_source=source or {"main.py": SEED_MAIN},
        tree=[seed],
        progress=BudgetProgress(iterations_max=3),
        editable_files=["*.py"],
    )


# --------------------------------------------------------------------------- real runs


def test_aider_improves_the_toy_task_over_several_iterations(
    host, tmp_path, bins, record, rlab_cache
):
    outcome, nodes = _run(host, tmp_path, "aider", _options(bins["aider"], record), iterations=3)
    seed, n1, n2, n3 = nodes
    assert [n.status for n in nodes[:3]] == [NodeStatus.EVALUATED] * 3
    # the diff comes from the tool's file changes; HYPOTHESIS.md and RLAB_TASK.md stay out
    assert "-SLOPE = 1.0\n+SLOPE = 3.0\n" in n1.diff and n1.changed_files == ["main.py"]
    assert n1.hypothesis == "Raise the slope to 3 because the data follow y = 3x + 1."
    assert n1.rationale == "The seed uses slope 1, far from the trend."
    assert n1.usage.input_tokens == 1200 and n1.usage.output_tokens == 56
    assert n1.usage.cost_usd == pytest.approx(0.0021)
    assert n2.parent_id == n1.id and "+INTERCEPT = 1.0" in n2.diff
    assert n2.hypothesis == "Set the intercept to 1 to remove the remaining offset."
    assert seed.score.primary > n1.score.primary > n2.score.primary
    assert n2.score.primary < 0.2 and outcome.best.id == n2.id
    # nothing left to change: the node fails at the agent stage and the run goes on
    assert n3.status == NodeStatus.FAILED and n3.failure.stage == FailureStage.AGENT
    assert "aider made no change" in n3.failure.message
    assert "Nothing left to improve." in n3.failure.message
    src = outcome.run.node_src(n2.id)
    assert sorted(p.name for p in src.iterdir()) == ["main.py"]

    calls = _calls(record)
    assert len(calls) == 3
    argv = calls[0]["argv"]
    assert argv[:2] == ["--message-file", "RLAB_TASK.md"] and argv[-1] == "main.py"
    assert argv[argv.index("--chat-history-file") + 1].endswith("chat.md")
    first, second = calls[0]["task"], calls[1]["task"]
    assert first.startswith("# Task toy:line") and "HYPOTHESIS.md" in first and "*.py" in first
    assert "Raise the slope to 3 because" in second  # the tree so far reaches the tool
    # every call ran in its own scratch copy, removed afterwards
    assert len({c["cwd"] for c in calls}) == 3
    assert not any(Path(c["cwd"]).parent.exists() for c in calls)


@pytest.mark.parametrize("agent, tool", [("claude-code", "claude"), ("codex", "codex")])
def test_claude_code_and_codex_edit_the_candidate(
    host, tmp_path, bins, record, rlab_cache, agent, tool
):
    _, nodes = _run(host, tmp_path, agent, _options(bins[tool], record, model="model-x"))
    n1 = nodes[1]
    assert n1.status == NodeStatus.EVALUATED and "+SLOPE = 3.0" in n1.diff
    assert n1.hypothesis == "Raise the slope to 3 because the data follow y = 3x + 1."
    (call,) = _calls(record)
    if tool == "claude":
        assert call["argv"][:1] == ["-p"] and "--output-format" in call["argv"]
        assert call["argv"][call["argv"].index("--permission-mode") + 1] == "acceptEdits"
        # tokens and cost come from claude's JSON result
        assert (n1.usage.input_tokens, n1.usage.cached_tokens, n1.usage.output_tokens) == (
            1000,
            100,
            80,
        )
        assert n1.usage.cost_usd == pytest.approx(0.0125)
    else:
        assert call["argv"][:2] == ["exec", "--sandbox"] and "--skip-git-repo-check" in call["argv"]
        assert n1.usage.total_tokens == 0  # codex prints no usage in exec mode
    assert call["argv"][call["argv"].index("--model") + 1] == "model-x"


@pytest.mark.parametrize(
    "behaviour, refusal",
    [
        ("outside", "'data.csv' is outside the files this task allows to change (*.py)"),
        ("escape", "'../escape.py' is not a path inside the candidate folder"),
    ],
)
def test_changes_outside_the_allowed_files_are_refused_by_the_core(
    host, tmp_path, bins, record, rlab_cache, behaviour, refusal
):
    outcome, nodes = _run(
        host, tmp_path, "codex", _options(bins["codex"], record, behaviour), debug_tries=0
    )
    n1 = nodes[1]
    assert n1.status == NodeStatus.FAILED and n1.failure.stage == FailureStage.EDIT
    assert refusal in n1.failure.message
    # the refused change never reaches the node's source
    assert "SLOPE = 1.0" in (outcome.run.node_src(n1.id) / "main.py").read_text()
    assert not (outcome.run.node_src(n1.id) / "data.csv").exists()
    (call,) = _calls(record)
    assert not Path(call["cwd"]).parent.exists()  # the escaped file went with the scratch folder


def test_timeout_kills_the_tool_and_its_children(host, tmp_path, bins, record, rlab_cache):
    pid_file = tmp_path / "child.pid"
    options = _options(
        bins["claude"], record, "timeout", timeout_s=1, env={"STANDIN_CHILD_PID": str(pid_file)}
    )
    started = time.monotonic()
    _, nodes = _run(host, tmp_path, "claude-code", options)
    assert time.monotonic() - started < 15
    n1 = nodes[1]
    assert n1.status == NodeStatus.FAILED and n1.failure.stage == FailureStage.AGENT
    assert "claude-code did not finish within 1s and was stopped" in n1.failure.message
    assert "thinking..." in n1.failure.message
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        status = (
            Path(f"/proc/{child}/status").read_text() if Path(f"/proc/{child}").exists() else ""
        )
        if "State:\tZ" in status:
            break  # killed; only its exit status is left for its (new) parent to collect
        time.sleep(0.05)
    alive = Path(f"/proc/{child}/status")
    assert not alive.exists() or "State:\tZ" in alive.read_text()


def test_repair_runs_the_tool_again_with_the_failure(host, tmp_path, bins, record, rlab_cache):
    _, nodes = _run(
        host,
        tmp_path,
        "aider",
        _options(bins["aider"], record, "crash-then-fix"),
        iterations=2,
        debug_tries=1,
    )
    seed, broken, fixed = nodes
    assert broken.status == NodeStatus.FAILED and broken.failure.stage == FailureStage.RUN
    assert fixed.kind == NodeKind.DEBUG and fixed.repair_of == broken.id
    assert fixed.status == NodeStatus.EVALUATED and fixed.score.primary < seed.score.primary
    assert "-raise RuntimeError('stand-in bug')" in fixed.diff
    # no HYPOTHESIS.md from the repair: the original hypothesis is carried on
    assert fixed.hypothesis == "Repair: Raise the slope to 3 (with a bug)."
    repair_task = _calls(record)[1]["task"]
    assert "## Repair" in repair_task and "stand-in bug" in repair_task


# --------------------------------------------------------------------------- one call


def test_a_failing_tool_is_an_agent_error_with_its_output(host, bins, record):
    agent = host.create("agents", "aider", _options(bins["aider"], record, "fail"))
    with pytest.raises(AgentError, match="aider exited with code 3") as caught:
        agent.propose(_context())
    assert "401 invalid api key" in str(caught.value)


def test_no_change_is_an_agent_error(host, bins, record):
    agent = host.create("agents", "codex", _options(bins["codex"], record, "nochange"))
    with pytest.raises(AgentError, match="codex made no change to the program"):
        agent.propose(_context())


def test_deleted_files_are_kept_and_said(host, bins, record):
    agent = host.create("agents", "claude-code", _options(bins["claude"], record, "delete"))
    source = {"main.py": SEED_MAIN, "helper.py": "HELP = 1\n"}
    proposal = agent.propose(_context(source))
    assert sorted(proposal.files) == ["main.py"] and "SLOPE = 3.0" in proposal.files["main.py"]
    assert "Deleting files is not supported; kept: helper.py." in proposal.rationale


def test_the_summary_stands_in_for_a_missing_hypothesis_file(host, bins, record):
    agent = host.create("agents", "codex", _options(bins["codex"], record, "no-hypothesis"))
    proposal = agent.propose(_context())
    assert proposal.hypothesis.startswith("Raised SLOPE to 3.0 so the line matches the data.")
    assert "Done." in proposal.rationale


def test_the_tool_gets_only_allow_listed_variables(host, bins, record, monkeypatch):
    secrets = {
        "OPENAI_API_KEY": "sk-allowed-for-aider",
        "ANTHROPIC_API_KEY": "sk-ant-allowed-for-aider",
        "MY_SERVICE_TOKEN": "tok-never",
        "AWS_SECRET_ACCESS_KEY": "aws-never",
        "GITHUB_TOKEN": "ghp-never",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    host.create("agents", "aider", _options(bins["aider"], record)).propose(_context())
    host.create("agents", "codex", _options(bins["codex"], record)).propose(_context())
    options = _options(bins["aider"], record, env_allow=[])
    host.create("agents", "aider", options).propose(_context())
    aider_env, codex_env, bare_env = (call["env"] for call in _calls(record))

    def secret_looking(env: dict[str, str]) -> set[str]:
        # the base list holds no secret, though SSL_CERT_FILE (a CA bundle path) looks like one
        return {k for k in env if is_secret_name(k) and k not in TOOL_ENV_BASE}

    assert aider_env["OPENAI_API_KEY"] == "sk-allowed-for-aider"
    assert secret_looking(aider_env) == {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
    assert secret_looking(codex_env) == {"OPENAI_API_KEY"}
    assert not secret_looking(bare_env)
    assert not set(secrets.values()) & set(bare_env.values())
    for env in (aider_env, codex_env, bare_env):
        assert env["PATH"] == os.environ["PATH"] and env["HOME"] == os.environ["HOME"]
        assert env["STANDIN_BEHAVIOUR"] == "improve"  # the `env` option
        assert "PYTEST_CURRENT_TEST" not in env and "RLAB_CACHE_HOME" not in env


def test_environment_globs_and_fixed_values():
    parent = {"PATH": "/bin", "AIDER_MODEL": "m", "AIDER_X": "x", "OTHER": "o", "HOME": "/h"}
    env = tool_environment(parent, ["AIDER_*"], {"OPENAI_API_BASE": "http://127.0.0.1:1/v1"})
    assert env == {
        "PATH": "/bin",
        "HOME": "/h",
        "AIDER_MODEL": "m",
        "AIDER_X": "x",
        "OPENAI_API_BASE": "http://127.0.0.1:1/v1",
    }


def test_hypothesis_file_parsing():
    text = "# Hypothesis\n\n**Hypothesis:** Use slope 3 because\nthe trend is 3.\n\nWhy: data."
    assert split_hypothesis(text) == ("Use slope 3 because the trend is 3.", "Why: data.")
    long = "Use slope 3. " + "More words. " * 40
    hypothesis, rest = split_hypothesis(long)
    assert hypothesis == "Use slope 3." and rest.startswith("More words.")


@pytest.mark.parametrize(
    "agent, install",
    [
        ("aider", "uv tool install aider-chat"),
        ("claude-code", "npm install -g @anthropic-ai/claude-code"),
        ("codex", "npm install -g @openai/codex"),
    ],
)
def test_a_missing_executable_is_one_sentence_naming_the_install(host, tmp_path, agent, install):
    with pytest.raises(RlabUserError) as caught:
        host.create("agents", agent, {"executable": str(tmp_path / "no-such-tool")})
    message = str(caught.value)
    assert install in message and "-o agent.executable=PATH" in message
    assert message.endswith(".") and ". " not in message  # one sentence


# --------------------------------------------------------------------------- the rlab CLI


def _rlab(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    environ.update(
        RLAB_PLUGIN_MODULES="rlab_core.testing.toy.plugin",
        RLAB_CACHE_HOME=str(tmp_path / "rlab-cache"),
        COLUMNS="250",
        **env,
    )
    return subprocess.run(
        [RLAB, *args], env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def test_cli_missing_executable_exits_2_without_traceback(tmp_path):
    done = _rlab(
        ["run", "toy:line", "--agent", "aider", "-i", "1", "-o", "agent.executable=no-such-aider"],
        tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "`no-such-aider` executable, which is not found" in done.stderr
    assert "uv tool install aider-chat" in done.stderr


def test_cli_options_from_config_file_and_command_line(tmp_path, bins, record):
    config = tmp_path / "run.yaml"
    options = _options(bins["codex"], record, model="from-the-file")
    config.write_text(yaml.safe_dump({"agent": "codex", "agent_options": options}))
    done = _rlab(
        ["run", "toy:line", "--config", str(config), "-i", "1", "-o", "agent.model=from-the-cli"],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (call,) = _calls(record)
    assert call["argv"][call["argv"].index("--model") + 1] == "from-the-cli"
    listing = _rlab(["list", "agents"], tmp_path)
    assert listing.returncode == 0, listing.stderr
    for name in ("aider", "claude-code", "codex", "executable", "timeout_s", "env_allow"):
        assert name in listing.stdout
    assert "Wall-clock limit of one call" in listing.stdout


# --------------------------------------------------------------------------- real aider

AIDER_REPLY = """I will raise the slope to match the data.

main.py
```python
<<<<<<< SEARCH
SLOPE = 1.0
=======
SLOPE = 3.0
>>>>>>> REPLACE
```

HYPOTHESIS.md
```
<<<<<<< SEARCH
=======
Raise the slope to 3 because the data follow y = 3x + 1.
>>>>>>> REPLACE
```
"""


@pytest.mark.skipif(
    not AIDER,
    reason="aider is not installed here; install it (`uv tool install aider-chat`) or set "
    "RLAB_TEST_AIDER to its executable to run the real aider against the fake OpenAI server",
)
def test_real_aider_against_the_fake_openai_server(host, tmp_path, rlab_cache, monkeypatch):
    with FakeLLM(api_key="sk-fake-aider") as llm:
        llm.script(Reply(AIDER_REPLY, input_tokens=1500, output_tokens=60))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-aider")
        monkeypatch.setenv("OPENAI_API_BASE", llm.openai_url)
        options = {
            "executable": AIDER,
            "model": "openai/gpt-4o-mini",
            "edit_format": "diff",
            "timeout_s": 120,
            # a fresh HOME, and litellm's bundled price list instead of a download
            "env": {"HOME": str(tmp_path / "home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        }
        _, nodes = _run(host, tmp_path, "aider", options)
    n1 = nodes[1]
    assert n1.status == NodeStatus.EVALUATED, n1.failure
    assert "-SLOPE = 1.0\n+SLOPE = 3.0\n" in n1.diff and n1.changed_files == ["main.py"]
    assert n1.hypothesis == "Raise the slope to 3 because the data follow y = 3x + 1."
    assert (n1.usage.input_tokens, n1.usage.output_tokens) == (1500, 60)
    (request,) = llm.requests
    assert request.path == "/v1/chat/completions" and request.key == "sk-fake-aider"
    asked = "\n".join(request.user_texts())
    assert "# Task toy:line" in asked and "HYPOTHESIS.md" in asked
