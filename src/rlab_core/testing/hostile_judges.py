"""How a hostile attack is judged: from what the sandbox did and what was taken as outputs.

Each judge takes an :class:`Outcome` and returns (passed, evidence).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rlab_core.records import Execution
from rlab_core.testing.hostile_site import LIMIT_MB, PRIVATE_BYTES, VICTIM_TEXT, Site


@dataclass
class Outcome:
    """What one attack left: the execution, the taken outputs or the refusal, its site."""

    execution: Execution
    taken: Path
    refused: str | None
    site: Site
    cache: Path


#: A judge: (passed, evidence) from an outcome.
Judge = Callable[[Outcome], tuple[bool, str]]


def refused_naming(name: str, why: str) -> Judge:
    """Passes when taking the outputs was refused, naming ``name`` and ``why``."""

    def judge(o: Outcome) -> tuple[bool, str]:
        if o.refused and name in o.refused and why in o.refused:
            return True, o.refused
        return False, f"expected a refusal naming {name!r} ({why}); got {o.refused or 'none'}"

    return judge


def no_private_bytes(o: Outcome) -> tuple[bool, str]:
    """Passes when no taken file holds the private labels."""
    for path in o.taken.rglob("*") if o.taken.is_dir() else ():
        if path.is_file() and PRIVATE_BYTES in path.read_bytes():
            return False, f"the private labels reached the taken copy as {path.name}"
    return True, o.refused or "nothing private was taken"


def victim_unchanged(o: Outcome) -> tuple[bool, str]:
    """Passes when the link was refused and the grader writing its report changed no host file."""
    ok, detail = refused_naming("grading_report.json", "symbolic link")(o)
    if o.taken.is_dir():  # the harness writing its report beside the predictions
        (o.taken / "grading_report.json").write_text("{}")
    unchanged = o.site.victim.read_text() == VICTIM_TEXT
    return ok and unchanged, detail if unchanged else "the victim file outside the run changed"


def _report(o: Outcome) -> dict[str, str]:
    path = o.taken / "report.json"
    if not path.is_file():
        return {"error": f"no report ({o.refused or o.execution.log_tail[-300:]})"}
    return json.loads(path.read_text())


def all_denied(o: Outcome) -> tuple[bool, str]:
    """Passes when the candidate's own report shows every attempt denied."""
    report = _report(o)
    if "error" in report:
        return False, report["error"]
    leaked = {k: v for k, v in report.items() if v.startswith("allowed")}
    return not leaked, json.dumps(leaked or report)


def killed_by(kind: str) -> Judge:
    """Passes when the candidate was killed by the ``kind`` limit, or could not exceed it."""

    def judge(o: Outcome) -> tuple[bool, str]:
        e = o.execution
        if e.killed_by == kind:
            return True, f"killed by {kind} (peak memory {e.peak_memory_mb:.0f} MiB)"
        held = _report(o).get("held_mb")
        if held is not None and float(held) < LIMIT_MB[kind] * 1.1:
            return True, f"could not exceed the limit (held {held} MiB)"
        return False, f"not killed by {kind}: killed_by={e.killed_by}, exit={e.exit_code}"

    return judge
