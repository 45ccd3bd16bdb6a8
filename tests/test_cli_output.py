"""What rlab prints, through the real ``rlab`` executable on real toy runs.

``rlab show`` at 80 columns (hypotheses wrap in their own column; failed rows say why),
piped output that is never hard-wrapped, the end-of-run summary (``best/``, the
submission, commands the way rlab was started), a run in which no seed ran, ``--json`` on
``show`` and ``final``, medals in words, and the live footer's words and its exit.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, extra, toy_config
from rich.console import Console

from rlab_core.cli.final_cmd import final_lines
from rlab_core.cli.run_cmd import invoked_as
from rlab_core.journal import replay
from rlab_core.report.live import PHASE_WORDS, LiveProgress
from rlab_core.report.numbers import medal_text
from rlab_core.testing.toy import SEED_DIR

SCRIPT = [
    {
        "hypothesis": "Raise the slope to 2 because the points rise about three units per unit "
        "of x, so a steeper line fits the training points better than the flat seed",
        "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
    },
    {
        "hypothesis": "Crash on purpose after printing a line, to show how a failed candidate "
        "is reported with its stage, its cause and its exit code",
        "edits": [extra("import sys; print('about to fail'); sys.exit('boom at import')")],
    },
    {
        "hypothesis": "Set the intercept to one since the generating line crosses the y axis "
        "at one, which removes the constant offset left by the seed",
        "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n")],
    },
]


def _env(cwd: Path, columns: int | None, **extra_env: str) -> dict[str, str]:
    env = cli_env(cwd, COLUMNS=str(columns), TERM="dumb", **extra_env)
    if columns is None:
        del env["COLUMNS"]  # as `rlab ... | tail` gets it: no width asked for
    if "UV_RUN_RECURSION_DEPTH" not in extra_env:
        env.pop("UV_RUN_RECURSION_DEPTH", None)  # as if started without `uv run`
    return env


def _rlab(args: list[str], cwd: Path, columns: int | None = 200, **extra_env: str):
    return subprocess.run(
        [RLAB, *args],
        env=_env(cwd, columns, **extra_env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One real run, piped (rich's width: 80 columns): two evaluated nodes and a crash
    without repair."""
    # a deep folder: the run folder's path is longer than 80 characters
    root = tmp_path_factory.mktemp("output") / ("a-rather-long-folder-name-" * 2)
    root.mkdir()
    config = toy_config(root, SCRIPT, min_iterations=10)
    done = _rlab(["run", "--config", str(config), "-i", "3"], root, columns=None)
    assert done.returncode == 0, done.stdout + done.stderr
    return root, done


def _run_dir(root: Path) -> Path:
    return next((root / "runs").iterdir())


# --------------------------------------------------------------------------- rlab show


def _blocks(out: str) -> dict[str, list[str]]:
    """The table's lines per node: from its id's line to the next id's line."""
    table = out[out.index("nodes of") : out.index("★ best:")]
    blocks: dict[str, list[str]] = {}
    current = None
    for line in table.splitlines():
        match = re.match(r"│ (n\d{4})", line)
        if match:
            current = match.group(1)
            blocks[current] = []
        if current and line.startswith("│"):
            blocks[current].append(line)
    return blocks


def test_show_at_80_columns_wraps_each_hypothesis_in_its_own_column(toy_run):
    root, _ = toy_run
    out = _rlab(["show"], root, columns=80).stdout
    assert max(len(line) for line in out.splitlines()) <= 80, out
    tree = replay(_run_dir(root) / "journal.jsonl").tree
    blocks = _blocks(out)
    assert sorted(blocks) == sorted(n.id for n in tree)
    for node in tree:
        block = blocks[node.id]
        # the hypothesis is in the node's own row, from its first words on, never a sliver
        cells = " ".join(line.split("│")[2].strip() for line in block)
        assert " ".join(node.hypothesis.split()[:6]) in cells, block
        assert all(len(line.split("│")[2]) >= 60 for line in block)
        assert len(block) <= 4, block  # facts, two lines of hypothesis, a failure
    crashed = blocks["n0002"]
    assert "failed" in crashed[0] and "exit 1" in crashed[0]  # the cause on the facts' line
    assert "boom at import" in " ".join(crashed)
    assert "1.69" in blocks["n0001"][0] and "better" in blocks["n0001"][0]


def test_show_calls_a_failure_without_repair_failed(toy_run):
    root, _ = toy_run
    assert replay(_run_dir(root) / "journal.jsonl").tree.get("n0002").repair_of is None
    for columns in (80, 200):
        out = _rlab(["show"], root, columns=columns).stdout
        assert "recovered" not in out
    wide = _blocks(_rlab(["show"], root, columns=200).stdout)
    assert "│ failed " in wide["n0002"][0] and "exit 1" in wide["n0002"][0]


def test_show_json_is_the_run_and_nothing_else(toy_run):
    root, _ = toy_run
    done = _rlab(["show", "--json"], root, columns=80)
    data = json.loads(done.stdout)  # the whole of stdout is one JSON document
    run = _run_dir(root)
    assert data["run"] == run.name and data["task"] == "toy:line" and data["stopped"]
    assert data["stop_reason"].startswith("iteration budget reached")
    assert data["best"] == "n0003" and data["best_dir"] == str(run / "best")
    nodes = {n["id"]: n for n in data["nodes"]}
    tree = replay(run / "journal.jsonl").tree
    for node in tree:
        row = nodes[node.id]
        assert row["parent"] == node.parent_id and row["kind"] == str(node.kind)
        assert row["hypothesis"] == node.hypothesis and row["accepted"] == node.accepted
        assert row["score"] == (node.score.primary if node.score else None)
        assert row["log"] == str(run / "nodes" / node.id / "log.txt")
    better = nodes["n0001"]
    assert better["standard_error"] > 0 and better["gain"]["verdict"] == "better"
    assert better["gain"]["against"] == "n0000" and better["outcome"] == "improved"
    crashed = nodes["n0002"]
    assert crashed["outcome"] == "failed" and crashed["failure"]["stage"] == "run"
    assert "exit 1" in crashed["failure"]["cause"] and "boom" in crashed["failure"]["message"]


# --------------------------------------------------------------------------- piped output


def test_piped_run_output_is_not_hard_wrapped(toy_run):
    root, done = toy_run
    run = _run_dir(root)
    lines = done.stdout.splitlines()
    assert len(str(run)) > 80  # the paths below would have been broken at 80 columns
    assert f"run folder: {run}" in lines
    assert f"best program: {run / 'best' / 'src'}" in lines
    assert f"submission: {run / 'best' / 'submission.json'}" in lines
    (hint,) = [line for line in lines if line.startswith("next: ")]
    assert f"`rlab show {run}`" in hint and f"{run / 'nodes'}/<id>/log.txt" in hint
    assert any(f"`rlab final {run}`" in line for line in lines)
    # each node's line and its hypothesis stay one line each
    assert any("Raise the slope to 2 because" in ln and "than the flat seed" in ln for ln in lines)
    show = _rlab(["show"], root, columns=None).stdout.splitlines()
    assert any(
        ln.startswith("acceptance: ") and ln.endswith("resamples over points)") for ln in show
    )


def test_suggested_commands_follow_how_rlab_was_started(monkeypatch):
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    assert invoked_as() == "uv run rlab"
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH")
    monkeypatch.setattr("sys.argv", ["/somewhere/.venv/bin/rlab", "run"])
    assert invoked_as() == "rlab"
    monkeypatch.setattr("sys.argv", ["-c"])
    assert invoked_as() == "rlab"


def test_a_run_in_which_no_seed_ran_exits_3_with_the_seeds_failure(tmp_path):
    seed = tmp_path / "seed"
    shutil.copytree(SEED_DIR, seed)
    main = seed / "main.py"
    crash = "import sys\nsys.exit('the seed cannot find its [bold]weights[/] file')\n"
    main.write_text(main.read_text().replace("# extra behaviour\n", crash))
    done = _rlab(
        ["run", "toy:line", "--seed-candidate", str(seed), "-i", "1"],
        tmp_path,
        columns=80,
        UV_RUN_RECURSION_DEPTH="1",
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    err = " ".join(done.stderr.split())
    assert "no node was evaluated: no seed candidate ran successfully" in err
    # the seed's own failure, markup literal, and where its log is
    assert "the seed cannot find its [bold]weights[/] file" in err
    run = next((tmp_path / "runs").iterdir())
    assert f"the seed's log: {run / 'nodes' / 'n0000' / 'log.txt'}" in done.stderr
    assert f"`uv run rlab show {run}`" in done.stderr


# --------------------------------------------------------------------------- rlab final


def test_final_json_is_the_final_report(toy_run, tmp_path):
    root, _ = toy_run
    shutil.copytree(root / "runs", tmp_path / "runs")
    done = _rlab(["final", "--json"], tmp_path, columns=80)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == json.loads((_run_dir(tmp_path) / "final_report.json").read_text())
    assert report["node"] == "n0003" and report["test_metrics"]["rmse"] > 0
    human = _rlab(["final", "--force"], tmp_path, columns=80).stdout
    assert "test metrics: rmse " in human and "{" not in human and "medal" not in human


#: the test-side fields of a final_report.json from an mle-bench grading (the fields of
#: rlab_mle's REPORT_FIELDS; the metrics hold the numeric ones as floats)
GRADING = {
    "competition_id": "spaceship-titanic",
    "score": 0.80115,
    "gold_threshold": 0.82066,
    "silver_threshold": 0.81388,
    "bronze_threshold": 0.80967,
    "median_threshold": 0.79565,
    "any_medal": False,
    "gold_medal": False,
    "silver_medal": False,
    "bronze_medal": False,
    "above_median": True,
    "submission_exists": True,
    "valid_submission": True,
    "is_lower_better": False,
}


def _mle_report(**grading) -> dict:
    fields = {**GRADING, **grading}
    numbers = {k: float(v) for k, v in fields.items() if isinstance(v, bool | int | float)}
    return {
        "node": "n0004",
        "primary_metric": "accuracy",
        "higher_is_better": True,
        "val_primary": 0.8,
        "val_standard_error": 0.01,
        "test_metrics": {"accuracy": fields["score"], **numbers},
        "test_primary": fields["score"],
        "test_details": {"grading_report": fields},
        "audit": {"clean": True, "findings": []},
    }


def test_final_says_medals_in_words():
    none = _mle_report()
    assert medal_text(none) == (
        "medal: none (gold ≥ 0.82066, silver ≥ 0.81388, bronze ≥ 0.80967, above the median 0.79565)"
    )
    silver = _mle_report(score=0.815, silver_medal=True, any_medal=True)
    assert medal_text(silver).startswith("medal: silver (gold ≥ 0.82066")
    lower = _mle_report(is_lower_better=True, gold_medal=True, above_median=False)
    assert medal_text(lower) == (
        "medal: gold (gold ≤ 0.82066, silver ≤ 0.81388, bronze ≤ 0.80967, "
        "not above the median 0.79565)"
    )
    # from the metrics alone (no grading report), as older reports hold them
    assert medal_text({**silver, "test_details": {}}).startswith("medal: silver")
    text = "\n".join(final_lines(silver, "/runs/r/final_report.json"))
    assert "medal: silver" in text and "test metrics: accuracy 0.815, score 0.815" in text
    assert "gold_medal" not in text and "threshold" not in text and "{" not in text
    assert medal_text({"test_metrics": {"rmse": 1.0}}) is None


# --------------------------------------------------------------------------- live footer


def _events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]


def test_the_footer_says_what_the_run_is_doing(toy_run):
    events = _events(_run_dir(toy_run[0]))
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    progress = LiveProgress(console, iterations_max=3)
    said = [progress.waiting_words()]
    for event in events:
        progress(event)
        if not progress.running:
            said.append(progress.waiting_words())
    kinds = [e["type"] for e in events]
    first_agent_node = next(
        i for i, e in enumerate(events) if e["type"] == "node_started" and e["kind"] != "seed"
    )
    assert said[0] == PHASE_WORDS["preparing"] == "preparing the task's data…"
    # after run_started and the seed: the seeds, then the noise measurement's replicates
    assert said[1] == "running the seeds…" and "running seed replicates…" in said
    waiting = said.index("waiting for the agent's next hypothesis…")
    assert waiting > said.index("running seed replicates…")
    assert kinds.index("seed_noise_measured") < first_agent_node
    assert "finishing the run…" in said[waiting:]  # the budget is spent: no agent is asked
    assert said[-1] == ""  # stopped


def test_the_footer_is_gone_before_the_stop_line(toy_run):
    events = _events(_run_dir(toy_run[0]))
    terminal = Console(file=io.StringIO(), width=120, force_terminal=True, color_system=None)
    with LiveProgress(terminal, iterations_max=3) as progress:
        for event in events:
            progress(event)
        assert progress.live is None  # removed by run_stopped itself
        terminal.print("SUMMARY")
    text = terminal.file.getvalue()
    after = text[text.index("stopped:") :]
    assert "iteration 3/3" not in after and "finishing" not in after, after
    assert after.rstrip().endswith("SUMMARY")
