"""``rlab list ...``: benchmarks, tasks, agents, strategies, sandboxes and modes.

Every listing takes ``--json``: the same facts as JSON on stdout, nothing else there.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from rlab_core.cli.common import (
    JsonFlag,
    complete_names,
    console,
    err_console,
    make_host,
    print_json,
    user_errors,
)
from rlab_core.config import available_modes, parse_overrides
from rlab_core.errors import ConfigError, RlabUserError
from rlab_core.plugins import Kind, PluginHost
from rlab_core.task_records import TaskListing

app = typer.Typer(help="List what is installed.", no_args_is_help=True)


def _option_rows(model: type[BaseModel]) -> list[dict[str, Any]]:
    rows = []
    for name, info in model.model_fields.items():
        default = "required" if info.is_required() else info.get_default(call_default_factory=True)
        rows.append({"name": name, "default": default, "description": info.description or ""})
    return rows


def _options_text(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        default = "-" if row["default"] is None else row["default"]
        lines.append(f"{row['name']} (default {default}): {row['description']}".rstrip(": "))
    return escape("\n".join(lines)) or "[dim]no options[/]"


def _entries(host: PluginHost, kind: Kind) -> list[dict[str, Any]]:
    entries = []
    for name, reg in host.available(kind).items():
        entry = {
            "name": name,
            "summary": reg.info.summary,
            "plugin": reg.owner.name,
            "distribution": reg.owner.distribution,
            "options": _option_rows(reg.info.config),
        }
        if kind == "benchmarks":
            entry["default_task"] = reg.info.default_task
        entries.append(entry)
    return entries


def _list_kind(kind: Kind, as_json: bool) -> None:
    entries = _entries(make_host(), kind)
    if as_json:
        print_json(entries)
        return
    table = Table(title=kind, show_lines=True)
    for column in ("name", "summary", "plugin", "options"):
        table.add_column(column, no_wrap=column == "name")
    for entry in entries:
        table.add_row(
            entry["name"],
            escape(entry["summary"]),
            entry["plugin"],
            _options_text(entry["options"]),
        )
    console.print(table)


@app.command("benchmarks")
@user_errors
def benchmarks(as_json: JsonFlag = False) -> None:
    """Installed benchmarks and their options."""
    _list_kind("benchmarks", as_json)


@app.command("agents")
@user_errors
def agents(as_json: JsonFlag = False) -> None:
    """Installed agents and their options."""
    _list_kind("agents", as_json)


@app.command("strategies")
@user_errors
def strategies(as_json: JsonFlag = False) -> None:
    """Installed search strategies and their options."""
    _list_kind("strategies", as_json)


@app.command("sandboxes")
@user_errors
def sandboxes(as_json: JsonFlag = False) -> None:
    """Installed sandboxes and their options."""
    _list_kind("sandboxes", as_json)


@app.command("modes")
@user_errors
def modes(as_json: JsonFlag = False) -> None:
    """Named presets (plugin-shipped and the user's own; a file that cannot be read is marked)."""
    found = sorted(available_modes(make_host()).values(), key=lambda mode: mode.name)
    if as_json:
        print_json(
            [
                {
                    "name": m.name,
                    "summary": m.summary,
                    "values": m.values,
                    "source": m.source,
                    "broken": m.problem,
                }
                for m in found
            ]
        )
        return
    table = Table(title="modes", show_lines=True)
    for column in ("name", "summary", "values", "from"):
        table.add_column(column, no_wrap=column == "name", overflow="fold")
    for mode in found:
        if mode.problem is not None:
            summary = f"[bold red]broken:[/] {escape(mode.problem)}"
        else:
            summary = escape(mode.summary)
        # one value a line: a narrow column that leaves the summary (or why it is broken) room
        values = "\n".join(f"{k}={v}" for k, v in mode.values.items())
        table.add_row(mode.name, summary, escape(values), escape(mode.source))
    console.print(table)


# ---------------------------------------------------------------------------- tasks


@dataclass
class _Listed:
    """One benchmark's tasks, or why they could not be listed."""

    benchmark: str
    tasks: list[TaskListing] = field(default_factory=list)
    error: str | None = None


def _collect(host: PluginHost, names: list[str], options: dict[str, Any]) -> list[_Listed]:
    listed = []
    for name in names:
        try:
            tasks = list(host.create("benchmarks", name, options).list_tasks())
        except RlabUserError as exc:
            if len(names) == 1:
                raise  # the one benchmark asked for: its problem is the answer
            listed.append(_Listed(name, error=str(exc)))  # one broken benchmark hides no other
            continue
        listed.append(_Listed(name, tasks))
    return listed


def brief_reason(note: str, limit: int = 200) -> str:
    """The gist of a task's note: its first clause, without parenthesized detail."""
    text = note
    while True:
        shorter = re.sub(r"\s*\([^()]*\)", "", text)
        if shorter == text:
            break
        text = shorter
    text = re.split(r"[:;]\s|\.\s|\.$", text.strip(), maxsplit=1)[0].strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _unavailable_line(listed: _Listed, hidden: list[TaskListing]) -> str:
    reasons = Counter(brief_reason(task.note) for task in hidden if task.note)
    named = [reason for reason, _ in reasons.most_common(2)]
    why = "; ".join(named) + ("; …" if len(reasons) > 2 else "")
    count = f"{len(hidden)} more task{'s' if len(hidden) != 1 else ''}"
    return (
        f"{listed.benchmark}: {count} not available here"
        + (f" ({why})" if why else "")
        + f"; `rlab list tasks {listed.benchmark} --all` shows "
        + ("it and how to get its data." if len(hidden) == 1 else "them and how to get their data.")
    )


def _print_tasks(tasks: list[TaskListing], *, with_availability: bool) -> None:
    """A table whose id column is as wide as the longest id; plain lines where that won't fit."""
    width = max((len(task.name) for task in tasks), default=4)
    if console.width >= width + 40:
        console.print(_task_table(tasks, width, with_availability=with_availability))
        return
    for task in tasks:  # a narrow terminal: each id whole on its own line, the rest below
        shown = "" if not with_availability else "  (available)" if task.available else "  (no)"
        console.print(f"[bold]{escape(task.name)}[/]{shown}", soft_wrap=True)
        for text in filter(None, (task.summary, task.note)):
            console.print(Padding(Text(text), (0, 0, 0, 4)))


def _task_table(tasks: list[TaskListing], width: int, *, with_availability: bool) -> Table:
    title = "tasks" if with_availability else "available tasks"
    table = Table(title=title, show_lines=False)
    # an id is never cut: the column is as wide as the longest id, the others wrap
    table.add_column("task", no_wrap=True, min_width=width, overflow="fold")
    if with_availability:
        table.add_column("available", no_wrap=True)
    table.add_column("summary", ratio=1, overflow="fold")
    for task in tasks:
        about = escape(task.summary) + (f"\n[dim]{escape(task.note)}[/]" if task.note else "")
        if with_availability:
            shown = "[green]yes[/]" if task.available else "[yellow]no[/]"
            table.add_row(task.name, shown, about)
        else:
            table.add_row(task.name, about)
    return table


@app.command("tasks")
@user_errors
def tasks(
    benchmark: str = typer.Argument(
        None, help="Only this benchmark's tasks.", autocompletion=complete_names("benchmarks")
    ),
    option: list[str] = typer.Option(
        None, "--option", "-o", help="Benchmark option, e.g. -o benchmark.lite=true."
    ),
    show_all: bool = typer.Option(
        False, "--all", help="Also list each task that is not available here, with its note."
    ),
    as_json: JsonFlag = False,
) -> None:
    """Tasks available here (with full ids), then one line per benchmark for the rest."""
    host = make_host()
    names = [benchmark] if benchmark else list(host.available("benchmarks"))
    options = parse_overrides(option or []).get("benchmark_options", {})
    if options and not benchmark:
        raise ConfigError(
            "Benchmark options apply to one benchmark; name it: rlab list tasks BENCHMARK -o ..."
        )
    listed = _collect(host, names, options)
    for each in listed:
        if each.error:
            err_console.print(
                f"[yellow]warning:[/] cannot list the tasks of {each.benchmark}: "
                f"{escape(each.error)}",
                soft_wrap=True,
            )
    every = [task for each in listed for task in each.tasks]
    if as_json:
        print_json(
            [
                {"benchmark": task.name.partition(":")[0], **task.model_dump(mode="json")}
                for task in every
            ]
        )
        return
    if show_all:
        _print_tasks(sorted(every, key=lambda t: not t.available), with_availability=True)
        return
    ready = [task for task in every if task.available]
    if ready:
        _print_tasks(ready, with_availability=False)
    else:
        console.print("No task is available here yet.")
    for each in listed:
        hidden = [task for task in each.tasks if not task.available]
        if hidden:
            console.print(escape(_unavailable_line(each, hidden)), soft_wrap=True)
