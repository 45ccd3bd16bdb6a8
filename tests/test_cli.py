"""The real `rlab` executable: runs, bad input, SIGKILL and resume, show, final."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, extra, toy_config

from rlab_core.journal import read_events, replay


def _rlab(
    args: list[str], tmp_path: Path, timeout: float = 120, **extra_env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RLAB, *args],
        env=cli_env(tmp_path, **extra_env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


SLOW_STEPS = [
    {
        "hypothesis": f"step {i}: slope {1 + 0.25 * (i + 1)}",
        "edits": [
            edit(f"SLOPE = {1 + 0.25 * i}\n", f"SLOPE = {1 + 0.25 * (i + 1)}\n"),
            extra("import time; time.sleep(0.2)"),
        ],
    }
    for i in range(8)
]


def test_run_show_and_final_through_the_cli(tmp_path):
    config = toy_config(tmp_path, SLOW_STEPS[:2], min_iterations=10)
    done = _rlab(["run", "--config", str(config), "-i", "2"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "iteration budget reached (2/2)" in done.stdout
    run_dir = next((tmp_path / "runs").iterdir())
    info = json.loads((run_dir / "run.json").read_text())
    assert info["isolation"]["level"] in ("bubblewrap", "netns", "none")
    assert info["config"]["iterations"] == 2 and info["agent"] == "scripted"

    show = _rlab(["show"], tmp_path)
    assert show.returncode == 0
    assert f"isolation: {info['isolation']['level']}" in show.stdout
    assert (
        "n0000" in show.stdout
        and "n0002" in show.stdout
        and "iteration budget reached" in show.stdout
    )

    final = _rlab(["final"], tmp_path)
    assert final.returncode == 0, final.stderr
    report = json.loads((run_dir / "final_report.json").read_text())
    assert report["selected_by"] == "validation" and report["node"] == "n0002"
    assert report["test_metrics"]["rmse"] > 0 and report["audit"]["clean"] is True
    again = _rlab(["final"], tmp_path)
    assert again.returncode == 2 and "already scored" in again.stderr and "--force" in again.stderr
    forced = _rlab(["final", "--force"], tmp_path)
    assert forced.returncode == 0
    finals = [e for e in read_events(run_dir / "journal.jsonl")[0] if e["type"] == "final"]
    assert [e["forced"] for e in finals] == [False, True]
    assert all(
        "test" not in json.dumps(e) or "rmse" not in json.dumps(e) for e in finals
    )  # no test number in the journal


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "toy:nope"], "Unknown toy task 'nope'; available: toy:line."),
        (["run", "nope:task"], "Unknown benchmark 'nope'; available:"),
        (["run", "toy"], "has no benchmark prefix"),
        (["run", "toy:line", "-d", "gpt"], "Unknown agent 'gpt'; available:"),
        (
            ["run", "toy:line", "--strategy", "mcts"],
            "Unknown strategy 'mcts'; available: best-first, tree; install the plugin",
        ),
        (
            ["run", "toy:line", "--sandbox", "k8s"],
            "Unknown sandbox 'k8s'; available: docker, local, ray; install the plugin",
        ),
        (["run", "toy:line", "-m", "turbo"], "Unknown mode 'turbo'"),
        (
            ["run", "toy:line", "-o", "strategy.depth=3"],
            "Invalid options for strategy 'best-first'",
        ),
        (["run", "toy:line", "-o", "depth=3"], "SECTION.OPTION=VALUE"),
        (["run", "toy:line", "--seed-candidate", "/nonexistent"], "has no main.py"),
        (["resume", "/nonexistent/run"], "is not a run folder"),
        (["show", "latest"], "No runs in runs"),
    ],
)
def test_bad_input_is_one_sentence_with_exit_code_2(tmp_path, args, message):
    done = _rlab(args, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr and done.stderr.count("error:") == 1


def test_config_file_with_a_wrong_type_or_unknown_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("task: toy:line\nwindow: wide\nsurprise: 1\n")
    done = _rlab(["run", "--config", str(bad)], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    text = " ".join(done.stderr.split())
    assert (
        "window: Input should be a valid integer" in text
        and "surprise: Extra inputs are not permitted" in text
    )


def test_unwritable_run_folder(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = _rlab(
        [
            "run",
            "--config",
            str(toy_config(tmp_path, SLOW_STEPS[:1])),
            "--out",
            str(blocker / "runs"),
        ],
        tmp_path,
    )
    assert (
        done.returncode == 2
        and "Cannot create a run folder" in done.stderr
        and "--out" in done.stderr
    )


def test_sigkill_mid_run_then_resume_keeps_every_completed_node(tmp_path):
    config = toy_config(tmp_path, SLOW_STEPS, min_iterations=100, iterations=8)
    env = cli_env(tmp_path)
    proc = subprocess.Popen(
        [RLAB, "run", "--config", str(config)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    journal = None
    deadline = time.time() + 90
    while time.time() < deadline:
        runs = (
            list((tmp_path / "runs").glob("*/journal.jsonl"))
            if (tmp_path / "runs").exists()
            else []
        )
        if runs:
            journal = runs[0]
            events, _ = read_events(journal)
            finished = sum(e["type"] == "node_finished" for e in events)
            started = sum(e["type"] == "node_started" for e in events)
            if finished >= 3 and started > finished:  # killed while a candidate runs
                break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert journal is not None
    before = replay(journal)
    assert before.stop_reason is None and before.in_flight, "the kill should land mid-node"
    kept = {n.id: n.model_dump() for n in before.tree}
    lost = before.in_flight[0]

    done = _rlab(["resume", str(journal.parent)], tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    after = replay(journal)
    for node_id, record in kept.items():
        assert after.tree.get(node_id).model_dump() == record, (
            f"{node_id} changed across the resume"
        )
    events, torn = read_events(journal)
    assert not torn
    assert any(e["type"] == "node_abandoned" and e["id"] == lost for e in events)
    assert lost not in after.tree.nodes
    assert after.stop_reason and after.stop_reason.startswith("iteration budget reached (8/8)")
    assert after.tree.best().hypothesis == "step 7: slope 3.0"  # the search went on to the end
    ids = [e["id"] for e in events if e["type"] == "node_started"]
    assert len(ids) == len(set(ids))
    assert (journal.parent / "best" / "manifest.json").exists()
