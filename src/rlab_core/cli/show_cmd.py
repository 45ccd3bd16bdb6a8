"""``rlab show RUN``: the run's facts and its nodes, as a table or (``--tree``) a tree."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from rlab_core.cli.common import RunPath, RunsFolder, console, user_errors
from rlab_core.report.data import in_flight_nodes
from rlab_core.report.numbers import acceptance_line, seed_noise_text
from rlab_core.report.terminal import (
    finalists_table,
    node_table,
    node_tree,
    tree_legend,
)
from rlab_core.run_folder import open_run


def register(app: typer.Typer) -> None:
    app.command("show")(show)


@user_errors
def show(
    run_path: RunPath = "latest",
    tree: bool = typer.Option(
        False, "--tree", help="Draw the decision tree instead of the node table."
    ),
    out: RunsFolder = Path("runs"),
) -> None:
    """Show a run: task, isolation level, stop reason and every node (as a table or a tree)."""
    opened = open_run(run_path, out)
    run, info, state = opened.folder, opened.info, opened.state
    isolation = info.get("isolation", {})
    level = isolation.get("level", "?")
    style = (
        "green"
        if level in ("bubblewrap", "docker")
        else "yellow"
        if level == "netns"
        else "bold red"
    )
    console.print(
        f"[bold]run[/] {run.run_id}   task [cyan]{info.get('task')}[/]   agent {info.get('agent')}"
    )
    facts = ", ".join(f"{k}={v}" for k, v in isolation.items() if k not in ("level", "warning"))
    console.print(f"isolation: [{style}]{level}[/]  ({escape(facts)})")
    if isolation.get("warning"):
        console.print(f"[bold red]WARNING: {escape(isolation['warning'])}[/]", soft_wrap=True)
    progress = f"{state.tree.iterations_used()} iterations, {len(state.tree)} nodes, {state.elapsed_s:.0f}s"
    console.print(
        f"stop reason: {state.stop_reason or '[yellow]not stopped (running or killed)[/]'}   ({progress})"
    )
    if state.in_flight:
        console.print(
            f"[yellow]unfinished nodes (dropped on resume):[/] {', '.join(state.in_flight)}"
        )
    unit = next(
        (
            n.score.resample_unit
            for n in state.tree.evaluated()
            if n.score and n.score.resample_unit
        ),
        None,
    )
    rule = acceptance_line(info.get("acceptance"), unit)
    if rule:
        console.print(escape(rule))
    if state.seed_noise:
        console.print(escape(seed_noise_text(state.seed_noise) or ""))
    if tree:
        running = {n["id"]: (n["parent_id"], n["hypothesis"]) for n in in_flight_nodes(run, state)}
        metric = info.get("primary_metric", "score")
        direction = "higher" if state.tree.higher_is_better else "lower"
        title = f"{run.run_id}  ({metric}, {direction} is better)"
        console.print(node_tree(state.tree, title=title, running=running, width=console.width))
        console.print(tree_legend())
        return
    console.print(node_table(state.tree, title=f"nodes of {run.run_id}", width=console.width))
    if state.finalists:
        console.print(
            finalists_table(
                state.finalists,
                higher_is_better=state.tree.higher_is_better,
                metric=info.get("primary_metric"),
            )
        )
    elif state.replicates and state.stop_reason is None:
        scored = sum(len(seeds) for seeds in state.replicates.values())
        console.print(f"[yellow]finalists' seed replicates so far:[/] {scored} (no choice yet)")
