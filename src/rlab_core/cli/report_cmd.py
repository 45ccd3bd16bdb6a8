"""``rlab report RUN``: write the run's self-contained HTML dashboard."""

from __future__ import annotations

from pathlib import Path

import typer

from rlab_core.cli.common import RunPath, RunsFolder, console, user_errors
from rlab_core.errors import RunFolderError
from rlab_core.report.html import write_report
from rlab_core.run_folder import RunFolder


def register(app: typer.Typer) -> None:
    app.command("report")(report)


@user_errors
def report(
    run_path: RunPath = "latest",
    output: Path = typer.Option(
        None, "--output", help="Where to write the page (default RUN/report.html)."
    ),
    out: RunsFolder = Path("runs"),
) -> None:
    """Write report.html: gains, decision tree, score chart, experiment table, run facts."""
    run = RunFolder.open(run_path, out)
    try:
        path = write_report(run, output)
    except OSError as exc:
        raise RunFolderError(
            f"Cannot write the report to {output or run.root}: {exc.strerror}; pass a writable --output."
        ) from None
    console.print(f"[bold]report:[/] {path}")
