"""Limits that hold in the jail: tmpfs counts as memory, disk is capped, no orphan survives."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from rlab_core.builtin import jail
from rlab_core.builtin.candidate_group import DiskWatch
from rlab_core.builtin.jail_netns import find_netns
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.testing.conformance import _request

BWRAP = pytest.param(
    "bubblewrap", marks=pytest.mark.skipif(not jail.bubblewrap_works(), reason="no bubblewrap")
)
NETNS = pytest.param("netns", marks=pytest.mark.skipif(not find_netns().works, reason="no unshare"))
JAILS = [BWRAP, NETNS]
LEVELS = [BWRAP, NETNS, "none"]


def _sandbox(level: str) -> LocalSandbox:
    return LocalSandbox(LocalSandboxConfig(isolation=level))  # type: ignore[arg-type]


# -- memory: a jail's tmpfs is memory ---------------------------------------------------

TMPFS_HOG = """
import os, time
held = 0
try:
    with open(os.path.join(FOLDER, "hog"), "wb") as f:
        for _ in range(1200 // 8):  # 1.2 GiB, far past the 300 MiB limit
            f.write(b"x" * 8 * 2**20)
            f.flush()
            held += 8
            print("held", held, flush=True)
except OSError as exc:
    print("stopped:", exc, flush=True)
time.sleep(30)
"""


@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
@pytest.mark.parametrize("level", JAILS)
def test_a_tmpfs_hog_is_killed_as_memory_and_its_tmpfs_counts(tmp_path, level, folder):
    box = _sandbox(level)
    program = TMPFS_HOG.replace("FOLDER", repr(folder))
    execution = box.run(_request(tmp_path, program, memory_mb=300, timeout_s=25))
    held = max(int(n) for n in re.findall(r"held (\d+)", execution.log_tail))
    assert execution.killed_by == "memory", execution.log_tail[-300:]
    assert execution.wall_s < 15  # killed for memory, long before the 25 s timeout
    # the python process itself stays near 10 MiB: only the tmpfs takes it past 300
    assert execution.peak_memory_mb >= held >= 200, (execution.peak_memory_mb, held)


# -- disk -------------------------------------------------------------------------------

DISK_HOG = """
import os, time
with open(os.path.join(os.environ["RLAB_OUTPUT_DIR"], "big.bin"), "wb") as f:
    for i in range(200):  # 200 MiB of real data
        f.write(os.urandom(2**20))
        f.flush()
        print("wrote", i + 1, flush=True)
time.sleep(30)
"""

SPARSE = """
import os, time
path = os.path.join(os.environ["RLAB_OUTPUT_DIR"], "sparse.bin")
with open(path, "wb") as f:
    f.truncate(2 * 2**30)  # 2 GiB long, nothing allocated
time.sleep(2)
print("size", os.path.getsize(path), "blocks", os.stat(path).st_blocks)
"""


@pytest.mark.parametrize("level", LEVELS)
def test_a_disk_hog_is_killed_as_disk(tmp_path, level):
    request = _request(tmp_path, DISK_HOG, timeout_s=25).model_copy(update={"disk_mb": 100})
    execution = _sandbox(level).run(request)
    assert execution.killed_by == "disk", execution.log_tail[-300:]
    assert execution.wall_s < 15
    written = os.stat(request.output_dir / "big.bin").st_blocks * 512
    assert 100 * 2**20 < written <= 200 * 2**20


@pytest.mark.parametrize("level", LEVELS)
def test_a_sparse_file_that_allocates_nothing_is_not_killed(tmp_path, level):
    request = _request(tmp_path, SPARSE, timeout_s=25).model_copy(update={"disk_mb": 100})
    execution = _sandbox(level).run(request)
    assert execution.ok and execution.killed_by is None, execution.log_tail
    assert f"size {2 * 2**30} blocks 0" in execution.log_tail


def test_the_disk_walk_backs_off_when_it_is_slow(tmp_path):
    for i in range(10_000):
        (tmp_path / f"f{i}").write_bytes(b"x")
    watch = DiskWatch([tmp_path], limit_mb=1, first_s=0)
    began = time.monotonic()
    assert watch.over()  # 10,000 files of one 4 KiB block each: ~39 MiB allocated
    took = watch.walks[-1]
    assert watch.next_at - began >= max(0.5, 20 * took) - 0.01
    assert not watch.over()  # not walked again before it is due
    assert len(watch.walks) == 1


# -- orphans ------------------------------------------------------------------------------

ORPHAN = """
import os, sys, time
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(ready_w, b"x")
        os.execv("/bin/sleep", ["sleep", TOKEN])  # a detached grandchild, named by TOKEN
    os._exit(0)
os.wait()
os.read(ready_r, 1)
print("grandchild started", flush=True)
time.sleep(HOLD)
"""


def _holders(token: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if (
            proc.info["cmdline"]
            and token in proc.info["cmdline"]
            and proc.info["status"] != "zombie"
        ):
            found.append(proc)
    return found


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.parametrize("ending", ["exit", "timeout"])
@pytest.mark.parametrize("level", LEVELS)
def test_a_detached_grandchild_dies_with_the_candidate(tmp_path, level, ending):
    token = f"{300 + uuid.uuid4().int % 10_000 / 10_000:.4f}"  # a unique sleep length
    hold, timeout = (1.0, 20.0) if ending == "exit" else (60.0, 2.0)
    program = ORPHAN.replace("TOKEN", repr(token)).replace("HOLD", str(hold))
    request = _request(tmp_path, program, timeout_s=timeout)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(_sandbox(level).run, request)
        assert _wait(lambda: bool(_holders(token)), 10), "the grandchild never started"
        execution = future.result(timeout=60)
    assert "grandchild started" in execution.log_tail
    if ending == "exit":
        assert execution.ok, execution.log_tail
    else:
        assert execution.killed_by == "timeout"
    assert _wait(lambda: not _holders(token), 1.0), "the detached grandchild outlived the candidate"


SUPERVISOR = """
import sys
from pathlib import Path
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.testing.conformance import _request
box = LocalSandbox(LocalSandboxConfig(isolation=sys.argv[1]))
box.run(_request(Path(sys.argv[2]), Path(sys.argv[3]).read_text(), timeout_s=120))
"""


@pytest.mark.parametrize("level", LEVELS)
def test_a_supervisor_that_dies_takes_its_candidate_and_orphans_along(tmp_path, level):
    """A lost Ray worker, a killed rlab: nothing it started keeps running."""
    token = f"{300 + uuid.uuid4().int % 10_000 / 10_000:.4f}"
    program = tmp_path / "program.py"
    program.write_text(ORPHAN.replace("TOKEN", repr(token)).replace("HOLD", "120"))
    supervisor = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(SUPERVISOR),
            level,
            str(tmp_path / "run"),
            str(program),
        ]
    )
    try:
        assert _wait(lambda: bool(_holders(token)), 20), "the grandchild never started"
        started = supervisor_descendants(supervisor.pid)
        assert any("main.py" in " ".join(_cmdline(p)) for p in started), "no candidate runs"
    finally:
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait()
    assert _wait(lambda: not _holders(token), 3.0), "the grandchild outlived the supervisor"
    assert _wait(lambda: not any(_alive(p) for p in started), 3.0), "the candidate outlived it"


def supervisor_descendants(pid: int) -> list[psutil.Process]:
    """Every process below ``pid`` that is still there."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
