"""``rlab final RUN``: the one test-split scoring of the node validation chose."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from rlab_core.cli.common import (
    JsonFlag,
    RunPath,
    RunsFolder,
    console,
    make_host,
    print_json,
    user_errors,
)
from rlab_core.final import finalize
from rlab_core.report.numbers import (
    MEDAL_FIELDS,
    final_gap_text,
    final_test_text,
    format_score,
    mean_spread_text,
    medal_text,
)
from rlab_core.report.sanitize import safe
from rlab_core.report.terminal import unbroken_lines
from rlab_core.run_folder import open_run


def register(app: typer.Typer) -> None:
    app.command("final")(final)


@user_errors
def final(
    run_path: RunPath = "latest",
    force: bool = typer.Option(False, "--force", help="Score the test split again (recorded)."),
    as_json: JsonFlag = False,
    out: RunsFolder = Path("runs"),
) -> None:
    """Score the test split once for the validation-chosen node, audit its code, write final_report.json."""
    opened = open_run(run_path, out)
    report = finalize(make_host(), opened, force=force)
    if as_json:
        print_json(report)  # final_report.json as written
        return
    soft = unbroken_lines(console)  # piped: paths and long lines stay whole
    for line in final_lines(report, str(opened.folder.final_report)):
        console.print(line, soft_wrap=soft)


def final_lines(report: Mapping[str, Any], report_path: str) -> list[str]:
    """What ``rlab final`` prints for a ``final_report.json`` (rich markup, run text escaped)."""
    audit = report["audit"]
    lines = [f"[bold]final[/] node {safe(report['node'])} (selected by validation)"]
    if report.get("selection_rule"):
        lines.append(f"  selection: {safe(report['selection_rule'])}")
    val = format_score(report["val_primary"], report.get("val_standard_error"))
    unit = report.get("val_resample_unit")
    lines.append(
        f"  val  {safe(report['primary_metric'])} {val}" + (f" (over {safe(unit)})" if unit else "")
    )
    if report["test_metrics"] is not None:
        lines.append(f"  {safe(final_test_text(report))}")
        gap = final_gap_text(report)
        if gap:
            lines.append(f"  {gap}")
        medal = medal_text(report)
        if medal:
            lines.append(f"  [bold]{safe(medal)}[/]")
        shown = set(MEDAL_FIELDS) if medal else set()
        metrics = ", ".join(
            f"{safe(name)} {_metric(value)}"
            for name, value in report["test_metrics"].items()
            if name not in shown
        )
        lines.append(f"  test metrics: {metrics}")
    else:
        lines.append(f"  [red]test predictions unusable:[/] {safe(report['test_error'])}")
    finalists = report.get("finalists") or []
    if finalists:
        lines.append("  finalists (validation, mean ± spread over seeds):")
    for row in finalists:
        star = "★" if row.get("node") == report["node"] else " "
        seeds = len(row.get("scores") or {})
        failed = len(row.get("failures") or {})
        note = f", [red]{failed} failed[/]" if failed else ""
        lines.append(
            f"    {safe(row['node'])} {star} {mean_spread_text(row)}  ({seeds} seeds{note})"
        )
    state = "[green]clean[/]" if audit["clean"] else f"[red]{len(audit['findings'])} finding(s)[/]"
    lines.append(f"  audit {state}; report: {safe(report_path)}")
    return lines


def _metric(value: Any) -> str:
    """A test metric as a number (``0.91234``; a whole number without decimals)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return safe(value)
    return f"{value:.6g}"
