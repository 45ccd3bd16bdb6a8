"""The ``netns`` level: what ``unshare`` gives a candidate where bubblewrap cannot run.

``unshare --net --pid --fork --mount-proc --kill-child`` (plus ``--map-root-user`` when rlab
is not root) gives the candidate no network, its own pid namespace and ``/proc`` (orphans die
with it, no other process's ``/proc/<pid>/environ`` is in view) and its own mount namespace.
In there the launcher's ``cover`` mode (:mod:`~rlab_core.builtin.jail_covers`) makes the
host's files read-only, covers the task's hidden paths and the secrets every host has, gives
fresh size-capped ``/tmp``, ``/var/tmp`` and ``/dev/shm``, re-exposes the interpreter, the
data (read-only) and the candidate's own folders (writable), then drops every capability.

In front of ``unshare`` the launcher's ``guard`` mode arms a parent-death signal, so a
supervisor that dies (a lost Ray worker) takes the whole namespace with it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).with_name("jail_launcher.py")
UNSHARE_FLAGS = ("--net", "--pid", "--fork", "--mount-proc", "--kill-child", "--ipc", "--uts")
#: Secrets every host has; covered whatever the task hides.
HOST_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/run",  # docker.sock and other unix sockets; /var/run points here
    "/var/run",
    "/root",
    "/home",
)
#: Replaced by fresh tmpfs mounts capped at the memory limit (their use counts as memory).
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True)
class Netns:
    """What ``unshare`` gives here."""

    unshare: str | None
    pid_namespace: bool = False
    covers: bool = False
    problem: str = ""  # why the level does not work at all; empty when it does
    cover_problem: str = ""  # why the mount-namespace part does not work

    @property
    def works(self) -> bool:
        """True when a candidate can run in a fresh network namespace."""
        return not self.problem


#: Imports the launcher (appended to sys.path: the standard library still comes first) so
#: that its cached bytecode is used; a script would be compiled anew at every start.
_BOOT = "import sys; sys.path.append(sys.argv.pop(1)); import jail_launcher; jail_launcher.main()"


def launcher_argv(mode: str, *options: str) -> list[str]:
    """``jail_launcher MODE OPTIONS...`` run by rlab's own interpreter, isolated, no site."""
    return [sys.executable, "-I", "-S", "-c", _BOOT, str(LAUNCHER.parent), mode, *options]


def lc_ctype(env: dict[str, str]) -> list[str]:
    """The launcher option that hands the candidate ``LC_CTYPE`` exactly as given."""
    return ["--lc-ctype", env["LC_CTYPE"]] if "LC_CTYPE" in env else []


def home_folders() -> set[str]:
    """The home folders of the user running rlab ($HOME and the password database's)."""
    homes = {os.environ.get("HOME", "")}
    with contextlib.suppress(KeyError):  # a uid without an entry has no home to hide
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    return {h for h in homes if h and h != "/"}


def cover_options(
    *,
    python_roots: Iterable[Path],
    workdir: Path,
    data_dir: Path,
    writable: Iterable[Path],
    hidden: Iterable[Path],
    tmp_bytes: int,
) -> list[str]:
    """The ``cover`` options for one candidate (paths that do not exist are left out)."""
    options = ["--size", str(tmp_bytes)]
    for folder in PRIVATE_TMP:
        options += ["--tmp", folder]
    secrets = [*HOST_SECRETS, *sorted(home_folders())]
    for path in [*(Path(p) for p in hidden), *(Path(s) for s in secrets)]:
        for shown in dict.fromkeys((str(path), os.path.realpath(path))):
            if os.path.lexists(shown):
                options += ["--hide", shown]
    for root in python_roots:
        if root.is_dir():
            options += ["--ro", os.path.realpath(root)]
    options += ["--ro", os.path.realpath(data_dir)]
    for folder in (workdir, *writable):
        if Path(folder).exists():
            options += ["--rw", os.path.realpath(folder)]
    return [*options, "--chdir", os.path.realpath(workdir)]


def unshare_prefix(unshare: str, *, pid_namespace: bool = True) -> list[str]:
    """The ``unshare`` command line (up to ``--``) for this user."""
    flags = list(UNSHARE_FLAGS) if pid_namespace else ["--net"]
    if os.geteuid() != 0:
        flags.append("--map-root-user")
    return [unshare, *flags, "--"]


def netns_argv(
    netns: Netns, command: list[str], env: dict[str, str], cover: list[str] | None
) -> list[str]:
    """The whole command line: guard, unshare, the cover launcher (when covers work), command.

    Without a pid namespace nothing kills a detached grandchild with the candidate, so the
    launcher in front reaps instead of guarding (``unshare --net`` execs the candidate as
    its child): the supervisor must then treat the root process as a reaping launcher.
    """
    mode = "guard" if netns.pid_namespace else "reap"
    guard = launcher_argv(mode, str(os.getpid()), *lc_ctype(env), "--")
    assert netns.unshare is not None
    prefix = unshare_prefix(netns.unshare, pid_namespace=netns.pid_namespace)
    inner = launcher_argv("cover", *lc_ctype(env), *cover, "--") if netns.covers and cover else []
    return [*guard, *prefix, *inner, *command]


def _run(argv: list[str], cwd: str | None = None) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=30, check=False, cwd=cwd
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, getattr(exc, "strerror", None) or str(exc)
    lines = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
    last = lines[-1].removeprefix("unshare: ") if lines else f"exit status {done.returncode}"
    return done.returncode == 0, last[:240]


#: Run inside the probe jail: everything the covers promise, checked from the inside.
_CHECK = """
import os, sys
run, data = sys.argv[1], sys.argv[2]
assert not os.path.exists(os.path.join(run, "secret.txt")), "a hidden file is in view"
assert open(os.path.join(data, "input.txt")).read() == "42", "the data is not in view"
open("written.txt", "w").write("ok")
try:
    open(os.path.join(data, "planted.txt"), "w")
except OSError:
    pass
else:
    raise AssertionError("the data folder is writable")
status = open("/proc/self/status").read()
assert "CapEff:\\t0000000000000000" in status and "NoNewPrivs:\\t1" in status, "privileges kept"
assert not os.path.exists("/etc/shadow") or open("/etc/shadow").read() == "", "/etc/shadow shows"
"""


def _probe_covers(unshare: str) -> str:
    """Run a probe candidate under the covers; empty when it saw what it must, else why not."""
    from rlab_core.builtin.jail import python_roots  # jail imports this module

    with tempfile.TemporaryDirectory(prefix="rlab-netns-probe-") as raw:
        root = Path(raw)
        run, data = root / "run", root / "data"
        work = run / "work"
        work.mkdir(parents=True)
        data.mkdir()
        (run / "secret.txt").write_text("hidden")
        (data / "input.txt").write_text("42")
        cover = cover_options(
            python_roots=python_roots(sys.executable),
            workdir=work,
            data_dir=data,
            writable=[],
            hidden=[run],
            tmp_bytes=2**20,
        )
        netns = Netns(unshare, pid_namespace=True, covers=True)
        check = [sys.executable, "-I", "-S", "-c", _CHECK, str(run), str(data)]
        ok, why = _run(netns_argv(netns, check, dict(os.environ), cover), cwd=str(work))
        if ok and (work / "written.txt").read_text() != "ok":
            return "the candidate's writable folder did not reach the host"
        return "" if ok else why


@functools.cache
def probe_netns(unshare: str | None) -> Netns:
    """What ``unshare`` gives here (cached: probed once per process)."""
    if not unshare:
        return Netns(None, problem="unshare (util-linux) is not on PATH")
    ok, why = _run([*unshare_prefix(unshare), "true"])
    if not ok:
        plain_ok, plain_why = _run([*unshare_prefix(unshare, pid_namespace=False), "true"])
        if not plain_ok:
            return Netns(unshare, problem=f"unshare could not start: {plain_why}")
        return Netns(unshare, cover_problem=f"no pid and mount namespaces: {why}")
    problem = _probe_covers(unshare)
    return Netns(unshare, pid_namespace=True, covers=not problem, cover_problem=problem)


def find_netns() -> Netns:
    """The netns level as ``unshare`` on PATH gives it."""
    found = shutil.which("unshare")
    return probe_netns(os.path.abspath(found) if found else None)
