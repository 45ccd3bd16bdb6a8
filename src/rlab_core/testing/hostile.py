"""The hostile-candidate suite: what a candidate trying to forge its score or escape does.

:func:`check_hostile` runs each attack as a real candidate through a sandbox, then takes its
outputs the way the loop does (:func:`rlab_core.outputs.take_outputs`, or the sandbox's own
``Execution.output_problem`` when it moved them itself) and judges what happened. Attacks:

- links named like prediction files: to the private labels (absolute and relative), a
  linked folder, a dangling link, a link to a host file kept as an "artifact", a link
  named like a file the grader writes, hard links, a fifo, a sparse file past the outputs
  cap, the output folder itself swapped for a link;
- reading a hidden path and the run folder, other processes' ``/proc/*/environ``, a TCP
  listener and a unix socket on the host, writing outside the writable folders;
- a detached grandchild (``setsid`` + double fork) that would outlive the candidate;
- a memory hog in the jail's tmpfs, a disk flood.

Each attack passes or fails with the evidence; the report counts attacks, leaks and
orphans. Attacks that need a level which hides paths run only when the sandbox says it
hides them (``isolation_details()["hidden_paths"]``), unless asked for explicitly.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rlab_core.interfaces import Sandbox
from rlab_core.outputs import OutputsRefused, take_outputs
from rlab_core.records import Execution
from rlab_core.task_records import SandboxRequest

SECRET_VARIABLE = "RLAB_HOSTILE_SECRET"
SECRET_VALUE = "hostile-suite-secret-4711"
PRIVATE_BYTES = b"PRIVATE-LABELS-0123456789"
VICTIM_TEXT = "victim: must never change"


@dataclass
class AttackResult:
    """One attack and what came of it."""

    name: str
    passed: bool
    detail: str
    orphan: bool = False


@dataclass
class HostileReport:
    """What :func:`check_hostile` found on one sandbox."""

    sandbox: str
    level: str
    results: list[AttackResult] = field(default_factory=list)

    @property
    def tried(self) -> int:
        return len(self.results)

    @property
    def leaks(self) -> list[AttackResult]:
        return [r for r in self.results if not r.passed]

    @property
    def orphans(self) -> int:
        return sum(r.orphan for r in self.results)

    def summary(self) -> str:
        """One line: attacks tried, leaks, orphans."""
        return (
            f"{self.sandbox} ({self.level}): {self.tried} attacks, {len(self.leaks)} leaks, "
            f"{self.orphans} orphans"
        )


@dataclass
class _Site:
    """The folders of one attack: what a run would have, with a private side and a victim."""

    root: Path
    data: Path
    private: Path
    run: Path
    host: Path
    listener_port: int
    unix_socket: Path

    @property
    def labels(self) -> Path:
        return self.private / "labels.npy"

    @property
    def journal(self) -> Path:
        return self.run / "journal.jsonl"

    @property
    def victim(self) -> Path:
        return self.host / "victim.txt"


@dataclass
class _Outcome:
    execution: Execution
    taken: Path
    refused: str | None
    site: _Site
    cache: Path


@dataclass(frozen=True)
class _Attack:
    name: str
    program: str
    judge: Callable[[_Outcome], tuple[bool, str]]
    needs_hiding: bool = False
    limit: str | None = None  # "memory" or "disk": run with a small limit of that kind


def _refused_naming(name: str, why: str) -> Callable[[_Outcome], tuple[bool, str]]:
    def judge(o: _Outcome) -> tuple[bool, str]:
        if o.refused and name in o.refused and why in o.refused:
            return True, o.refused
        return False, f"expected a refusal naming {name!r} ({why}); got {o.refused or 'none'}"

    return judge


def _no_private_bytes(o: _Outcome) -> tuple[bool, str]:
    for path in o.taken.rglob("*") if o.taken.is_dir() else ():
        if path.is_file() and PRIVATE_BYTES in path.read_bytes():
            return False, f"the private labels reached the taken copy as {path.name}"
    return True, o.refused or "nothing private was taken"


def _victim_unchanged(o: _Outcome) -> tuple[bool, str]:
    ok, detail = _refused_naming("grading_report.json", "symbolic link")(o)
    if o.taken.is_dir():  # the harness writing its report beside the predictions
        (o.taken / "grading_report.json").write_text("{}")
    unchanged = o.site.victim.read_text() == VICTIM_TEXT
    return ok and unchanged, detail if unchanged else "the victim file outside the run changed"


def _report(o: _Outcome) -> dict[str, str]:
    path = o.taken / "report.json"
    if not path.is_file():
        return {"error": f"no report ({o.refused or o.execution.log_tail[-300:]})"}
    return json.loads(path.read_text())


def _all_denied(o: _Outcome) -> tuple[bool, str]:
    report = _report(o)
    if "error" in report:
        return False, report["error"]
    leaked = {k: v for k, v in report.items() if v.startswith("allowed")}
    return not leaked, json.dumps(leaked or report)


def _killed_by(kind: str) -> Callable[[_Outcome], tuple[bool, str]]:
    def judge(o: _Outcome) -> tuple[bool, str]:
        e = o.execution
        if e.killed_by == kind:
            return True, f"killed by {kind} (peak memory {e.peak_memory_mb:.0f} MiB)"
        held = _report(o).get("held_mb")
        if held is not None and float(held) < LIMIT_MB[kind] * 1.1:
            return True, f"could not exceed the limit (held {held} MiB)"
        return False, f"not killed by {kind}: killed_by={e.killed_by}, exit={e.exit_code}"

    return judge


LIMIT_MB = {"memory": 192, "disk": 48}
_PRELUDE = """\
import json, os, pathlib, socket, sys, time
OUT = pathlib.Path(os.environ["RLAB_OUTPUT_DIR"])
CACHE = pathlib.Path(os.environ["RLAB_CACHE_DIR"])
SITE = json.loads(pathlib.Path("site.json").read_text())
def attempt(action):
    try:
        result = action()
        return "allowed" + ("" if result is None else f": {str(result)[:60]}")
    except BaseException as exc:
        return type(exc).__name__
"""


def _attacks() -> list[_Attack]:
    link = "symbolic link"
    return [
        _Attack(
            "symlink-to-private-labels",
            "os.symlink(SITE['labels'], OUT / 'val_predictions.npy')",
            _refused_naming("val_predictions.npy", link),
        ),
        _Attack(
            "relative-symlink-to-private",
            "os.symlink(os.path.relpath(SITE['labels'], OUT), OUT / 'test_predictions.npy')",
            _refused_naming("test_predictions.npy", link),
        ),
        _Attack(
            "symlinked-folder",
            "(OUT / 'preds').mkdir()\nos.symlink(SITE['private'], OUT / 'preds' / 'all')",
            _refused_naming("preds/all", link),
        ),
        _Attack(
            "dangling-symlink",
            "os.symlink('/nonexistent/rlab/labels.csv', OUT / 'submission.csv')",
            _refused_naming("submission.csv", link),
        ),
        _Attack(
            "host-file-as-artifact",
            "(OUT / 'val_predictions.npy').write_bytes(b'0')\n"
            "os.symlink('/etc/passwd', OUT / 'notes.txt')",
            _refused_naming("notes.txt", link),
        ),
        _Attack(
            "link-named-like-a-grader-file",
            "os.symlink(SITE['victim'], OUT / 'grading_report.json')",
            _victim_unchanged,
        ),
        _Attack(
            "hard-link-to-private-labels",
            "state = attempt(lambda: os.link(SITE['labels'], OUT / 'val_predictions.npy'))\n"
            "(OUT / 'attempt.txt').write_text(state)",
            _no_private_bytes,
        ),
        _Attack(
            "hard-link-inside-outputs",
            "(OUT / 'a.csv').write_text('x')\nos.link(OUT / 'a.csv', OUT / 'b.csv')",
            _refused_naming("a.csv", "hard link"),
        ),
        _Attack(
            "fifo-named-like-predictions",
            "os.mkfifo(OUT / 'val_predictions.csv')",
            _refused_naming("val_predictions.csv", "fifo"),
        ),
        _Attack(
            "sparse-file-past-the-outputs-cap",
            "with open(OUT / 'val_predictions.npy', 'wb') as f:\n    f.truncate(2 * 2**30)",
            _refused_naming("val_predictions.npy", "MiB limit"),
        ),
        _Attack(
            "output-folder-swapped-for-a-link",
            "import shutil\n"
            "attempt(lambda: shutil.rmtree(OUT))\n"
            "attempt(lambda: os.rename(OUT, OUT.with_name('gone')))\n"
            "attempt(lambda: os.symlink(SITE['private'], OUT))",
            _no_private_bytes,
        ),
        _Attack(
            "read-hidden-paths",
            "r = {n: attempt(lambda p=p: pathlib.Path(p).read_bytes()[:8]) for n, p in "
            "[('labels', SITE['labels']), ('run_folder', SITE['journal'])]}\n"
            "r['list_private'] = attempt(lambda: os.listdir(SITE['private']))\n"
            "(OUT / 'report.json').write_text(json.dumps(r))",
            _all_denied,
            needs_hiding=True,
        ),
        _Attack(
            "proc-environ-of-other-processes",
            "found = []\n"
            "for pid in os.listdir('/proc'):\n"
            "    if pid.isdigit() and int(pid) != os.getpid():\n"
            "        try:\n"
            "            if SITE['secret'].encode() in open(f'/proc/{pid}/environ', 'rb').read():\n"
            "                found.append(pid)\n"
            "        except OSError:\n"
            "            pass\n"
            "r = {'environ': 'allowed: ' + ','.join(found) if found else 'none visible'}\n"
            "(OUT / 'report.json').write_text(json.dumps(r))",
            _all_denied,
            needs_hiding=True,
        ),
        _Attack(
            "network-and-host-sockets",
            "def tcp():\n"
            "    socket.create_connection(('127.0.0.1', SITE['port']), timeout=2).close()\n"
            "def unix():\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    s.settimeout(2)\n"
            "    s.connect(SITE['unix_socket'])\n"
            "    s.close()\n"
            "r = {'tcp': attempt(tcp), 'unix_socket': attempt(unix)}\n"
            "r['write_outside'] = attempt(lambda: pathlib.Path(SITE['host'], 'planted.txt')"
            ".write_text('x'))\n"
            "(OUT / 'report.json').write_text(json.dumps(r))",
            _all_denied,
            needs_hiding=True,
        ),
        _Attack(
            "detached-grandchild",
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        beat = CACHE / 'heartbeat'\n"
            "        for i in range(400):\n"
            "            beat.write_text(str(i))\n"
            "            time.sleep(0.05)\n"
            "        os._exit(0)\n"
            "    os._exit(0)\n"
            "time.sleep(0.5)\n"
            "(OUT / 'parent.txt').write_text('done')",
            lambda o: (True, "judged by the heartbeat"),
        ),
        _Attack(
            "tmpfs-memory-hog",
            "held = 0\n"
            "for folder in ('/tmp', '/dev/shm'):\n"
            "    try:\n"
            "        with open(os.path.join(folder, 'hog'), 'wb') as f:\n"
            "            for _ in range(LIMIT // 8 + 4):\n"
            "                f.write(b'x' * 8 * 2**20)\n"
            "                f.flush()\n"
            "                held += 8\n"
            "    except OSError:\n"
            "        pass\n"
            "time.sleep(3)\n"
            "(OUT / 'report.json').write_text(json.dumps({'held_mb': held}))",
            _killed_by("memory"),
            needs_hiding=True,
            limit="memory",
        ),
        _Attack(
            "disk-flood",
            "held = 0\n"
            "try:\n"
            "    with open(OUT / 'flood.bin', 'wb') as f:\n"
            "        for _ in range(4 * LIMIT // 4):\n"
            "            f.write(os.urandom(4 * 2**20))\n"
            "            f.flush()\n"
            "            held += 4\n"
            "            time.sleep(0.02)\n"
            "except OSError:\n"
            "    pass\n"
            "time.sleep(3)\n"
            "(OUT / 'report.json').write_text(json.dumps({'held_mb': held}))",
            _killed_by("disk"),
            limit="disk",
        ),
    ]


ATTACK_NAMES = tuple(a.name for a in _attacks())


def _make_site(root: Path) -> _Site:
    data, private, run, host = (root / n for n in ("data", "private", "run", "host"))
    for folder in (data, private, run, host):
        folder.mkdir(parents=True)
        folder.chmod(0o755)  # a sandbox running candidates as another user reads the data
    (data / "input.txt").write_text("42")
    (private / "labels.npy").write_bytes(PRIVATE_BYTES)
    (run / "journal.jsonl").write_text('{"type": "run_started"}\n')
    (host / "victim.txt").write_text(VICTIM_TEXT)
    return _Site(root, data, private, run, host, 0, host / "daemon.sock")


def _program(attack: _Attack) -> str:
    limit = LIMIT_MB.get(attack.limit or "", 0)
    return _PRELUDE + f"LIMIT = {limit}\n" + textwrap.dedent(attack.program) + "\n"


def _request(site: _Site, attack: _Attack, folder: Path) -> SandboxRequest:
    work, out, cache = folder / "work", folder / "outputs", folder / "cache"
    for path in (work, out, cache):
        path.mkdir(parents=True)
    (work / "main.py").write_text(_program(attack))
    (work / "site.json").write_text(
        json.dumps(
            {
                "labels": str(site.labels),
                "private": str(site.private),
                "journal": str(site.journal),
                "victim": str(site.victim),
                "host": str(site.host),
                "port": site.listener_port,
                "unix_socket": str(site.unix_socket),
                "secret": SECRET_VALUE,
            }
        )
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RLAB_DATA_DIR": str(site.data),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(cache),
        "RLAB_THREADS": "1",
        "HOME": str(work),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return SandboxRequest(
        workdir=work,
        command=["python", "main.py"],
        env=env,
        data_dir=site.data,
        output_dir=out,
        cache_dir=cache,
        log_path=folder / "log.txt",
        hidden_paths=[site.private, site.run],
        timeout_s=30,
        memory_mb=LIMIT_MB["memory"] if attack.limit == "memory" else 512,
        max_output_mb=1.0,
        disk_mb=LIMIT_MB["disk"] if attack.limit == "disk" else 256,
        outputs_mb=64,
    )


class _Listeners:
    """A TCP listener and a unix socket on the host that count who connects."""

    def __init__(self, unix_path: Path) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(str(unix_path))
        self.unix.listen()
        self.connections = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve, args=(s,), daemon=True)
            for s in (self.tcp, self.unix)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def port(self) -> int:
        return int(self.tcp.getsockname()[1])

    def _serve(self, server: socket.socket) -> None:
        server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        self.tcp.close()
        self.unix.close()


def _heartbeat_alive(cache: Path, wait_s: float = 1.0) -> bool:
    beat = cache / "heartbeat"
    before = beat.read_text() if beat.exists() else None
    time.sleep(wait_s)
    after = beat.read_text() if beat.exists() else None
    return after is not None and after != before


def _run_attack(sandbox: Sandbox, site: _Site, attack: _Attack, folder: Path) -> AttackResult:
    request = _request(site, attack, folder)
    execution = sandbox.run(request)
    taken = folder / "taken"
    refused = execution.output_problem
    if refused is None:
        try:
            take_outputs(request.output_dir, taken, max_bytes=64 * 2**20)
        except OutputsRefused as exc:
            refused = str(exc)
    outcome = _Outcome(execution, taken, refused, site, request.cache_dir)
    passed, detail = attack.judge(outcome)
    orphan = False
    if attack.name == "detached-grandchild":
        orphan = _heartbeat_alive(request.cache_dir)
        passed = not orphan and execution.ok
        detail = "a detached grandchild outlived the candidate" if orphan else "no orphan"
        if not execution.ok:
            detail = f"the candidate did not run: {execution.log_tail[-300:]}"
    return AttackResult(attack.name, passed, detail, orphan)


def check_hostile(
    sandbox: Sandbox,
    *,
    attacks: Iterable[str] | None = None,
    hides_paths: bool | None = None,
    raise_on_leak: bool = True,
) -> HostileReport:
    """Run the hostile-candidate attacks through ``sandbox``; raise if any gets through.

    ``attacks`` picks some by name (:data:`ATTACK_NAMES`); by default all that apply: the
    reading, environ, network and tmpfs attacks need a level that hides paths, which
    ``hides_paths`` (default: ``isolation_details()["hidden_paths"]``) says.
    """
    details = sandbox.isolation_details()
    hiding = bool(details.get("hidden_paths")) if hides_paths is None else hides_paths
    wanted = set(attacks) if attacks is not None else None
    chosen = [
        a
        for a in _attacks()
        if (a.name in wanted if wanted is not None else (hiding or not a.needs_hiding))
    ]
    report = HostileReport(type(sandbox).__name__, sandbox.isolation_level())
    with tempfile.TemporaryDirectory(prefix="rlab-hostile-") as raw:
        root = Path(raw)
        root.chmod(0o755)
        site = _make_site(root / "site")
        listeners = _Listeners(site.unix_socket)
        site.listener_port = listeners.port
        # a process of this user that started with a secret in its environment, as rlab
        # does with an API key: /proc/<pid>/environ shows what a process started with
        holder = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            env={**os.environ, SECRET_VARIABLE: SECRET_VALUE},
            stdin=subprocess.DEVNULL,
        )
        try:
            for index, attack in enumerate(chosen):
                report.results.append(
                    _run_attack(sandbox, site, attack, root / f"{index:02d}-{attack.name}")
                )
        finally:
            holder.kill()
            holder.wait()
            listeners.close()
        if listeners.connections and hiding:
            report.results.append(
                AttackResult("host-listeners", False, f"{listeners.connections} connection(s)")
            )
        if site.victim.read_text() != VICTIM_TEXT or (site.host / "planted.txt").exists():
            report.results.append(AttackResult("host-files", False, "a host file changed"))
        with contextlib.suppress(OSError):
            site.labels.chmod(0o644)
    if raise_on_leak and report.leaks:
        lines = "\n".join(f"- {r.name}: {r.detail}" for r in report.leaks)
        raise AssertionError(f"{report.summary()}:\n{lines}")
    return report


__all__ = ["ATTACK_NAMES", "AttackResult", "HostileReport", "check_hostile"]
