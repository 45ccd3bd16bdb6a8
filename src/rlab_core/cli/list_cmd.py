"""``rlab list ...``: benchmarks, tasks, agents, strategies, sandboxes and modes."""

from __future__ import annotations

import typer
from pydantic import BaseModel
from rich.table import Table

from rlab_core.cli.common import console, make_host, user_errors
from rlab_core.config import available_modes, parse_overrides
from rlab_core.errors import ConfigError
from rlab_core.plugins import Kind

app = typer.Typer(help="List what is installed.", no_args_is_help=True)


def _options_text(model: type[BaseModel]) -> str:
    lines = []
    for name, field in model.model_fields.items():
        value = field.get_default(call_default_factory=True)
        default = "-" if value is None else value
        lines.append(f"{name} (default {default}): {field.description or ''}".rstrip(": "))
    return "\n".join(lines) or "[dim]no options[/]"


def _list_kind(kind: Kind, title: str) -> None:
    host = make_host()
    table = Table(title=title, show_lines=True)
    for column in ("name", "summary", "plugin", "options"):
        table.add_column(column)
    for name, reg in host.available(kind).items():
        table.add_row(name, reg.info.summary, reg.owner.name, _options_text(reg.info.config))
    console.print(table)


@app.command("benchmarks")
@user_errors
def benchmarks() -> None:
    """Installed benchmarks."""
    _list_kind("benchmarks", "benchmarks")


@app.command("agents")
@user_errors
def agents() -> None:
    """Installed agents and their options."""
    _list_kind("agents", "agents")


@app.command("strategies")
@user_errors
def strategies() -> None:
    """Installed search strategies and their options."""
    _list_kind("strategies", "strategies")


@app.command("sandboxes")
@user_errors
def sandboxes() -> None:
    """Installed sandboxes and their options."""
    _list_kind("sandboxes", "sandboxes")


@app.command("modes")
@user_errors
def modes() -> None:
    """Named presets (plugin-shipped and the user's own)."""
    table = Table(title="modes")
    for column in ("name", "summary", "values"):
        table.add_column(column)
    for name, (summary, values) in sorted(available_modes(make_host()).items()):
        table.add_row(name, summary, ", ".join(f"{k}={v}" for k, v in values.items()))
    console.print(table)


@app.command("tasks")
@user_errors
def tasks(
    benchmark: str = typer.Argument(None, help="Only this benchmark's tasks."),
    option: list[str] = typer.Option(
        None, "--option", "-o", help="Benchmark option, e.g. -o benchmark.lite=true."
    ),
) -> None:
    """Tasks of every (or one) benchmark, and whether each is available offline."""
    host = make_host()
    names = [benchmark] if benchmark else list(host.available("benchmarks"))
    options = parse_overrides(option or []).get("benchmark_options", {})
    if options and not benchmark:
        raise ConfigError(
            "Benchmark options apply to one benchmark; name it: rlab list tasks BENCHMARK -o ..."
        )
    table = Table(title="tasks")
    for column in ("task", "summary", "available", "note"):
        table.add_column(column)
    for name in names:
        impl = host.create("benchmarks", name, options)
        for listing in impl.list_tasks():
            available = "[green]yes[/]" if listing.available else "[yellow]no[/]"
            table.add_row(listing.name, listing.summary, available, listing.note)
    console.print(table)
