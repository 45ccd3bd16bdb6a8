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
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rlab_core.interfaces import Sandbox
from rlab_core.outputs import OutputsRefused, take_outputs
from rlab_core.task_records import SandboxRequest
from rlab_core.testing.hostile_attacks import ATTACK_NAMES, Attack, all_attacks, attack_program
from rlab_core.testing.hostile_judges import Outcome
from rlab_core.testing.hostile_site import (
    LIMIT_MB,
    SECRET_VALUE,
    VICTIM_TEXT,
    Listeners,
    Site,
    heartbeat_alive,
    make_site,
    start_secret_holder,
)


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


def _request(site: Site, attack: Attack, folder: Path) -> SandboxRequest:
    work, out, cache = folder / "work", folder / "outputs", folder / "cache"
    for path in (work, out, cache):
        path.mkdir(parents=True)
    (work / "main.py").write_text(attack_program(attack))
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


def _run_attack(sandbox: Sandbox, site: Site, attack: Attack, folder: Path) -> AttackResult:
    request = _request(site, attack, folder)
    execution = sandbox.run(request)
    taken = folder / "taken"
    refused = execution.output_problem
    if refused is None:
        try:
            take_outputs(request.output_dir, taken, max_bytes=64 * 2**20)
        except OutputsRefused as exc:
            refused = str(exc)
    outcome = Outcome(execution, taken, refused, site, request.cache_dir)
    passed, detail = attack.judge(outcome)
    orphan = False
    if attack.name == "detached-grandchild":
        orphan = heartbeat_alive(request.cache_dir)
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
        for a in all_attacks()
        if (a.name in wanted if wanted is not None else (hiding or not a.needs_hiding))
    ]
    report = HostileReport(type(sandbox).__name__, sandbox.isolation_level())
    with tempfile.TemporaryDirectory(prefix="rlab-hostile-") as raw:
        root = Path(raw)
        root.chmod(0o755)
        site = make_site(root / "site")
        listeners = Listeners(site.unix_socket)
        site.listener_port = listeners.port
        holder = start_secret_holder()
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
