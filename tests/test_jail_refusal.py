"""Fail closed: where no level that hides paths works, rlab refuses unless told otherwise.

The machine without namespaces is real, not mocked: a user namespace whose limits on new
namespaces are zero (``/proc/sys/user/max_*_namespaces`` are per user namespace), in which
neither bwrap nor unshare can start, whatever rlab's detection tries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml
from conftest import RLAB, cli_env

from rlab_core.builtin import jail

NAMESPACES = ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup")


def _forbid(kinds: tuple[str, ...]) -> str:
    """Shell that, inside a fresh user namespace, forbids further namespaces of ``kinds``."""
    return "".join(f"echo 0 > /proc/sys/user/max_{k}_namespaces && " for k in kinds) + 'exec "$@"'


def _without_namespaces(
    argv: list[str], kinds: tuple[str, ...] = NAMESPACES, **kwargs
) -> subprocess.CompletedProcess:
    """Run ``argv`` where no namespace of ``kinds`` can be created (a real, local machine)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not here to build a machine without namespaces")
    probe = subprocess.run([unshare, "--user", "--map-root-user", "true"], check=False)
    if probe.returncode != 0:
        pytest.skip("this machine gives no user namespace to build one without namespaces")
    return subprocess.run(
        [unshare, "--user", "--map-root-user", "sh", "-c", _forbid(kinds), "sh", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **kwargs,
    )


CONSTRUCT = """
import json, logging, sys
from pathlib import Path
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.errors import SandboxUnavailableError
from rlab_core.testing.conformance import _request

answers = {}
logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="LOG %(message)s")
for isolation in ("auto", "bubblewrap", "netns", "none"):
    try:
        box = LocalSandbox(LocalSandboxConfig(isolation=isolation))
    except SandboxUnavailableError as exc:
        answers[isolation] = {"refused": str(exc)}
        continue
    run = box.run(_request(Path(sys.argv[1]) / isolation, "print('ran')\\n"))
    ran = run.ok and "ran" in run.log_tail
    answers[isolation] = {"details": box.isolation_details(), "ran": ran}
print("ANSWER", json.dumps(answers))
"""


def test_without_any_level_that_hides_paths_the_sandbox_refuses(tmp_path):
    done = _without_namespaces([sys.executable, "-c", CONSTRUCT, str(tmp_path)])
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("ANSWER "))
    answers = json.loads(line.removeprefix("ANSWER "))

    refusal = answers["auto"]["refused"]
    assert refusal.startswith("No isolation that hides private data works here: bwrap ")
    assert "could not start" in refusal and "unshare could not start" in refusal
    for way_out in (
        "--sandbox docker",
        "user namespaces",
        "bubblewrap",
        "-o sandbox.isolation=none",
    ):
        assert way_out in refusal, way_out
    assert refusal.count(". ") == 0 and refusal.endswith(".")  # one sentence
    assert "Isolation 'bubblewrap' is not available here" in answers["bubblewrap"]["refused"]
    assert "Isolation 'netns' is not available here" in answers["netns"]["refused"]

    # the explicit opt-in runs, says so loudly, and every record says what it means
    unisolated = answers["none"]
    assert unisolated["ran"] is True
    details = unisolated["details"]
    assert details["level"] == "none" and details["hidden_paths"] is False
    assert details["private_data_readable"] is True and details["pid_namespace"] is False
    assert details["warning"] == jail.NO_HIDING_WARNING
    assert f"LOG NO PATH ISOLATION (none): {jail.NO_HIDING_WARNING}" in done.stdout


def test_the_cli_refuses_with_exit_code_2_and_one_sentence(tmp_path):
    config = tmp_path / "toy.yaml"
    config.write_text(yaml.safe_dump({"task": "toy:line", "agent": "scripted", "iterations": 1}))
    done = _without_namespaces(
        [RLAB, "run", "--config", str(config)], env=cli_env(tmp_path), cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "No isolation that hides private data works here" in done.stderr
    assert "Traceback" not in done.stderr


def test_every_level_reports_the_same_facts(tmp_path):
    """level, network, filesystem, hidden_paths, pid_namespace at every level that works."""
    script = textwrap.dedent(
        """
        import json
        from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
        from rlab_core.builtin import jail
        facts = {}
        for level in ("bubblewrap", "netns", "none"):
            if level == "none" or jail.detect_level(level) == level:
                facts[level] = LocalSandbox(LocalSandboxConfig(isolation=level)).isolation_details()
        print(json.dumps(facts))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    for level, details in facts.items():
        assert {"level", "network", "filesystem", "hidden_paths", "pid_namespace"} <= set(details)
        assert details["level"] == level
    if "bubblewrap" in facts:
        assert set(facts["bubblewrap"]["bwrap"]) == {"path", "source", "version"}
        assert facts["bubblewrap"]["hidden_paths"] and facts["bubblewrap"]["pid_namespace"]
    assert facts["none"]["hidden_paths"] is False and "warning" in facts["none"]


DEGRADED = """
import json, socket, sys, time, uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import psutil
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.errors import SandboxUnavailableError
from rlab_core.testing.conformance import _request

answers = {}
try:
    LocalSandbox(LocalSandboxConfig(isolation="auto"))
except SandboxUnavailableError as exc:
    answers["auto"] = str(exc)
box = LocalSandbox(LocalSandboxConfig(isolation="netns"))
answers["details"] = box.isolation_details()
server = socket.create_server(("127.0.0.1", 0))
token = f"{300 + uuid.uuid4().int % 10_000 / 10_000:.4f}"
program = Path(sys.argv[2]).read_text().replace("PORT", str(server.getsockname()[1]))
program = program.replace("TOKEN", repr(token))

def holders():
    return [p for p in psutil.process_iter(["cmdline", "status"])
            if p.info["cmdline"] and token in p.info["cmdline"] and p.info["status"] != "zombie"]

with ThreadPoolExecutor(1) as pool:
    future = pool.submit(box.run, _request(Path(sys.argv[1]), program))
    deadline = time.monotonic() + 10
    while not holders() and time.monotonic() < deadline:
        time.sleep(0.05)
    answers["grandchild_seen"] = bool(holders())
    execution = future.result()
time.sleep(0.5)
answers["grandchild_left"] = bool(holders())
answers["ok"] = execution.ok
answers["log"] = execution.log_tail
print("ANSWER", json.dumps(answers))
"""

DEGRADED_CANDIDATE = """
import os, socket, time
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2)
    print("network: allowed", flush=True)
except OSError as exc:
    print("network:", type(exc).__name__, flush=True)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"x")
        os.execv("/bin/sleep", ["sleep", TOKEN])
    os._exit(0)
os.wait()
os.read(r, 1)
time.sleep(1)
"""


def test_netns_without_a_mount_namespace_hides_nothing_and_says_so(tmp_path):
    """unshare --net works, its pid and mount namespaces do not: auto refuses, netns warns."""
    candidate = tmp_path / "candidate.py"
    candidate.write_text(DEGRADED_CANDIDATE)
    done = _without_namespaces(
        [sys.executable, "-c", DEGRADED, str(tmp_path / "run"), str(candidate)],
        kinds=("mnt", "pid"),
    )
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("ANSWER ")), None)
    assert line, done.stdout + done.stderr
    answers = json.loads(line.removeprefix("ANSWER "))
    assert "unshare cannot cover paths here" in answers["auto"]
    details = answers["details"]
    assert details["level"] == "netns" and details["network"] == "none"
    assert details["hidden_paths"] is False and details["pid_namespace"] is False
    assert details["private_data_readable"] is True
    assert details["warning"] == jail.NO_HIDING_WARNING
    assert answers["ok"] and "network: " in answers["log"], answers["log"]
    assert "network: allowed" not in answers["log"]  # its own network namespace still
    # no pid namespace: the reaping launcher still takes the detached grandchild along
    assert answers["grandchild_seen"] and not answers["grandchild_left"]
