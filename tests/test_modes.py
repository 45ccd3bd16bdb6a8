"""The core's modes, each used through the real path: `rlab run -m`, or build_run_config."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, toy_config

from rlab_core.config import build_run_config
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.runner import start_run

# each step raises the slope towards the toy task's true line: every one is a real gain
GAINS = [
    {
        "hypothesis": f"slope {1 + 0.5 * (i + 1)}",
        "edits": [edit(f"SLOPE = {1 + 0.5 * i}\n", f"SLOPE = {1 + 0.5 * (i + 1)}\n")],
    }
    for i in range(4)
]


def _nodes(run_dir: Path) -> list[str]:
    """The kinds of the run's nodes; a run with seed replicates or finalists fails here."""
    state = replay(run_dir / "journal.jsonl")
    assert state.replicates == {} and state.seed_noise is None
    return [str(node.kind) for node in state.tree.nodes.values()]


def test_fast_debug_runs_the_toy_task_end_to_end_in_seconds(tmp_path):
    config = toy_config(tmp_path, GAINS)
    started = time.monotonic()
    done = subprocess.run(
        [RLAB, "run", "-m", "FAST_DEBUG", "--config", str(config)],
        env=cli_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < 45, f"FAST_DEBUG took {elapsed:.0f} s"
    assert "iteration budget reached (2/2)" in done.stdout

    run_dir = next((tmp_path / "runs").iterdir())
    recorded = json.loads((run_dir / "run.json").read_text())
    assert {
        key: recorded["config"][key]
        for key in ("iterations", "time_budget_s", "debug_tries", "smoke_run", "timeout_s")
    } == {
        "iterations": 2,
        "time_budget_s": 600,
        "debug_tries": 0,
        "smoke_run": True,
        "timeout_s": 120,
    }
    assert (recorded["config"]["finalists"], recorded["config"]["noise_seeds"]) == (0, 0)
    assert recorded["config"]["resamples"] == 200
    # the mode's candidate timeout, not the toy task's 20 s, is the limit in effect
    assert recorded["limits"]["timeout_s"] == 120
    # the smoke run ran before the full one, and no seed replicate or finalist was evaluated
    assert (run_dir / "nodes" / "n0000" / "smoke_log.txt").is_file()
    assert len(_nodes(run_dir)) == 3  # the seed and two iterations


def test_minimal_runs_and_stops_on_the_first_stall(toy_host, tmp_path, rlab_cache):
    stall = [
        GAINS[0],
        {
            "hypothesis": "same slope again",
            "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 0.0  # same\n")],
        },
    ]
    cli = {
        "task": "toy:line",
        "agent": "scripted",
        "agent_options": {"script": [*stall, *GAINS[1:]]},
        "out": tmp_path / "runs",
        "finalists": 0,
        "noise_seeds": 0,
        "acceptance": "any",
    }
    config = build_run_config(toy_host, cli=cli, mode="MINIMAL")
    assert (config.iterations, config.window, config.min_iterations, config.debug_tries) == (
        3,
        1,
        1,
        1,
    )

    outcome = start_run(toy_host, config)
    assert outcome.stop_reason.startswith("converged: best validation score gained 0"), (
        outcome.stop_reason
    )
    recorded = json.loads((outcome.run.root / "run.json").read_text())["config"]
    assert (recorded["iterations"], recorded["window"], recorded["min_iterations"]) == (3, 1, 1)
    assert outcome.best is not None and outcome.best.id == "n0001"  # the one real gain won
    assert len(_nodes(outcome.run.root)) == 3  # seed, the gain, the stall: then it stopped


def test_thorough_sets_a_tree_search_and_the_command_line_still_wins(toy_host):
    config = build_run_config(toy_host, cli={"iterations": 7}, mode="thorough")
    assert config.strategy == "tree" and (config.window, config.min_iterations) == (5, 10)
    assert config.debug_tries == 2 and config.iterations == 7  # -i over the mode's 40


@pytest.mark.parametrize(("cpus", "workers"), [(1, 1), (2, 2), (64, 4), (None, 1)])
def test_heavy_experimentation_never_asks_for_more_workers_than_cpus(monkeypatch, cpus, workers):
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    host = PluginHost(use_entry_points=False, strict=True)  # registration reads the machine
    config = build_run_config(host, cli={}, mode="HEAVY_EXPERIMENTATION")
    assert config.workers == workers
    assert (config.strategy, config.iterations, config.time_budget_s) == ("tree", 200, 43200)
    assert (config.finalists, config.finalist_seeds, config.noise_seeds) == (5, 3, 4)
    assert (config.window, config.min_iterations, config.debug_tries) == (8, 20, 3)


def test_family_modes_come_only_with_their_plugin(plugin_host):
    names = set(plugin_host.available("modes"))
    assert {"MINIMAL", "THOROUGH", "FAST_DEBUG", "HEAVY_EXPERIMENTATION"} <= names
    assert not names & {"RELBENCH_CONFIGS", "MLE_CONFIGS"}


def test_rlab_list_modes_writes_down_each_modes_values(tmp_path):
    listed = subprocess.run(
        [RLAB, "list", "modes"],
        env=cli_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    for shown in ("FAST_DEBUG", "timeout_s=120", "HEAVY_EXPERIMENTATION", "finalist_seeds=3"):
        assert shown in listed.stdout
