"""Storage that fails under a run is the run's failure, not a candidate's; damaged records.

A full disk, a read-only file system or a used-up quota met by the harness's own writes
stops the run with one sentence (exit 2) naming what filled up; the node being written is
left unfinished — no journal line, no ``result.json`` — so ``rlab resume`` makes that move
again. Where the machine lets an unprivileged user mount a small tmpfs in a user namespace,
the disk really fills up; elsewhere the failure is injected at the one place the harness
writes (the journal's write, ``result.json``'s), and everything else runs for real.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import RLAB, cli_env, edit, extra, toy_config

from rlab_core import journal as journal_module, recorder as recorder_module
from rlab_core.errors import StorageFullError
from rlab_core.journal import Journal, read_events, replay
from rlab_core.plugins import PluginHost
from rlab_core.run_folder import RunFolder, open_run
from rlab_core.runner import resume_run

STEPS = [
    {"hypothesis": "slope 2", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")]},
    {"hypothesis": "slope 3", "edits": [edit("SLOPE = 2.0\n", "SLOPE = 3.0\n")]},
]


def _run_dir(tmp_path: Path) -> Path:
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def _finished_ids(run_dir: Path) -> list[str]:
    events, torn = read_events(run_dir / "journal.jsonl")
    assert not torn
    return [e["node"]["id"] for e in events if e["type"] == "node_finished"]


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("where", ["journal", "result.json"])
def test_a_full_disk_under_the_harness_stops_the_run_and_resume_makes_the_move_again(
    where: str,
    run_toy,
    toy_host: PluginHost,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failed: list[bytes] = []
    if where == "journal":
        real = journal_module.write_all

        def write_all(fd: int, data: bytes) -> None:
            if not failed and b'"type":"node_finished"' in data and b'"id":"n0001"' in data:
                failed.append(data)
                real(fd, data[: len(data) // 2])  # the disk fills up in the middle of the line
                raise _enospc()
            real(fd, data)

        monkeypatch.setattr(journal_module, "write_all", write_all)
    else:
        real_write = recorder_module.write_atomically

        def write_atomically(path: Path, text: str) -> None:
            if not failed and path.parent.name == "n0001":
                failed.append(text.encode())
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            real_write(path, text)

        monkeypatch.setattr(recorder_module, "write_atomically", write_atomically)

    with pytest.raises(StorageFullError) as raised:
        run_toy(STEPS, iterations=2)
    run_dir = _run_dir(tmp_path)
    message = str(raised.value)
    written = run_dir / ("journal.jsonl" if where == "journal" else "nodes/n0001/result.json")
    assert message.startswith("No space is left on the file system mounted at /")
    assert f"where rlab wrote {written}; free some space there" in message
    assert f"then continue with `rlab resume {run_dir}`" in message and "\n" not in message

    # nothing half-written: no journal line for the node and no record in its folder; the
    # journal stays whole and readable, and says why the run stopped
    assert failed and _finished_ids(run_dir) == ["n0000"]
    assert not (run_dir / "nodes" / "n0001" / "result.json").exists()
    state = replay(run_dir / "journal.jsonl")
    assert state.in_flight == ["n0001"] and not state.torn_tail
    assert state.stop_reason == f"the run's storage failed: {message}"

    # with room again (the injected failure happens once), resume drops the unfinished
    # node and makes the same move again
    outcome = resume_run(toy_host, open_run(run_dir))
    events, _ = read_events(run_dir / "journal.jsonl")
    assert [e["id"] for e in events if e["type"] == "node_abandoned"] == ["n0001"]
    after = replay(run_dir / "journal.jsonl").tree
    assert [(n.id, n.hypothesis) for n in after if n.kind != "seed"] == [
        ("n0002", "slope 2"),
        ("n0003", "slope 3"),
    ]
    assert all(n.evaluated for n in after)
    assert outcome.stop_reason == "iteration budget reached (2/2)"
    assert json.loads((run_dir / "nodes" / "n0002" / "result.json").read_text())["id"] == "n0002"


def test_a_journal_write_that_cannot_be_taken_back_refuses_every_later_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append("run_started")
    before = path.read_bytes()
    # the kernel's own "no space": /dev/full takes no byte, and cannot be truncated either
    full = os.open("/dev/full", os.O_WRONLY)
    saved = os.dup(journal._fd)
    os.dup2(full, journal._fd)
    try:
        with pytest.raises(OSError) as first:
            journal.append("node_started", id="n0000")
        assert first.value.errno == errno.ENOSPC
        os.dup2(saved, journal._fd)  # even with the disk back, no line may follow a torn one
        with pytest.raises(OSError) as later:
            journal.append("node_started", id="n0000")
        assert later.value is first.value
    finally:
        os.close(full)
        os.close(saved)
        journal.close()
    assert path.read_bytes() == before
    events, torn = read_events(path)
    assert not torn and [e["type"] for e in events] == ["run_started"]


def test_the_message_names_read_only_and_quota_failures(tmp_path: Path) -> None:
    run = RunFolder.create(tmp_path / "runs", "toy:line")
    target = run.node_dir("n0003") / "log.txt"
    read_only = run.storage_error(OSError(errno.EROFS, "Read-only file system", str(target)))
    assert str(read_only).startswith("The file system mounted at /")
    assert "is read-only" in str(read_only) and f"where rlab wrote {target};" in str(read_only)
    assert "make it writable again, then continue with `rlab resume" in str(read_only)
    quota = run.storage_error(OSError(errno.EDQUOT, "Disk quota exceeded"), run.journal_path)
    assert str(quota).startswith("Your disk quota is used up on the file system mounted at")
    assert f"where rlab wrote {run.journal_path}; free space within your quota" in str(quota)
    # copytree gathers its files' errors as text; the errno is read back from it
    gathered = shutil.Error([("a", "b", "[Errno 28] No space left on device: 'b'")])
    with pytest.raises(StorageFullError, match="No space is left"), run.storage_guard():
        raise gathered
    with pytest.raises(PermissionError), run.storage_guard():
        raise PermissionError(errno.EACCES, "Permission denied")  # not storage: unchanged


# ---------------------------------------------------------------- a real, tiny file system

FILLER = (
    "import os as _os\n"
    "def _fill():\n"
    "    cache = _os.environ['RLAB_CACHE_DIR']\n"
    "    if _os.path.exists(cache + '/filled-once'):\n"
    "        return\n"
    "    open(cache + '/filled-once', 'w').close()\n"
    "    fd = _os.open(cache + '/filler', _os.O_WRONLY | _os.O_CREAT)\n"
    "    for size in (65536, 4096, 1):\n"
    "        try:\n"
    "            while True:\n"
    "                _os.write(fd, b'x' * size)\n"
    "        except OSError:\n"
    "            pass\n"
    "    _os.close(fd)\n"
)
#: fills the disk before it writes its predictions: it fails, its log empty (the log is on
#: the full disk too) — the harness must not take that for the candidate's fault
FILL_THEN_CRASH = extra(FILLER + "_fill()\n")
#: writes its predictions, then fills the disk and exits 0: taking its outputs fails
FILL_AT_EXIT = extra(
    FILLER + "import atexit as _atexit\n_atexit.register(lambda: (_fill(), _os._exit(0)))\n"
)

#: The tiny disk's mount point, inside the test's own mount namespace: a short path keeps
#: the journal within the page it has, so the stop reason itself still fits on the full disk
DISK = Path("/mnt")
NAMESPACE_SCRIPT = """
set -u
mount -t tmpfs -o size=4m tmpfs "$DISK" || exit 97
"$RLAB" run --config "$CONFIG" --out "$DISK/runs" -i 2 >"$LOGS/run.out" 2>"$LOGS/run.err"
echo $? >"$LOGS/run.rc"
cp -a "$DISK/runs" "$LOGS/after-run"
rm -f "$DISK"/runs/*/cache/filler
"$RLAB" resume latest --out "$DISK/runs" >"$LOGS/resume.out" 2>"$LOGS/resume.err"
echo $? >"$LOGS/resume.rc"
cp -a "$DISK/runs" "$LOGS/after-resume"
"""


def _tiny_disks() -> bool:
    """Whether this user may mount a tmpfs in a user namespace (unshare, no root needed)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", f"mount -t tmpfs x {DISK}"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


needs_tiny_disks = pytest.mark.skipif(
    not _tiny_disks(), reason="no unprivileged user+mount namespace to mount a tiny tmpfs"
)


@needs_tiny_disks
@pytest.mark.parametrize("candidate", ["crashes on it", "exits 0 on it"])
def test_a_really_full_disk_stops_the_run_and_resume_after_freeing_space_goes_on(
    candidate: str, tmp_path: Path
) -> None:
    filler = FILL_THEN_CRASH if candidate == "crashes on it" else FILL_AT_EXIT
    script = [{"hypothesis": "fill the disk", "edits": [filler]}, *STEPS[:1]]
    config = toy_config(tmp_path, script, finalists=0, noise_seeds=0, min_iterations=10)
    disk, logs = DISK, tmp_path / "logs"
    logs.mkdir()
    env = cli_env(
        tmp_path, DISK=str(disk), LOGS=str(logs), RLAB=RLAB, CONFIG=str(config), COLUMNS="1000"
    )
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", NAMESPACE_SCRIPT],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    stopped = (logs / "run.err").read_text()
    assert (logs / "run.rc").read_text().strip() == "2", stopped + (logs / "run.out").read_text()
    said = " ".join(stopped.split())
    assert f"No space is left on the file system mounted at {disk} (" in said, said
    assert "free some space there, then continue with `rlab resume" in said
    assert "Traceback" not in stopped

    (run_dir,) = (logs / "after-run").iterdir()
    assert _finished_ids(run_dir) == ["n0000"]  # the node on the full disk was not recorded
    state = replay(run_dir / "journal.jsonl")
    assert state.in_flight == ["n0001"]
    assert state.stop_reason and state.stop_reason.startswith(
        "the run's storage failed: No space is left"
    )
    assert not (run_dir / "nodes" / "n0001" / "result.json").exists()

    resumed = (logs / "resume.out").read_text() + (logs / "resume.err").read_text()
    assert (logs / "resume.rc").read_text().strip() == "0", resumed
    (run_dir,) = (logs / "after-resume").iterdir()
    after = replay(run_dir / "journal.jsonl")
    made = [(n.id, n.hypothesis, n.evaluated) for n in after.tree if n.kind != "seed"]
    assert made == [("n0002", "fill the disk", True), ("n0003", "slope 2", True)]
    assert after.stop_reason == "iteration budget reached (2/2)"


@needs_tiny_disks
def test_a_read_only_run_folder_is_one_sentence_and_show_still_reads_it(tmp_path: Path) -> None:
    config = tmp_path / "toy.yaml"
    config.write_text(
        yaml.safe_dump({"task": "toy:line", "agent": "scripted", "finalists": 0, "noise_seeds": 0})
    )
    disk, logs = DISK, tmp_path / "logs"
    logs.mkdir()
    script = """
set -u
mount -t tmpfs -o size=4m tmpfs "$DISK" || exit 97
"$RLAB" run --config "$CONFIG" --out "$DISK/runs" -i 1 >/dev/null 2>&1 || exit 98
mount -o remount,ro "$DISK" || exit 99
"$RLAB" resume latest --out "$DISK/runs" >"$LOGS/resume.out" 2>"$LOGS/resume.err"
echo $? >"$LOGS/resume.rc"
"$RLAB" show latest --out "$DISK/runs" >"$LOGS/show.out" 2>&1
echo $? >"$LOGS/show.rc"
"""
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        env=cli_env(
            tmp_path, DISK=str(disk), LOGS=str(logs), RLAB=RLAB, CONFIG=str(config), COLUMNS="1000"
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join((logs / "resume.err").read_text().split())
    assert (logs / "resume.rc").read_text().strip() == "2", said
    assert f"The file system mounted at {disk} is read-only" in said
    assert "make it writable again, then run `rlab resume` again." in said
    assert "Traceback" not in said
    assert (logs / "show.rc").read_text().strip() == "0", (logs / "show.out").read_text()


# ---------------------------------------------------------------- the run's own failures


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RLAB, *args],
        env=cli_env(tmp_path, COLUMNS="1000"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_run_whose_seed_crashes_exits_non_zero_with_the_seeds_failure(tmp_path: Path) -> None:
    seed = tmp_path / "crashing-seed"
    seed.mkdir()
    (seed / "main.py").write_text("print('loading')\nraise SystemExit('\\x1b[31mno data here')\n")
    config = tmp_path / "toy.yaml"
    config.write_text(yaml.safe_dump({"task": "toy:line", "agent": "scripted"}))
    done = _cli(
        ["run", "--config", str(config), "--seed-candidate", str(seed), "-i", "1"], tmp_path
    )
    assert done.returncode == 3, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "n0000" in said and "exited with code 1" in said, said
    assert "Traceback" not in done.stdout + done.stderr
    # the journaled stop reason carries the seed's last words, the escape sequence escaped
    state = replay(next((tmp_path / "runs").iterdir()) / "journal.jsonl")
    assert state.stop_reason == (
        "no seed candidate ran successfully; the first, n0000, failed at run: exited with "
        "code 1: \\x1b[31mno data here"
    )


@pytest.mark.parametrize("record", ["[]", "{}"])
def test_a_damaged_run_json_is_one_sentence_for_every_command(
    record: str, run_toy, tmp_path: Path
) -> None:
    outcome = run_toy(STEPS[:1])
    run_dir = outcome.run.root
    (run_dir / "run.json").write_text(record)
    for command in ("show", "resume", "final", "report"):
        done = _cli([command, str(run_dir)], tmp_path)
        said = " ".join(done.stderr.split())
        assert done.returncode == 2, f"{command}: {done.stdout}{done.stderr}"
        assert "the run folder is damaged: restore run.json from a copy." in said, said
        assert "Traceback" not in done.stdout + done.stderr
