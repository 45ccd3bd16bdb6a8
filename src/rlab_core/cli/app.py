"""The root Typer application."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from rlab_core import __version__
from rlab_core.cli import (
    final_cmd,
    knowledge_cmd,
    list_cmd,
    plugins_cmd,
    report_cmd,
    run_cmd,
    show_cmd,
)
from rlab_core.cli.common import console, setup_logging


def _value_word(param: Any) -> str:
    """A placeholder for the value an option takes: ``N``, ``NUMBER``, ``PATH`` or ``TEXT``."""
    # Typer ≥ 0.20 describes a parameter by its annotation, older ones by a click type
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        text = str(descriptor.annotation).lower()
    else:
        text = str(getattr(param.type, "name", "")).lower()
    for needle, word in (("path", "PATH"), ("float", "NUMBER"), ("int", "N")):
        if needle in text:
            return word
    return "TEXT"


def plain_help_labels(command: Any) -> None:
    """Help without Python type labels (``<bool>``, ``<list[str]>``), on every command.

    A flag shows no label at all (so ``--tree`` does not look as if it took a value), an
    option that takes a value shows what to write (``N``, ``NUMBER``, ``PATH``, ``TEXT``),
    an argument its name in capitals. A metavar a command sets itself is kept.
    """
    # the help option is made on first use, with a context; make it now to label it too
    help_option = command.get_help_option(command.context_class(command))
    for param in [*command.params, *filter(None, [help_option])]:
        if param.param_type_name == "option":
            if param.metavar is None:
                param.metavar = "" if param.is_flag or param.count else _value_word(param)
        elif param.param_type_name == "argument":
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
            if hasattr(param, "display_type_rich"):
                # Typer ≥ 0.20 prints an argument's type beside its name, whatever its metavar
                param.display_type_rich = lambda ctx: None
    for sub in getattr(command, "commands", {}).values():
        plain_help_labels(sub)


class RlabGroup(TyperGroup):
    """The root command: plain help labels on every command before anything is parsed."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        plain_help_labels(self)
        return super().main(*args, **kwargs)


app = typer.Typer(
    name="rlab",
    cls=RlabGroup,
    help="An autonomous ML research loop: hypothesis, reviewable edit, sandboxed run, validation score.",
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    # `rlab --install-completion` / `rlab --show-completion`: the shell asks rlab itself
    # (`_RLAB_COMPLETE`), so completion costs nothing until a TAB is pressed
    add_completion=True,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        console.print(f"rlab {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="Debug lines on stderr: plugin loading, data preparation, sandbox commands.",
        envvar="RLAB_VERBOSE",
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
knowledge_cmd.register(app)  # `rlab knowledge ...` and `rlab mcp`


def main() -> None:
    """Console-script entry point."""
    app()
