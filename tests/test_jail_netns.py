"""The netns level without bubblewrap: own network, pid and mount namespaces, covers that hold."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from rlab_core.builtin import jail
from rlab_core.builtin.jail_netns import find_netns
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.testing.conformance import _request

needs_covers = pytest.mark.skipif(
    not find_netns().covers, reason="unshare cannot give a mount namespace with covers here"
)

#: The candidate: tries every way out and writes what happened into its outputs.
PROBE = """
import json, os, pathlib, socket, sys
SITE = json.loads(pathlib.Path("site.json").read_text())
report = {}
def attempt(name, action):
    try:
        result = action()
        report[name] = "allowed" + ("" if result is None else f": {str(result)[:40]}")
    except BaseException as exc:
        report[name] = type(exc).__name__
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(SITE["socket"])
def tcp():
    socket.create_connection(("127.0.0.1", SITE["port"]), timeout=2).close()
def environ_leaks():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if SITE["secret"].encode() in open(f"/proc/{pid}/environ", "rb").read():
                    found.append(pid)
            except OSError:
                pass
    if found:
        return found
    raise LookupError("no environ shows the secret")
def read(path):
    data = pathlib.Path(path).read_bytes()
    if not data:
        raise LookupError("empty")
    return data[:8]
attempt("hidden_folder", lambda: os.listdir(SITE["hidden_folder"]))
attempt("hidden_file", lambda: read(SITE["hidden_file"]))
attempt("journal", lambda: read(SITE["journal"]))
attempt("shadow", lambda: read("/etc/shadow"))
attempt("root_file", lambda: read(SITE["root_file"]))
attempt("unix_socket", unix)
attempt("tcp", tcp)
attempt("orchestrator_environ", lambda: read(f"/proc/{SITE['orchestrator']}/environ"))
attempt("any_environ", environ_leaks)
attempt("write_host", lambda: pathlib.Path(SITE["host_folder"], "planted.txt").write_text("x"))
attempt("umount", lambda: os.system("umount /etc/shadow 2>/dev/null") == 0 or 1 / 0)
report["data"] = pathlib.Path(os.environ["RLAB_DATA_DIR"], "input.txt").read_text()
pathlib.Path(os.environ["RLAB_CACHE_DIR"], "feature.bin").write_text("cached")
report["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
pathlib.Path(os.environ["RLAB_OUTPUT_DIR"], "report.json").write_text(json.dumps(report))
"""

SHOULD_FAIL = (
    "hidden_folder",
    "hidden_file",
    "journal",
    "shadow",
    "root_file",
    "unix_socket",
    "tcp",
    "orchestrator_environ",
    "any_environ",
    "write_host",
    "umount",
)


def _site(root: Path, secret: str) -> dict:
    """A run folder (journal, private labels, the candidate's folders inside), host secrets."""
    run = root / "runs" / "r1"
    private = run / "private"
    private.mkdir(parents=True)
    (private / "labels.csv").write_text("label\n1\n")
    (run / "journal.jsonl").write_text('{"type": "run_started"}\n')
    raw = root / "raw-source.csv"
    raw.write_text("raw,data\n")
    node = run / "nodes" / "1"
    request = _request(node, PROBE, env={"RLAB_CACHE_DIR": str(node / "cache")})
    request = request.model_copy(
        update={"hidden_paths": [run, raw], "log_path": node / "log.txt", "timeout_s": 30}
    )
    return {
        "request": request,
        "site": {
            "hidden_folder": str(private),
            "hidden_file": str(raw),
            "journal": str(run / "journal.jsonl"),
            "socket": str(root / "daemon.sock"),
            "secret": secret,
            "orchestrator": os.getpid(),
        },
    }


def _own_environ_entry() -> str:
    """An entry of this process's environment as ``/proc/<pid>/environ`` shows it.

    That file holds the environment the process started with (later ``os.environ`` changes
    do not show), so the secret to look for is one of those; PATH and RLAB_* reach the
    candidate anyway and are left out.
    """
    entries = Path("/proc/self/environ").read_bytes().split(b"\0")
    usable = [
        e.decode(errors="replace")
        for e in entries
        if b"=" in e and not e.startswith((b"PATH=", b"RLAB_", b"PYTEST_"))
    ]
    if not usable:
        pytest.skip("this process started with no environment to look for")
    return max(usable, key=len)


def _listen(path: Path) -> tuple[socket.socket, socket.socket]:
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(path))
    unix.listen()
    tcp = socket.create_server(("127.0.0.1", 0))
    return unix, tcp


@pytest.mark.parametrize(
    "level",
    [
        pytest.param("netns", marks=needs_covers),
        pytest.param(
            "bubblewrap",
            marks=pytest.mark.skipif(not jail.bubblewrap_works(), reason="no bubblewrap"),
        ),
    ],
)
def test_as_root_private_paths_and_host_secrets_stay_out(tmp_path, level):
    """Run by root (the hardest case: the candidate is uid 0), at netns and bubblewrap."""
    if os.geteuid() != 0:
        pytest.skip("this case runs rlab as root; the non-root one is below")
    secret = _own_environ_entry()
    built = _site(tmp_path, secret)
    request, site = built["request"], built["site"]
    host_folder = Path(tempfile.mkdtemp(prefix="rlab-netns-host-", dir=sys.prefix))
    root_file = Path(tempfile.mkstemp(prefix="rlab-netns-secret-", dir="/root")[1])
    root_file.write_text("root's secret")
    unix, tcp = _listen(Path(site["socket"]))
    site.update(root_file=str(root_file), port=tcp.getsockname()[1], host_folder=str(host_folder))
    (request.workdir / "site.json").write_text(json.dumps(site))
    try:
        box = LocalSandbox(LocalSandboxConfig(isolation=level))
        details = box.isolation_details()
        assert details["hidden_paths"] is True and details["pid_namespace"] is True
        assert "warning" not in details and details["network"] == "none"
        execution = box.run(request)
    finally:
        unix.close()
        tcp.close()
        root_file.unlink()
        shutil.rmtree(host_folder)
    assert execution.ok, execution.log_tail
    report = json.loads((request.output_dir / "report.json").read_text())
    leaks = {name: report[name] for name in SHOULD_FAIL if report[name].startswith("allowed")}
    assert not leaks, leaks
    assert report["data"] == "42"
    assert (request.cache_dir / "feature.bin").read_text() == "cached"
    assert len(report["pids"]) <= 3  # its own pid namespace: the candidate and little else
    assert not (host_folder / "planted.txt").exists()


@needs_covers
def test_netns_without_rlab_running_as_root(tmp_path):
    """The same covers for an ordinary user (unprivileged user namespace, --map-root-user)."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or python is None or shutil.which("su") is None:
        pytest.skip("needs root (to switch user) and a system python3")
    user = "rlabtest"
    try:
        uid = int(subprocess.run(["id", "-u", user], capture_output=True, check=True).stdout)
    except subprocess.CalledProcessError:
        pytest.skip(f"no user {user} here")
    root = Path(tempfile.mkdtemp(prefix="rlab-netns-user-"))
    try:
        root.chmod(0o755)
        os.chown(root, uid, -1)
        script = root / "supervise.py"
        script.write_text(textwrap.dedent(USER_SUPERVISOR))
        paths = [str(Path(__file__).parents[1] / "src"), str(Path(__file__).parent)]
        paths += [p for p in sys.path if p.endswith("site-packages")]
        done = subprocess.run(
            ["su", user, "-s", "/bin/sh", "-c", f"{python} {script} {root}"],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(paths)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if "cannot import" in done.stdout:
            pytest.skip(f"{user} cannot import rlab with {python}: {done.stdout}")
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)
    if answer.get("unavailable"):
        pytest.skip(f"netns does not work for {user}: {answer['unavailable']}")
    assert answer["ok"], answer
    assert answer["details"]["hidden_paths"] is True
    report = answer["report"]
    leaks = {name: report[name] for name in SHOULD_FAIL if report[name].startswith("allowed")}
    assert not leaks, leaks
    assert len(report["pids"]) <= 3
    assert answer["report"]["data"] == "42" and answer["cached"] == "cached"


USER_SUPERVISOR = """
import json, os, socket, sys, tempfile, uuid
from pathlib import Path
try:
    from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
    from rlab_core.errors import SandboxUnavailableError
    import test_jail_netns as t
except ImportError as exc:
    print("cannot import", exc)
    raise SystemExit(0)

root = Path(sys.argv[1])
secret = t._own_environ_entry()
built = t._site(root / "site", secret)
request, site = built["request"], built["site"]
unix, tcp = t._listen(Path(site["socket"]))
host = Path(tempfile.mkdtemp(dir=root))
# /root is not this user's to read anyway; what matters is that the jail shows nothing there
site.update(root_file="/root/.profile", port=tcp.getsockname()[1], host_folder=str(host))
(request.workdir / "site.json").write_text(json.dumps(site))
try:
    box = LocalSandbox(LocalSandboxConfig(isolation="netns", python=sys.executable))
except SandboxUnavailableError as exc:
    print(json.dumps({"unavailable": str(exc)}))
    raise SystemExit(0)
execution = box.run(request)
report = json.loads((request.output_dir / "report.json").read_text()) if execution.ok else {}
print(json.dumps({
    "ok": execution.ok, "log": execution.log_tail, "details": box.isolation_details(),
    "report": report, "cached": (request.cache_dir / "feature.bin").read_text(),
}))
"""


def test_the_same_probe_gets_through_without_isolation(tmp_path):
    """The control: every attempt the jail stops would succeed with isolation none."""
    secret = _own_environ_entry()
    built = _site(tmp_path, secret)
    request, site = built["request"], built["site"]
    unix, tcp = _listen(Path(site["socket"]))
    site.update(root_file=site["hidden_file"], port=tcp.getsockname()[1], host_folder=str(tmp_path))
    (request.workdir / "site.json").write_text(json.dumps(site))
    try:
        execution = LocalSandbox(LocalSandboxConfig(isolation="none")).run(request)
    finally:
        unix.close()
        tcp.close()
    assert execution.ok, execution.log_tail
    report = json.loads((request.output_dir / "report.json").read_text())
    for name in ("hidden_folder", "hidden_file", "journal", "unix_socket", "tcp", "write_host"):
        assert report[name].startswith("allowed"), (name, report[name])
    assert report["orchestrator_environ"].startswith("allowed") or os.geteuid() != 0
    assert report["any_environ"].startswith("allowed")


@needs_covers
def test_writable_folders_outside_every_cover_stay_writable(tmp_path):
    """The host is read-only in the jail; the candidate's own folders are not, wherever they are."""
    outside = Path(tempfile.mkdtemp(prefix="rlab-netns-uncovered-", dir=sys.prefix))
    try:
        program = (
            "import os, pathlib\n"
            "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'out.txt').write_text('written')\n"
            "pathlib.Path('scratch.txt').write_text('x')\n"
            "try:\n"
            "    pathlib.Path(os.environ['RLAB_DATA_DIR'], 'planted.txt').write_text('x')\n"
            "    print('data writable')\n"
            "except OSError as exc:\n"
            "    print('data', exc.strerror)\n"
        )
        request = _request(outside, program)
        execution = LocalSandbox(LocalSandboxConfig(isolation="netns")).run(request)
        assert execution.ok, execution.log_tail
        assert (request.output_dir / "out.txt").read_text() == "written"
        assert (request.workdir / "scratch.txt").exists()
        assert "data Read-only file system" in execution.log_tail
    finally:
        shutil.rmtree(outside)
