"""The docker sandbox against a real daemon: conformance, isolation, limits, clean-up, a full run.

Tests that need a daemon are skipped (with the reason) when none answers at DOCKER_HOST (or
the standard socket); CI starts one (`.ci/run`). The error messages are tested everywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import RLAB
from docker_user_image import USER_IMAGE, build_user_image
from test_jail import PROBE, _Listener

from rlab_core.builtin import docker_daemon
from rlab_core.builtin.docker_sandbox import DockerSandbox, DockerSandboxConfig
from rlab_core.errors import SandboxUnavailableError
from rlab_core.journal import replay
from rlab_core.records import NodeKind, NodeStatus
from rlab_core.testing import TOY_SEED_DIR, check_sandbox
from rlab_core.testing.conformance import _request


def _daemon_problem() -> str | None:
    """Why no daemon can be used here, or None when one answers."""
    try:
        import docker
    except ImportError:
        return "the Docker SDK is not installed (uv sync installs the dev group)"
    try:
        docker.from_env(timeout=5).ping()
    except Exception as exc:
        where = os.environ.get("DOCKER_HOST", docker_daemon.DEFAULT_SOCKET)
        return f"no Docker daemon answers at {where} ({type(exc).__name__}); .ci/run starts one"
    return None


PROBLEM = _daemon_problem()
needs_docker = pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")


@pytest.fixture(scope="module")
def sandbox():
    box = DockerSandbox(DockerSandboxConfig())
    yield box
    box.close()


def _ours(box: DockerSandbox) -> list:
    """Containers this process owns, by label."""
    pid = box.labels[docker_daemon.OWNER_PID]
    return box.client.containers.list(
        all=True, filters={"label": ["rlab.sandbox=docker", f"rlab.owner_pid={pid}"]}
    )


# --------------------------------------------------------------------------- errors (no daemon)


def test_unreachable_daemon_is_one_clear_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/missing/docker.sock")
    with pytest.raises(SandboxUnavailableError) as caught:
        DockerSandbox(DockerSandboxConfig())
    message = str(caught.value)
    assert f"{tmp_path}/missing/docker.sock is not reachable" in message
    assert "sudo systemctl start docker" in message and "DOCKER_HOST" in message


def test_permission_denied_on_the_socket_says_how_to_fix_it():
    import docker
    import requests

    try:
        try:
            raise PermissionError(13, "Permission denied")
        except PermissionError as inner:
            raise requests.exceptions.ConnectionError(("Connection aborted.", inner)) from inner
    except requests.exceptions.ConnectionError as cause:
        exc = docker.errors.DockerException(f"Error while fetching server API version: {cause}")
        exc.__cause__ = cause
    message = docker_daemon.describe_connect_error(exc, "unix:///var/run/docker.sock")
    assert message.startswith("Permission denied on the Docker socket unix:///var/run/docker.sock")
    assert "docker group" in message and "DOCKER_HOST" in message


def test_candidates_never_run_as_root():
    with pytest.raises(ValueError, match="never run as root"):
        DockerSandboxConfig(user="0:0")
    with pytest.raises(ValueError, match="extra"):
        DockerSandboxConfig(network_mode="host")


# --------------------------------------------------------------------------- with a daemon


@needs_docker
def test_docker_sandbox_passes_the_conformance_suite(sandbox):
    check_sandbox(sandbox)
    assert sandbox.isolation_level() == "docker"
    details = sandbox.isolation_details()
    assert details["image_kind"] == "host-interpreter" and details["network"] == "none"
    assert details["image"].startswith("rlab-hostpython:")
    assert _ours(sandbox) == []  # every container is removed


@needs_docker
def test_missing_user_image_says_how_to_build_it():
    with pytest.raises(SandboxUnavailableError) as caught:
        DockerSandbox(DockerSandboxConfig(image="rlab-no-such-image:1"))
    assert "docker build -t rlab-no-such-image:1 -f docs/candidate.Dockerfile ." in str(
        caught.value
    )


@needs_docker
def test_a_daemon_lost_mid_run_is_a_sandbox_error_not_a_candidate_fault(tmp_path):
    box = DockerSandbox(DockerSandboxConfig())
    box.client = box.sdk.DockerClient(base_url=f"unix://{tmp_path}/gone.sock", version="1.41")
    with pytest.raises(
        SandboxUnavailableError, match=r"is not reachable \(No such file or directory\)"
    ):
        box.run(_request(tmp_path, "pass\n"))


@needs_docker
def test_candidate_has_no_network_no_outside_view_and_no_secrets(
    run_toy, rlab_cache, tmp_path, monkeypatch
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("host-only")
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-very-secret")
    monkeypatch.setenv("DATABASE_PASSWORD", "hunter2")
    listener = _Listener()
    extra_checks = (
        "attempt('socket_out', lambda: socket.create_connection(('1.1.1.1', 53), timeout=2))\n"
        "attempt('write_root', lambda: pathlib.Path('/planted.txt').write_text('x'))\n"
        "attempt('write_tmp', lambda: pathlib.Path('/tmp/ok.txt').write_text('x'))\n"
        "report['uid'] = os.getuid()\n"
    )
    try:
        code = (
            PROBE.replace('report["secret_vars"]', extra_checks + 'report["secret_vars"]')
            .replace("PORT", str(listener.port))
            .replace("OUTSIDE_FILE", repr(str(outside / "notes.txt")))
            .replace("OUTSIDE_DIR", repr(str(outside)))
            .replace(
                "PRIVATE_FILE", repr(str(rlab_cache / "toy" / "line" / "private" / "labels.json"))
            )
            .replace("JOURNAL", repr(str(tmp_path / "runs")))
        )
        seed = tmp_path / "probe-seed"
        seed.mkdir()
        toy_seed = (TOY_SEED_DIR / "main.py").read_text()
        (seed / "main.py").write_text(toy_seed.replace("# extra behaviour\n", code))
        outcome = run_toy(
            [], debug_tries=0, sandbox="docker", benchmark_options={"seed_dir": str(seed)}
        )
    finally:
        listener.close()
    tree = replay(outcome.run.journal_path).tree
    node = next(n for n in tree if n.kind == NodeKind.SEED)
    assert node.execution is not None and node.execution.isolation == "docker"
    report = json.loads((outcome.run.node_dir(node.id) / "outputs" / "probe.json").read_text())
    assert report["socket"] != "allowed" and listener.connections == 0
    assert report["socket_out"] != "allowed"
    assert report["read_outside"] == "FileNotFoundError"
    assert report["read_private"] == "FileNotFoundError"
    assert report["read_journal"] != "allowed"
    assert report["write_data"] in ("OSError", "PermissionError")  # read-only mount
    assert report["write_outside"] == "FileNotFoundError"
    assert report["write_root"] in ("OSError", "PermissionError")  # read-only root
    assert report["write_cache"] == "allowed" and report["write_tmp"] == "allowed"
    assert report["secret_vars"] == [] and "DOCKER_HOST" not in report["env"]
    assert report["uid"] != 0
    assert not (outside / "planted.txt").exists()
    info = json.loads((outcome.run.root / "run.json").read_text())
    assert info["isolation"]["level"] == "docker"


@needs_docker
def test_hidden_paths_inside_a_mounted_tree_are_invisible(sandbox, tmp_path):
    """A task's raw data inside the interpreter's prefix (like a dataset package) is hidden."""
    hidden_dir = Path(sys.prefix) / "rlab-test-hidden-docker"
    hidden_dir.mkdir(exist_ok=True)
    try:
        (hidden_dir / "raw.csv").write_text("secret,raw\n")
        program = (
            f"import pathlib\nprint(sorted(p.name for p in pathlib.Path({str(hidden_dir)!r}).iterdir()))\n"
            "import json\nprint('json ok')\n"
        )
        request = _request(tmp_path / "hidden", program)
        hidden = sandbox.run(request.model_copy(update={"hidden_paths": [hidden_dir]}))
        assert hidden.ok and "[]" in hidden.log_tail and "json ok" in hidden.log_tail
        plain = sandbox.run(_request(tmp_path / "plain", program))
        assert plain.ok and "raw.csv" in plain.log_tail
    finally:
        (hidden_dir / "raw.csv").unlink(missing_ok=True)
        hidden_dir.rmdir()


@needs_docker
def test_timed_out_candidate_container_is_gone(sandbox, tmp_path):
    request = _request(tmp_path, "import time\ntime.sleep(120)\n", timeout_s=2.0)
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(len(_ours(sandbox)))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        execution = sandbox.run(request)
    finally:
        done.set()
        watcher.join()
    assert execution.timed_out and execution.killed_by == "timeout" and execution.exit_code is None
    assert 2.0 <= execution.wall_s < 10
    assert max(seen) == 1  # it ran, labelled ...
    assert _ours(sandbox) == []  # ... and is removed


@needs_docker
def test_memory_hog_is_killed_and_reported(sandbox, tmp_path):
    hog = "chunks = []\nwhile True:\n    chunks.append(bytearray(32 * 2**20))\n"
    execution = sandbox.run(_request(tmp_path, hog, memory_mb=160, timeout_s=60))
    assert execution.killed_by == "memory" and execution.exit_code is None
    assert execution.peak_memory_mb >= 150
    assert execution.wall_s < 30
    assert _ours(sandbox) == []


@needs_docker
def test_limits_reach_the_candidate(sandbox, tmp_path):
    program = (
        "import os, threading, time\n"
        "print('uid', os.getuid())\n"
        "threads = []\n"
        "try:\n"
        "    for _ in range(2000):\n"
        "        t = threading.Thread(target=time.sleep, args=(5,), daemon=True)\n"
        "        t.start(); threads.append(t)\n"
        "except RuntimeError:\n"
        "    print('thread limit hit at', len(threads))\n"
    )
    execution = sandbox.run(_request(tmp_path, program, timeout_s=30))
    assert execution.ok, execution.log_tail
    assert "uid 65534" in execution.log_tail or f"uid {os.getuid()}" in execution.log_tail
    assert "thread limit hit at" in execution.log_tail  # pids limit (512)
    assert execution.peak_memory_mb > 0 and execution.cpu_s >= 0


CRASHING_RLAB = """
import sys
from rlab_core.builtin.docker_sandbox import DockerSandbox, DockerSandboxConfig
from rlab_core.testing.conformance import _request
from pathlib import Path
box = DockerSandbox(DockerSandboxConfig())
box.run(_request(Path(sys.argv[1]), "import time\\ntime.sleep(300)\\n", timeout_s=300))
"""


@needs_docker
def test_leftover_containers_of_a_crashed_run_are_removed(sandbox, tmp_path):
    """SIGKILL an rlab process mid-candidate: its container stays; the next sandbox removes it."""
    crashing = subprocess.Popen([sys.executable, "-c", CRASHING_RLAB, str(tmp_path)])
    label = f"rlab.owner_pid={crashing.pid}"
    try:
        for _ in range(200):
            found = sandbox.client.containers.list(filters={"label": label})
            if found:
                break
            time.sleep(0.1)
        assert found, "the crashing rlab never started its candidate"
    finally:
        crashing.kill()
        crashing.wait()
    leftover = found[0]
    leftover.reload()
    assert leftover.status == "running"  # nothing removed it: its rlab died with SIGKILL
    ours = sandbox.client.containers.create(sandbox.image, ["true"], labels=sandbox.labels)
    try:
        fresh = DockerSandbox(DockerSandboxConfig())
        fresh.close()
        assert leftover.id in fresh.removed_leftovers
        assert ours.id not in fresh.removed_leftovers  # its owner, this process, lives
        with pytest.raises(sandbox.sdk.errors.NotFound):
            leftover.reload()
    finally:
        ours.remove(force=True)
        with contextlib.suppress(sandbox.sdk.errors.NotFound):
            leftover.remove(force=True)


@needs_docker
@pytest.mark.skipif(not Path("/usr/bin/python3.11").exists(), reason="no /usr/bin/python3.11")
def test_a_user_image_runs_candidates_with_its_own_python(sandbox, tmp_path):
    try:
        sandbox.client.images.get(USER_IMAGE)
    except sandbox.sdk.errors.ImageNotFound:
        build_user_image(sandbox.client)
    box = DockerSandbox(DockerSandboxConfig(image=USER_IMAGE))
    details = box.isolation_details()
    assert details["image"] == USER_IMAGE and details["image_kind"] == "user"
    check_sandbox(box)
    program = (
        "import os, pathlib, sys\n"
        "value = pathlib.Path(os.environ['RLAB_DATA_DIR'], 'input.txt').read_text()\n"
        "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'out.txt').write_text(value)\n"
        "pathlib.Path(os.environ['RLAB_CACHE_DIR'], 'c.txt').write_text(value)\n"
        "print(sys.executable, os.getcwd(), os.environ['RLAB_DATA_DIR'], os.environ['PATH'])\n"
        "print('host venv visible:', os.path.exists(sys.argv[1]))\n"
    )
    request = _request(tmp_path, program)
    env = {**request.env, "RLAB_CACHE_DIR": str(request.cache_dir)}
    request = request.model_copy(update={"command": ["python", "main.py", sys.prefix], "env": env})
    execution = box.run(request)
    assert execution.ok, execution.log_tail
    assert "/usr/local/bin/python /rlab/work /rlab/data /usr/local/bin:/usr/bin:/bin" in (
        execution.log_tail
    )
    assert "host venv visible: False" in execution.log_tail
    assert (request.output_dir / "out.txt").read_text() == "42"
    assert (request.cache_dir / "c.txt").read_text() == "42"
    box.close()


@needs_docker
@pytest.mark.slow
def test_full_rlab_run_of_the_example_task_in_docker(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    env.update({"RLAB_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"})
    out = tmp_path / "runs"
    done = subprocess.run(
        [RLAB, "run", "example:flights-delay", "-i", "2", "--sandbox", "docker", "--out", str(out)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "isolation docker" in done.stdout
    run_dir = next(out.iterdir())
    info = json.loads((run_dir / "run.json").read_text())
    assert info["isolation"]["level"] == "docker"
    assert info["isolation"]["image_kind"] == "host-interpreter"
    tree = replay(run_dir / "journal.jsonl").tree
    nodes = list(tree)
    assert len(nodes) == 3 and all(n.execution and n.execution.isolation == "docker" for n in nodes)
    best = tree.best()
    assert best is not None and best.status == NodeStatus.EVALUATED
    assert 0.5 < best.score.primary <= 1.0
    client = DockerSandbox(DockerSandboxConfig()).client
    leftovers = client.containers.list(all=True, filters={"label": "rlab.sandbox=docker"})
    assert [c for c in leftovers if c.labels.get("rlab.run") == run_dir.name] == []


@needs_docker
def test_hostile_candidates_get_nothing_through_docker(sandbox):
    """Forging links, hidden paths, /proc, sockets, orphans, tmpfs and disk hogs: all stopped."""
    from rlab_core.testing.hostile import ATTACK_NAMES, check_hostile

    report = check_hostile(sandbox)
    assert report.tried == len(ATTACK_NAMES) and not report.leaks and report.orphans == 0
    by_name = {r.name: r.detail for r in report.results}
    assert by_name["tmpfs-memory-hog"].startswith("killed by memory")
    assert by_name["disk-flood"].startswith("killed by disk")
