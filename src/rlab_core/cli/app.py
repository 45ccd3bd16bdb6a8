"""The root Typer application."""

from __future__ import annotations

import typer

from rlab_core import __version__
from rlab_core.cli import final_cmd, list_cmd, plugins_cmd, report_cmd, run_cmd, show_cmd
from rlab_core.cli.common import console, setup_logging

app = typer.Typer(
    name="rlab",
    help="An autonomous ML research loop: hypothesis, reviewable edit, sandboxed run, validation score.",
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        console.print(f"rlab {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Debug logging.", envvar="RLAB_VERBOSE"
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """rlab: start from a runnable program, propose, edit, run, score, keep the evidence."""
    setup_logging(verbose)


run_cmd.register(app)
app.add_typer(list_cmd.app, name="list")
plugins_cmd.register(app)
show_cmd.register(app)
final_cmd.register(app)
report_cmd.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
