"""The hostile-candidate suite against the local sandbox at every level it offers.

The suite (``rlab_core.testing.check_hostile``) is also run against the docker sandbox
(tests/test_docker_sandbox.py) and the ray sandbox (plugins/rlab_ray/tests).
"""

from __future__ import annotations

import pytest

from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.testing.hostile import ATTACK_NAMES, check_hostile


@pytest.mark.parametrize("level", ["bubblewrap", "netns"])
def test_every_attack_fails_in_a_jail_that_hides_paths(level: str) -> None:
    sandbox = LocalSandbox(LocalSandboxConfig(isolation=level))
    assert sandbox.isolation_details()["hidden_paths"] is True
    report = check_hostile(sandbox)
    assert report.tried == len(ATTACK_NAMES) and not report.leaks and report.orphans == 0
    details = {r.name: r.detail for r in report.results}
    assert details["tmpfs-memory-hog"].startswith(("killed by memory", "could not exceed"))
    assert details["disk-flood"].startswith("killed by disk")
    assert '"environ": "none visible"' in details["proc-environ-of-other-processes"]


def test_without_isolation_outputs_orphans_and_disk_still_hold() -> None:
    """At the opt-in level none, taking outputs as data, the reaper and the disk cap still work."""
    sandbox = LocalSandbox(LocalSandboxConfig(isolation="none"))
    report = check_hostile(sandbox)
    assert not report.leaks and report.orphans == 0
    assert report.tried == len(ATTACK_NAMES) - 4  # reading, environ, sockets, tmpfs need a jail


def test_the_suite_sees_a_leak_where_there_is_one() -> None:
    """Control: at level none a candidate can read hidden paths and other processes' environ."""
    sandbox = LocalSandbox(LocalSandboxConfig(isolation="none"))
    report = check_hostile(
        sandbox,
        attacks=["read-hidden-paths", "proc-environ-of-other-processes"],
        raise_on_leak=False,
    )
    assert [r.name for r in report.leaks] == [
        "read-hidden-paths",
        "proc-environ-of-other-processes",
    ]
    with pytest.raises(AssertionError, match="2 leaks"):
        check_hostile(sandbox, attacks=["read-hidden-paths", "proc-environ-of-other-processes"])
