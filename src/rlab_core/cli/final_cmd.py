"""``rlab final RUN``: the one test-split scoring of the node validation chose."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rlab_core.cli.common import RunPath, RunsFolder, console, make_host, user_errors
from rlab_core.final import finalize
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
    console.print(f"  val  {report['primary_metric']} = {report['val_primary']:.5f}")
    if report["test_metrics"] is not None:
        console.print(
            f"  test {report['primary_metric']} = {report['test_primary']:.5f}   {json.dumps(report['test_metrics'])}"
        )
    else:
        console.print(f"  [red]test predictions unusable:[/] {report['test_error']}")
    state = "[green]clean[/]" if audit["clean"] else f"[red]{len(audit['findings'])} finding(s)[/]"
    console.print(f"  audit {state}; report: {run.final_report}")
