"""``rlab final RUN``: the one test-split scoring of the node validation chose."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from rlab_core.cli.common import RunPath, RunsFolder, console, make_host, user_errors
from rlab_core.final import finalize
from rlab_core.report.numbers import final_gap_text, final_test_text, format_score, mean_spread_text
from rlab_core.run_folder import open_run


def register(app: typer.Typer) -> None:
    app.command("final")(final)


@user_errors
def final(
    run_path: RunPath = "latest",
    force: bool = typer.Option(False, "--force", help="Score the test split again (recorded)."),
    out: RunsFolder = Path("runs"),
) -> None:
    """Score the test split once for the validation-chosen node, audit its code, write final_report.json."""
    opened = open_run(run_path, out)
    run = opened.folder
    report = finalize(make_host(), opened, force=force)
    audit = report["audit"]
    console.print(f"[bold]final[/] node {report['node']} (selected by validation)")
    if report.get("selection_rule"):
        console.print(f"  selection: {escape(report['selection_rule'])}")
    val = format_score(report["val_primary"], report.get("val_standard_error"))
    unit = report.get("val_resample_unit")
    console.print(f"  val  {report['primary_metric']} {val}" + (f" (over {unit})" if unit else ""))
    if report["test_metrics"] is not None:
        console.print(f"  {escape(final_test_text(report))}")
        gap = final_gap_text(report)
        if gap:
            console.print(f"  {gap}")
        console.print(f"  test metrics {escape(json.dumps(report['test_metrics']))}")
    else:
        console.print(f"  [red]test predictions unusable:[/] {report['test_error']}")
    finalists = report.get("finalists") or []
    if finalists:
        console.print("  finalists (validation, mean ± spread over seeds):")
        for row in finalists:
            star = "★" if row.get("node") == report["node"] else " "
            seeds = len(row.get("scores") or {})
            failed = len(row.get("failures") or {})
            note = f", [red]{failed} failed[/]" if failed else ""
            console.print(
                f"    {row['node']} {star} {mean_spread_text(row)}  ({seeds} seeds{note})"
            )
    state = "[green]clean[/]" if audit["clean"] else f"[red]{len(audit['findings'])} finding(s)[/]"
    console.print(f"  audit {state}; report: {run.final_report}")
