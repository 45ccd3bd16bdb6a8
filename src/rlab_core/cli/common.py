"""What every command shares: the console, the plugin host and user-error handling."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.logging import RichHandler

from rlab_core.errors import RlabUserError
from rlab_core.plugins import PluginHost

#: The run to act on: a run folder, its id under the runs folder, or ``latest``.
RunPath = Annotated[
    str, typer.Argument(help="Run folder, its id under the runs folder, or 'latest'.")
]
#: The folder that holds run folders, for ids and ``latest`` (every command that reads a run).
RunsFolder = Annotated[
    Path,
    typer.Option(
        "--out", help="Folder that holds run folders (for ids and 'latest').", envvar="RLAB_OUT"
    ),
]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
F = TypeVar("F", bound=Callable[..., Any])


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=err_console, show_path=False, show_time=False)],
        force=True,
    )


def user_errors(func: F) -> F:
    """Turn :class:`RlabUserError` into one red sentence and exit code 2, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RlabUserError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", soft_wrap=True)
            raise typer.Exit(code=exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print(
                "[yellow]interrupted[/]; completed nodes are kept — continue with `rlab resume`."
            )
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


def make_host() -> PluginHost:
    """The plugin host for one command (entry points, env allow/block lists)."""
    return PluginHost()
