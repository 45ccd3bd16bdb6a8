"""Tuning inside the loop: TPE trials as ordinary nodes, resumed after SIGKILL and run by two
workers without repeating a trial, and the stop rule that waits for tuning."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.run_folder import open_run
from rlab_core.runner import resume_run, start_run
from rlab_core.stopping import NOTHING_LEFT
from rlab_core.testing import playbook as playbook_plugin
from rlab_core.testing.toy import plugin as toy_plugin
from rlab_core.testing.toy.benchmark import SEED_DIR

TUNABLE = {
    "SLOPE = 1.0\n": "SLOPE = 1.0  # tune: float -5.0..5.0\n",
    "INTERCEPT = 0.0\n": "INTERCEPT = 0.0  # tune: float -5.0..5.0\n",
}


def tunable_seed(folder: Path, sleep_s: float = 0.0) -> Path:
    """The toy seed with its slope and intercept declared tunable (and a run time)."""
    source = (SEED_DIR / "main.py").read_text()
    for old, new in TUNABLE.items():
        assert old in source
        source = source.replace(old, new)
    if sleep_s:
        source = source.replace(
            "def main():\n", f"def main():\n    __import__('time').sleep({sleep_s})\n"
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text(source)
    return folder


@pytest.fixture
def host() -> PluginHost:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(playbook_plugin, name="ranked-playbook")
    return host


def trials(tree) -> list:
    return [n for n in tree if n.move_id == "tune"]


def settings(nodes) -> list[tuple]:
    return [tuple(sorted(n.tuning.params.items())) for n in nodes]


def test_the_core_tunes_a_best_the_agent_has_nothing_left_for(host, tmp_path, rlab_cache):
    seed = tunable_seed(tmp_path / "seed")
    config = RunConfig(
        task="toy:line",
        agent="ranked-playbook",  # an empty playbook: no structural move at all
        benchmark_options={"seed_dir": str(seed)},
        out=tmp_path / "runs",
        iterations=20,
        window=6,
        finalists=0,
        noise_seeds=0,
    )
    outcome = start_run(host, config)
    tree = replay(outcome.run.journal_path).tree
    seed_node = tree.get("n0000")
    assert seed_node.tunables == ["SLOPE", "INTERCEPT"]  # in source order
    made = trials(tree)
    # tuning was the one untried kind of move: the study got `window` (6) trials, then the
    # agent and tuning had nothing left
    assert len(made) == 6 and outcome.stop_reason == NOTHING_LEFT
    assert sorted(n.tuning.number for n in made) == [1, 2, 3, 4, 5, 6]
    assert len(set(settings(made))) == 6
    assert {n.tuning.base for n in made} == {"n0000"}
    first = made[0]
    # the hypothesis names the values; the diff shows exactly the declaring lines
    assert "Tuning trial 1 on n0000" in first.hypothesis
    changed = [
        line for line in first.diff.splitlines() if line.startswith("+") and "# tune:" in line
    ]
    assert changed and all(line.startswith(("+SLOPE = ", "+INTERCEPT = ")) for line in changed)
    for node in made:
        assert f"{node.tuning.params['SLOPE']:.4g}" in node.hypothesis or node.tuning.params[
            "SLOPE"
        ] == pytest.approx(1.0)
    # y = 3x + 1: the search found a better line than the seed's, and only a trial that beat
    # its lineage's best beyond the noise is a best
    best = tree.best()
    assert best.score.primary < seed_node.score.primary
    assert best.tuning is not None and best.accepted
    assert (best.versus_best or best.gain).verdict == "better"


def start_in_subprocess(out: Path, tmp_path: Path, seed: Path, workers: int) -> subprocess.Popen:
    """A tuning run of the toy task in its own process, to be killed."""
    script = f"""
from rlab_core.testing import playbook as playbook_plugin
from rlab_core.testing.toy import plugin as toy_plugin
from rlab_core.config import RunConfig
from rlab_core.plugins import PluginHost
from rlab_core.runner import start_run
host = PluginHost(use_entry_points=False, strict=True)
host.register(toy_plugin, name="toy")
host.register(playbook_plugin, name="ranked-playbook")
start_run(host, RunConfig(task="toy:line", agent="ranked-playbook",
    benchmark_options={{"seed_dir": {str(seed)!r}}}, out={str(out)!r}, iterations=30,
    window=10, finalists=0, noise_seeds=0, workers={workers}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    env["RLAB_CACHE_HOME"] = str(tmp_path / "cache")
    env["RLAB_KNOWLEDGE"] = os.environ["RLAB_KNOWLEDGE"]
    env["XDG_DATA_HOME"] = os.environ.get("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)


def wait_for_trials(out: Path, finished_at_least: int) -> Path:
    deadline = time.time() + 90
    while time.time() < deadline:
        for journal in out.glob("*/journal.jsonl"):
            events = [json.loads(x) for x in journal.read_text().splitlines() if x.endswith("}")]
            finished = [
                e for e in events if e["type"] == "node_finished" and e["node"]["move_id"] == "tune"
            ]
            running = sum(e["type"] == "node_started" for e in events) - sum(
                e["type"] == "node_finished" for e in events
            )
            if len(finished) >= finished_at_least and running >= 1:
                return journal
        time.sleep(0.02)
    raise AssertionError("the run never finished that many tuning trials")


@pytest.mark.parametrize("workers", [1, 2])
def test_tuning_resumes_after_sigkill_without_repeating_a_trial(host, tmp_path, workers):
    seed = tunable_seed(tmp_path / "seed", sleep_s=0.3)
    out = tmp_path / "runs"
    proc = start_in_subprocess(out, tmp_path, seed, workers)
    journal = wait_for_trials(out, finished_at_least=3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = replay(journal)
    assert before.stop_reason is None and before.in_flight  # killed mid-trial
    kept = trials(before.tree)

    resumed = resume_run(host, open_run(journal.parent))
    after = replay(resumed.run.journal_path)
    made = trials(after.tree)
    assert {n.id for n in kept} <= {n.id for n in made}  # every finished trial survived
    # the study was rebuilt from the journal: `window` (10) trials in all, none repeated,
    # numbered without a gap or a double (the killed trials were never finished)
    assert len(made) == 10 and after.stop_reason == NOTHING_LEFT
    assert len(set(settings(made))) == 10
    numbers = sorted(n.tuning.number for n in made)
    assert len(set(numbers)) == 10
    if workers == 2:
        overlapping = any(
            a.created_at < b.finished_at and b.created_at < a.finished_at
            for i, a in enumerate(made)
            for b in made[i + 1 :]
        )
        assert overlapping, "two workers never ran two trials at once"


def test_trials_skip_the_smoke_run_that_a_change_of_the_code_gets(host, tmp_path, rlab_cache):
    seed = tunable_seed(tmp_path / "seed")
    moves = [
        {
            "id": "flat",
            "hypothesis": "a flatter line",
            "edits": [{"file": "main.py", "anchor": "# extra behaviour\n", "replacement": "# x\n"}],
        }
    ]
    config = RunConfig(
        task="toy:line",
        agent="ranked-playbook",
        benchmark_options={"seed_dir": str(seed), "smoke_run": True, "playbook": moves},
        out=tmp_path / "runs",
        iterations=6,
        window=3,
        finalists=0,
        noise_seeds=0,
    )
    outcome = start_run(host, config)
    tree = replay(outcome.run.journal_path).tree
    smoked = {n.move_id for n in tree if (outcome.run.node_dir(n.id) / "smoke_log.txt").exists()}
    # the seed and the change of the code ran --debug first; a trial only sets declared
    # values of a program that already ran, so it goes straight to its full run
    assert smoked == {"line-seed", "flat"}
    assert trials(tree)


def test_the_finalists_reserve_counts_only_the_replicates_still_missing(host, tmp_path, rlab_cache):
    from rlab_core.finalists import FinalistSettings, finalist_pool, reserve_s

    seed = tunable_seed(tmp_path / "seed")
    config = RunConfig(
        task="toy:line",
        agent="ranked-playbook",
        benchmark_options={"seed_dir": str(seed)},
        out=tmp_path / "runs",
        iterations=4,
        finalists=3,
        noise_seeds=2,
    )
    outcome = start_run(host, config)
    state = replay(outcome.run.journal_path)
    settings = FinalistSettings(count=3, seeds=2)
    median = sorted(n.timing.candidate_s for n in state.tree.full_fidelity())
    median_s = median[len(median) // 2]
    pool = finalist_pool(state.tree, "significant")[:3]
    empty_slots = 3 - len(pool)
    # after the run every finalist has its two replicates: only a finalist still to come
    # (a slot the pool has not filled) would need its two
    assert reserve_s(state.tree, settings, state.replicates) == pytest.approx(
        median_s * empty_slots * 2
    )
    # counted without them: every finalist's two seeds
    assert reserve_s(state.tree, settings) == pytest.approx(median_s * 3 * 2)
    # before the finalists ran, the seed's replicates were the noise measurement's
    noise_only = {node: seeds for node, seeds in state.replicates.items() if node == "n0000"}
    assert len(noise_only["n0000"]) == 2
    assert reserve_s(state.tree, settings, noise_only) == pytest.approx(median_s * 4)
