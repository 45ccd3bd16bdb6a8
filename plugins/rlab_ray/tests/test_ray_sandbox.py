"""The ray sandbox on a real 2-CPU local cluster: contract, files, lost workers, concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import ray
import rlab_ray.plugin as plugin
from rlab_ray.cluster import check_reachable
from rlab_ray.options import RaySandboxConfig
from rlab_ray.sandbox import RaySandbox
from rlab_ray.transfer import data_fingerprint
from rlab_ray.worker import TASK_NAME, NotVisibleError, WorkerJob, run_job

from rlab_core.api import ConfigError, SandboxRequest, SandboxUnavailableError
from rlab_core.builtin import jail
from rlab_core.testing import check_sandbox

pytest_plugins = ["rlab_core.testing.fixtures"]

#: Appends one line per attempt to the run's cache; hangs on the first HANG attempts, so a
#: test can kill the Ray worker under it; then writes an output and exits 0.
KILLABLE = """
import os, pathlib, sys, time
attempts = pathlib.Path(os.environ["RLAB_CACHE_DIR"], "attempts.txt")
with open(attempts, "a") as handle:
    handle.write("attempt\\n")
n = len(attempts.read_text().splitlines())
print("attempt", n, flush=True)
if n <= HANG:
    time.sleep(120)
pathlib.Path(os.environ["RLAB_OUTPUT_DIR"], "done.txt").write_text(str(n))
"""


def _request(tmp: Path, program: str, *, timeout_s: float = 60, threads: int = 1) -> SandboxRequest:
    work, data, out, cache = (tmp / n for n in ("work", "data", "out", "cache"))
    for folder in (work, data, out, cache):
        folder.mkdir(parents=True, exist_ok=True)
    (work / "main.py").write_text(textwrap.dedent(program))
    (data / "input.txt").write_text("42")
    return SandboxRequest(
        workdir=work,
        command=["python", "main.py"],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "RLAB_DATA_DIR": str(data),
            "RLAB_OUTPUT_DIR": str(out),
            "RLAB_CACHE_DIR": str(cache),
            "RLAB_THREADS": str(threads),
            "HOME": str(work),
        },
        data_dir=data,
        output_dir=out,
        cache_dir=cache,
        log_path=tmp / "node" / "log.txt",
        hidden_paths=[tmp / "private"],
        timeout_s=timeout_s,
        memory_mb=512,
        max_output_mb=1.0,
    )


@pytest.fixture
def sandbox(ray_address):
    box = RaySandbox(RaySandboxConfig(address=ray_address))
    yield box
    box.close()


def _attempts(request: SandboxRequest) -> int:
    path = request.cache_dir / "attempts.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _candidate_worker(timeout: float = 60) -> psutil.Process:
    """The Ray worker process running a candidate (its title is ``ray::rlab-candidate``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in psutil.process_iter(["cmdline"]):
            cmdline = proc.info["cmdline"] or []
            if cmdline and cmdline[0].startswith(f"ray::{TASK_NAME}"):
                return proc
        time.sleep(0.1)
    raise AssertionError("no Ray worker is running a candidate")


def _kill_worker_when(request: SandboxRequest, attempt: int) -> list[psutil.Process]:
    """Wait for the candidate's attempt, SIGKILL its Ray worker; return what ran under it."""
    deadline = time.monotonic() + 60
    while _attempts(request) < attempt:
        assert time.monotonic() < deadline, "the candidate never started"
        time.sleep(0.05)
    worker = _candidate_worker()
    below = worker.children(recursive=True)
    assert below, "the candidate runs as a child of the Ray worker"
    worker.kill()
    return below


def _all_gone(procs: list[psutil.Process], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for proc in procs:
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.NoSuchProcess:
                continue
        if not alive:
            return True
        time.sleep(0.1)
    return False


def test_registration_is_lazy_and_validates_options(plugin_host, register_plugin):
    register_plugin(plugin, name="ray")
    assert plugin_host.available("sandboxes")["ray"].info.config is RaySandboxConfig
    config = plugin_host.make_config("sandboxes", "ray", {"max_retries": 2, "address": "auto"})
    assert config.max_retries == 2 and config.address == "auto" and config.isolation == "auto"
    with pytest.raises(ConfigError, match="adress"):
        plugin_host.make_config("sandboxes", "ray", {"adress": "auto"})
    code = "import sys, rlab_ray.plugin, rlab_ray.options; print('ray' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_conformance_and_isolation_report(ray_address):
    sandbox = RaySandbox(RaySandboxConfig(address=ray_address))
    check_sandbox(sandbox)
    sandbox.close()
    assert ray.get(ray.remote(lambda: 7).remote(), timeout=60) == 7, (
        "close() must leave a cluster the sandbox joined running"
    )
    level = jail.detect_level("auto")
    assert sandbox.isolation_level() == f"ray+{level}"
    details = sandbox.isolation_details()
    assert set(details["worker_isolation"].values()) == {level}
    assert details["address"] == ray_address and details["cluster_started_here"] is False
    assert details["resources"]["cpus"] == 2.0 and details["resources"]["nodes"] == 1
    assert details["files"]["data_dir"].startswith("shared filesystem")
    assert details["files"]["source"].startswith("object store")


def test_files_travel_and_paths_are_the_workers(sandbox, tmp_path):
    request = _request(
        tmp_path,
        """
        import json, os, pathlib
        out = pathlib.Path(os.environ["RLAB_OUTPUT_DIR"])
        (out / "sub").mkdir()
        (out / "sub" / "pred.json").write_text(json.dumps({
            "cwd": os.getcwd(), "home": os.environ["HOME"], "out": str(out),
            "helper": open("helper.txt").read(),
            "data": open(os.path.join(os.environ["RLAB_DATA_DIR"], "input.txt")).read(),
        }))
        open(os.path.join(os.environ["RLAB_CACHE_DIR"], "feature.bin"), "w").write("cached")
        print("done")
        """,
    )
    (request.workdir / "helper.txt").write_text("shipped")
    execution = sandbox.run(request)
    assert execution.ok, execution.log_tail
    seen = json.loads((request.output_dir / "sub" / "pred.json").read_text())
    # the candidate ran in the worker's own copy, with the contract paths rewritten for it
    assert seen["cwd"] != str(request.workdir) and seen["cwd"] == seen["home"]
    assert seen["out"] != str(request.output_dir)
    assert seen["helper"] == "shipped" and seen["data"] == "42"
    assert (request.cache_dir / "feature.bin").read_text() == "cached"  # shared, in place
    assert request.log_path.read_text().strip() == "done"
    assert execution.isolation == sandbox.isolation_level()
    assert execution.command[-1] == "main.py" and len(execution.command) == 2
    assert 0 <= execution.start_overhead_s < 30


def test_a_worker_without_the_data_folder_is_a_clear_error(sandbox, tmp_path):
    request = _request(tmp_path, "print('ok')\n")
    assert sandbox.run(request).ok
    (request.data_dir / "extra.csv").write_text("1\n")  # a copy that differs from rlab's
    with pytest.raises(SandboxUnavailableError, match="differs from rlab's"):
        sandbox.run(request)
    request.data_dir.rename(tmp_path / "moved")  # gone where the worker looks
    with pytest.raises(SandboxUnavailableError, match="not visible on Ray node"):
        sandbox.run(request)


def test_worker_checks_the_shared_folders(ray_address, tmp_path):
    request = _request(tmp_path, "print('ok')\n")
    job = WorkerJob(
        source=b"",
        command=["python", "main.py"],
        env={},
        workdir=str(request.workdir),
        output_dir=str(request.output_dir),
        data_dir=str(request.data_dir),
        data_fingerprint=data_fingerprint(request.data_dir),
        cache_dir=str(tmp_path / "no-cache"),
        hidden_paths=[],
        timeout_s=5,
        memory_mb=100,
        max_output_mb=1,
    )
    with pytest.raises(NotVisibleError, match=r"cache folder .* is not visible"):
        run_job(job)


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_a_lost_worker_is_retried_once_and_succeeds(ray_address, tmp_path, isolation):
    box = RaySandbox(RaySandboxConfig(address=ray_address, isolation=isolation))
    request = _request(tmp_path, KILLABLE.replace("HANG", "1"))
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(box.run, request)
            below = _kill_worker_when(request, attempt=1)
            execution = future.result(timeout=120)
    finally:
        box.close()
    assert execution.ok, execution.log_tail
    assert _attempts(request) == 2  # exactly one retry
    assert (request.output_dir / "done.txt").read_text() == "2"
    log = request.log_path.read_text()
    assert "attempt 1 of 2: the Ray worker running the candidate was lost" in log
    assert "WorkerCrashedError" in log and "retrying on another worker" in log
    assert "attempt 2" in log
    # the jail (bubblewrap's --die-with-parent, or the orphan guard) took the candidate along
    assert _all_gone(below), [p.info for p in below]


def test_a_worker_lost_every_time_fails_with_the_cause(sandbox, tmp_path):
    request = _request(tmp_path, KILLABLE.replace("HANG", "99"))
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(sandbox.run, request)
        _kill_worker_when(request, attempt=1)
        _kill_worker_when(request, attempt=2)
        execution = future.result(timeout=120)
    assert not execution.ok and execution.exit_code is None
    assert _attempts(request) == 2
    assert "giving up after 1 retries (sandbox.max_retries)" in execution.log_tail
    assert "WorkerCrashedError" in execution.log_tail
    assert not (request.output_dir / "done.txt").exists()


def test_a_candidates_own_crash_or_timeout_is_not_retried(sandbox, tmp_path):
    crash = _request(
        tmp_path / "crash",
        KILLABLE.replace("HANG", "0").replace("print(", "raise SystemExit(3)\nprint("),
    )
    execution = sandbox.run(crash)
    assert execution.exit_code == 3 and _attempts(crash) == 1
    assert "[rlab-ray]" not in crash.log_path.read_text()

    suicide = _request(
        tmp_path / "suicide",
        KILLABLE.replace("HANG", "0").replace(
            "print(", "import signal; os.kill(os.getpid(), signal.SIGKILL)\nprint("
        ),
    )
    execution = sandbox.run(suicide)  # SIGKILL of itself: bubblewrap reports it as exit 137
    assert not execution.ok and _attempts(suicide) == 1
    assert "[rlab-ray]" not in suicide.log_path.read_text()

    slow = _request(tmp_path / "slow", KILLABLE.replace("HANG", "1"), timeout_s=1.0)
    execution = sandbox.run(slow)
    assert execution.timed_out and _attempts(slow) == 1
    assert "[rlab-ray]" not in slow.log_path.read_text()


def test_two_threads_run_two_candidates_at_once(sandbox, tmp_path):
    program = """
    import json, os, pathlib, time
    start = time.time()
    time.sleep(2.0)
    pathlib.Path(os.environ["RLAB_OUTPUT_DIR"], "times.json").write_text(
        json.dumps([start, time.time()]))
    """
    requests = [_request(tmp_path / f"c{i}", program) for i in range(2)]
    barrier = threading.Barrier(2)

    def run(request: SandboxRequest):
        barrier.wait()
        return sandbox.run(request)

    began = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        executions = list(pool.map(run, requests))
    elapsed = time.perf_counter() - began
    assert all(e.ok for e in executions), [e.log_tail for e in executions]
    spans = [json.loads((r.output_dir / "times.json").read_text()) for r in requests]
    assert max(s[0] for s in spans) < min(s[1] for s in spans), f"no overlap: {spans}"
    assert elapsed < 2 * 2.0 + 1.5, elapsed


def test_cancel_stops_running_candidates_promptly(ray_address, tmp_path):
    box = RaySandbox(RaySandboxConfig(address=ray_address))
    request = _request(tmp_path, KILLABLE.replace("HANG", "1"))
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(box.run, request)
            deadline = time.monotonic() + 60
            while _attempts(request) < 1:
                assert time.monotonic() < deadline, "the candidate never started"
                time.sleep(0.05)
            below = _candidate_worker().children(recursive=True)
            began = time.monotonic()
            box.cancel()
            execution = future.result(timeout=60)
            took = time.monotonic() - began
        later = box.run(_request(tmp_path / "later", "print('never')\n"))
    finally:
        box.close()
    assert not execution.ok and execution.killed_by in ("cancelled", "signal")
    assert took < 15 and _attempts(request) == 1  # not retried
    assert "cancelled" in execution.log_tail
    assert _all_gone(below)
    assert not later.ok and "cancelled before it started" in later.log_tail


def test_bad_addresses_are_clear_errors():
    with pytest.raises(ConfigError, match=r"only apply with -o sandbox\.address=local"):
        RaySandbox(RaySandboxConfig(address="auto", num_cpus=2))
    with pytest.raises(SandboxUnavailableError, match="Nothing answers at the Ray address"):
        check_reachable("127.0.0.1:1")  # Ray itself would retry for minutes


def test_hostile_candidates_get_nothing_through_ray(ray_address):
    """The suite through Ray: links are refused on the worker, before anything is shipped."""
    from rlab_core.testing.hostile import ATTACK_NAMES, check_hostile

    sandbox = RaySandbox(RaySandboxConfig(address=ray_address))
    try:
        report = check_hostile(sandbox)
    finally:
        sandbox.close()
    assert sandbox.isolation_details()["hidden_paths"] is True  # auto never degrades silently
    assert report.tried == len(ATTACK_NAMES) and not report.leaks and report.orphans == 0
    by_name = {r.name: r.detail for r in report.results}
    assert "is a symbolic link" in by_name["symlink-to-private-labels"]
    assert by_name["disk-flood"].startswith("killed by disk")
