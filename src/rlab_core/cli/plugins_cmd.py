"""``rlab plugins``: every plugin, its version, what it provides, and why a broken one failed."""

from __future__ import annotations

import dataclasses

import typer
from rich.table import Table

from rlab_core.cli.common import JsonFlag, console, make_host, print_json, user_errors


def register(app: typer.Typer) -> None:
    app.command("plugins")(plugins)


@user_errors
def plugins(as_json: JsonFlag = False) -> None:
    """List installed plugins (also the ones that failed to load, with their error)."""
    host = make_host()
    host.registry  # noqa: B018 - collect registrations so failures show up
    if as_json:
        print_json([dataclasses.asdict(record) for record in host.records.values()])
        return
    table = Table(title="rlab plugins", show_lines=False)
    for column in ("plugin", "distribution", "version", "status", "provides / error"):
        table.add_column(column)
    for record in sorted(host.records.values(), key=lambda r: (r.status != "loaded", r.name)):
        if record.status == "failed":
            detail = f"[red]{record.error}[/]"
        elif record.status == "disabled":
            detail = "[dim]disabled by RLAB_LOAD_PLUGINS / RLAB_DISABLE_PLUGINS[/]"
        else:
            detail = "; ".join(
                f"{kind}: {', '.join(names)}" for kind, names in record.provides.items()
            )
        status = {
            "loaded": "[green]loaded[/]",
            "failed": "[red]failed[/]",
            "disabled": "[dim]disabled[/]",
        }
        table.add_row(
            record.name, record.distribution, record.version, status[record.status], detail
        )
    console.print(table)
