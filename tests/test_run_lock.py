"""One owner per run folder: a live run refuses a second `resume` or `final`, with real processes."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, extra, toy_config

from rlab_core.errors import RunLockedError
from rlab_core.journal import Journal, read_events
from rlab_core.run_folder import open_run
from rlab_core.run_lock import LOCK_NAME, RunLock

# the candidate of step 0 waits until the test drops `go` into the run's cache folder, so the
# run stays live, deterministically, for as long as the test needs it
GATE = extra(
    "import os as _os, pathlib as _pl, time as _t\n"
    "_go = _pl.Path(_os.environ['RLAB_CACHE_DIR']) / 'go'\n"
    "_end = _t.time() + 60\n"
    "while not _go.exists() and _t.time() < _end:\n"
    "    _t.sleep(0.05)\n"
)
SCRIPT = [
    {"hypothesis": "wait at the gate", "edits": [GATE]},
    {"hypothesis": "slope 2", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")]},
]


def _env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path, COLUMNS="1000")  # log lines unwrapped, for the assertions


def _rlab(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RLAB, *args],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _start_gated_run(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A real `rlab run` whose second node waits at the gate; returns it once it waits."""
    config = toy_config(tmp_path, SCRIPT, finalists=0, noise_seeds=0, min_iterations=10)
    proc = subprocess.Popen(
        [RLAB, "run", "--config", str(config), "-i", "1"],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 90
    while time.time() < deadline:
        for journal in (tmp_path / "runs").glob("*/journal.jsonl"):
            events, _ = read_events(journal)
            if any(e["type"] == "node_started" and e["id"] == "n0001" for e in events):
                return proc, journal.parent
        assert proc.poll() is None, "the run ended before its candidate reached the gate"
        time.sleep(0.05)
    raise AssertionError("the run never reached the gate")


def _open_gate(run_dir: Path) -> None:
    (run_dir / "cache" / "go").write_text("go")


def test_a_live_run_refuses_resume_and_final_and_lets_show_read(tmp_path: Path) -> None:
    proc, run_dir = _start_gated_run(tmp_path)
    try:
        owner = json.loads((run_dir / LOCK_NAME).read_text())
        assert owner["pid"] == proc.pid and owner["command"] == "run"
        journal_before = (run_dir / "journal.jsonl").read_bytes()

        for command in ("resume", "final"):
            refused = _rlab([command, str(run_dir)], tmp_path)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            text = " ".join(refused.stderr.split())
            assert (
                f"is in use by `rlab run` (pid {proc.pid} on host {socket.gethostname()}, since"
                in text
            ), text
            assert "wait for it to finish or stop it" in text and "Traceback" not in text
        # reading never takes the lock
        shown = _rlab(["show", str(run_dir)], tmp_path)
        assert shown.returncode == 0, shown.stderr
        # the refused commands wrote nothing: the live run's journal is as it was
        assert (run_dir / "journal.jsonl").read_bytes() == journal_before
        assert not (run_dir / "final_report.json").exists()
    finally:
        _open_gate(run_dir)
        assert proc.wait(timeout=60) == 0
    assert (run_dir / LOCK_NAME).read_text() == ""  # released: no owner left to report

    # once the run has ended, resume goes on with the same journal
    resumed = _rlab(["resume", str(run_dir), "-i", "2"], tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Took over" not in resumed.stderr
    events, torn = read_events(run_dir / "journal.jsonl")
    assert not torn and [e["seq"] for e in events] == list(range(len(events)))
    started = [e["id"] for e in events if e["type"] == "node_started"]
    assert started == ["n0000", "n0001", "n0002"]
    assert [e["type"] for e in events].count("run_resumed") == 1


def test_a_lock_left_by_a_killed_run_is_taken_over_and_said(tmp_path: Path) -> None:
    proc, run_dir = _start_gated_run(tmp_path)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    _open_gate(run_dir)  # the resumed run's candidate passes the gate at once
    left = json.loads((run_dir / LOCK_NAME).read_text())
    assert left["pid"] == proc.pid  # a SIGKILL releases nothing: the file still names it

    resumed = _rlab(["resume", str(run_dir), "-i", "2"], tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    said = " ".join(resumed.stderr.split())
    assert f"Took over the lock of {run_dir} from `rlab run` (pid {proc.pid} on host" in said
    assert "which is no longer running (it was killed or crashed)" in said
    events, _ = read_events(run_dir / "journal.jsonl")
    assert any(e["type"] == "node_abandoned" and e["id"] == "n0001" for e in events)
    assert (run_dir / LOCK_NAME).read_text() == ""


def test_the_lock_names_its_owner_and_is_free_again_after_release(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a second owner, even in the same process, is refused while the first holds it
    refused = pytest.raises(RunLockedError, match=rf"`rlab resume` \(pid {os.getpid()} on host ")
    with RunLock(tmp_path, "resume"), refused:
        RunLock(tmp_path, "final").acquire()
    with RunLock(tmp_path, "final") as again:
        assert json.loads(again.path.read_text())["command"] == "final"
    assert "Took over" not in caplog.text  # each owner let go cleanly

    # a file naming a process that has died, with no flock behind it: taken over, and said
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / LOCK_NAME).write_text(
        json.dumps({"pid": dead.pid, "host": socket.gethostname(), "command": "run", "since": 0})
    )
    with caplog.at_level(logging.WARNING, logger="rlab_core.run_lock"), RunLock(tmp_path, "run"):
        pass
    assert f"`rlab run` (pid {dead.pid} on host" in caplog.text
    assert "which is no longer running" in caplog.text


def test_a_run_read_before_its_lock_was_taken_is_read_again_if_it_changed(run_toy) -> None:
    outcome = run_toy(
        [{"hypothesis": "slope 2", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")]}]
    )
    opened = open_run(outcome.run.root)
    assert opened.current() is opened  # nothing happened since: no second reading
    # another process wrote on before this one got the lock: its events are read
    journal = Journal(outcome.run.journal_path)
    journal.append("node_started", id="n0002", parent_id="n0001", kind="improve", iteration=2)
    journal.close()
    now = opened.current()
    assert now is not opened and now.state.in_flight == ["n0002"] and not opened.state.in_flight
