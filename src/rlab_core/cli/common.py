"""What every command shares: the console, the plugin host and user-error handling."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from rlab_core.config import available_modes
from rlab_core.errors import RlabUserError
from rlab_core.plugins import Kind, PluginHost
from rlab_core.report.sanitize import clean, safe


def _home_path(value: str) -> str:
    # a quoted `~/runs` (or one from RLAB_OUT) is never expanded by the shell: expand it here
    return os.path.expanduser(value) if isinstance(value, str) else value


def _home_folder(value: Path | None) -> Path | None:
    return None if value is None else Path(value).expanduser()


#: The run to act on: a run folder, its id under the runs folder, or ``latest``.
RunPath = Annotated[
    str,
    typer.Argument(
        help="Run folder, its id under the runs folder, or 'latest'.",
        metavar="RUN",
        callback=_home_path,
    ),
]
#: The folder that holds run folders, for ids and ``latest`` (every command that reads a run).
RunsFolder = Annotated[
    Path,
    typer.Option(
        "--out",
        help="Folder that holds run folders (for ids and 'latest').",
        envvar="RLAB_OUT",
        metavar="FOLDER",
        callback=_home_folder,
    ),
]
#: ``--json``: machine-readable output on stdout, and nothing else there.
JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print JSON on stdout (and nothing else there).")
]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
F = TypeVar("F", bound=Callable[..., Any])

_LEVEL_STYLE = {"DEBUG": "dim", "INFO": "", "WARNING": "yellow", "ERROR": "bold red"}


class _StderrHandler(logging.Handler):
    """One log record, one line on stderr, never hard-wrapped (commands in it stay copyable)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = record.levelname
            prefix = f"{level.lower()}: " if record.levelno >= logging.WARNING else "debug "
            text = Text(prefix, style=_LEVEL_STYLE.get(level, "bold red"))
            text.append(clean(self.format(record)))  # log lines may quote candidate output
            err_console.print(text, soft_wrap=True)
        except Exception:  # logging must never break a command
            self.handleError(record)


def _rlab_or_warning(record: logging.LogRecord) -> bool:
    # --verbose is about rlab and its plugins; other libraries' debug lines are noise
    return record.levelno >= logging.WARNING or record.name.startswith("rlab")


def setup_logging(verbose: bool = False) -> None:
    """Warnings on stderr; with ``verbose``, rlab's and its plugins' debug lines too."""
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s" if verbose else "%(message)s"))
    handler.addFilter(_rlab_or_warning)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler], force=True
    )


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout; paths and other objects as their text."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def user_errors(func: F) -> F:
    """Turn :class:`RlabUserError` into one red sentence and exit code 2, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RlabUserError as exc:
            # the sentence may quote a path or run content: shown literally, never obeyed
            err_console.print(f"[bold red]error:[/] {safe(str(exc))}", soft_wrap=True)
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


def complete_names(kind: Kind) -> Callable[[str], list[str]]:
    """Shell completion of installed names of ``kind`` (``autocompletion=`` of an option).

    Reading the registry imports plugin modules but no implementation, so a TAB stays fast.
    """

    def complete(incomplete: str) -> list[str]:
        try:
            names = list(make_host().available(kind))
        except Exception:  # a broken plugin must not break the user's shell
            return []
        return [name for name in names if name.startswith(incomplete)]

    return complete


def complete_modes(incomplete: str) -> list[str]:
    """Shell completion of mode names, the user's own included (``autocompletion=`` of ``-m``)."""
    try:
        names = list(available_modes(make_host()))
    except Exception:  # a broken plugin must not break the user's shell
        return []
    return [name for name in names if name.lower().startswith(incomplete.lower())]
