"""``rlab show RUN``: the run's facts and its nodes, as a table, a tree (``--tree``) or JSON;
``--context NODE``: the agent context that node was proposed with (knowledge included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rlab_core.cli.common import JsonFlag, RunPath, RunsFolder, console, print_json, user_errors
from rlab_core.errors import RunFolderError
from rlab_core.events import ENVELOPE
from rlab_core.node_context import read_context, render_context
from rlab_core.records import Node
from rlab_core.report.data import in_flight_nodes
from rlab_core.report.node_table import node_table
from rlab_core.report.numbers import acceptance_line, seed_noise_text
from rlab_core.report.sanitize import clean, safe
from rlab_core.report.status import OUTCOME_LABEL, Outcome, classify, failure_cause
from rlab_core.report.terminal import (
    finalists_rule,
    finalists_table,
    node_tree,
    tree_legend,
    unbroken_lines,
)
from rlab_core.run_folder import OpenedRun, open_run


def register(app: typer.Typer) -> None:
    app.command("show")(show)


@user_errors
def show(
    run_path: RunPath = "latest",
    tree: bool = typer.Option(
        False, "--tree", help="Draw the decision tree instead of the node table."
    ),
    context: str = typer.Option(
        None,
        "--context",
        metavar="NODE",
        help="Print the agent context NODE was proposed with, its knowledge section included.",
    ),
    as_json: JsonFlag = False,
    out: RunsFolder = Path("runs"),
) -> None:
    """Show a run: task, isolation level, stop reason and every node (as a table or a tree)."""
    opened = open_run(run_path, out)
    if context is not None:
        show_context(opened, context, as_json=as_json)
        return
    if as_json:
        print_json(show_data(opened))
        return
    run, info, state = opened.folder, opened.info, opened.state
    soft = unbroken_lines(console)  # off a terminal, paths stay whole
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
        f"[bold]run[/] {safe(run.run_id)}   task [cyan]{safe(info.get('task'))}[/]   "
        f"agent {safe(info.get('agent'))}",
        soft_wrap=soft,
    )
    facts = ", ".join(
        f"{k}={_fact(v)}" for k, v in isolation.items() if k not in ("level", "warning")
    )
    console.print(f"isolation: [{style}]{safe(level)}[/]  ({safe(facts)})", soft_wrap=soft)
    if isolation.get("warning"):
        console.print(f"[bold red]WARNING: {safe(isolation['warning'])}[/]", soft_wrap=True)
    progress = (
        f"{state.tree.iterations_used()} iterations, {len(state.tree)} nodes, "
        f"{state.elapsed_s:.0f}s"
    )
    reason = (
        safe(state.stop_reason, newlines=False)
        if state.stop_reason
        else "[yellow]not stopped (running or killed)[/]"
    )
    console.print(f"stop reason: {reason}   ({progress})", soft_wrap=soft)
    if state.in_flight:
        console.print(
            f"[yellow]unfinished nodes (dropped on resume):[/] {safe(', '.join(state.in_flight))}",
            soft_wrap=soft,
        )
    rule = acceptance_line(info.get("acceptance"), _unit(opened))
    if rule:
        console.print(safe(rule), soft_wrap=soft)
    if state.seed_noise:
        console.print(safe(seed_noise_text(state.seed_noise) or ""), soft_wrap=soft)
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
        console.print(finalists_rule(state.finalists), soft_wrap=soft)
    elif state.replicates and state.stop_reason is None:
        scored = sum(len(seeds) for seeds in state.replicates.values())
        console.print(f"[yellow]finalists' seed replicates so far:[/] {scored} (no choice yet)")


def show_context(opened: OpenedRun, node: str, *, as_json: bool = False) -> None:
    """Print the kept agent context of ``node`` (``--json``: the record as kept)."""
    run = opened.folder
    if node not in opened.state.tree.nodes:
        known = ", ".join(sorted(opened.state.tree.nodes)) or "none"
        raise RunFolderError(f"Run {run.run_id} has no node '{node}'; its nodes: {known}.")
    record = read_context(run.node_dir(node))
    if record is None:
        raise RunFolderError(
            f"Node {node} of run {run.run_id} has no kept agent context (a seed is no "
            "agent's proposal, and runs before rlab kept contexts have none); pick another "
            f"node (`rlab show {run.root}` lists them)."
        )
    if as_json:
        print_json(record)
        return
    console.print(clean(render_context(record)), soft_wrap=True, markup=False)


def _fact(value: Any) -> str:
    """An isolation fact in a few words: a tool's record as its version (its path is in
    ``run.json`` and ``show --json``)."""
    if isinstance(value, dict):
        return str(value.get("version") or value.get("path") or value)
    return str(value)


def _unit(opened: OpenedRun) -> str | None:
    """What the run's bootstrap drew (``points``, ``users``), from its first scored node."""
    return next(
        (
            n.score.resample_unit
            for n in opened.state.tree.evaluated()
            if n.score and n.score.resample_unit
        ),
        None,
    )


def show_data(opened: OpenedRun) -> dict[str, Any]:
    """``rlab show --json``: the run's facts, its stop reason and every node, JSON-ready."""
    run, info, state = opened.folder, opened.info, opened.state
    tree = state.tree
    outcomes = classify(tree)
    chosen = tree.selected()
    return {
        "run": run.run_id,
        "path": str(run.root),
        "task": info.get("task"),
        "agent": info.get("agent"),
        "primary_metric": info.get("primary_metric"),
        "higher_is_better": tree.higher_is_better,
        "isolation": info.get("isolation", {}),
        "acceptance": info.get("acceptance"),
        "acceptance_text": acceptance_line(info.get("acceptance"), _unit(opened)),
        "stopped": state.stop_reason is not None,
        "stop_reason": state.stop_reason,
        "iterations": tree.iterations_used(),
        "elapsed_s": round(state.elapsed_s, 3),
        "best": chosen.id if chosen is not None else None,
        "selection_rule": tree.chosen_rule,
        "best_dir": str(run.best_dir) if run.best_dir.is_dir() else None,
        "seed_noise": _fields(state.seed_noise),
        "finalists": _fields(state.finalists),
        "unfinished": list(state.in_flight),
        "nodes": [_node_data(opened, node, outcomes[node.id]) for node in tree],
    }


def _fields(event: dict[str, Any] | None) -> dict[str, Any] | None:
    """An event's own fields, without the journal's envelope (``seq``, ``t``, ``type``)."""
    if event is None:
        return None
    return {key: value for key, value in event.items() if key not in ENVELOPE}


def _node_data(opened: OpenedRun, node: Node, outcome: Outcome) -> dict[str, Any]:
    """One node as ``show --json`` prints it: ``status`` as the journal has it, ``outcome``
    as the views colour it (``improved``, ``failed``, ...), ``outcome_label`` in words."""
    score = node.score
    cause = failure_cause(node)
    log = opened.folder.node_dir(node.id) / "log.txt"
    return {
        "id": node.id,
        "parent": node.parent_id,
        "kind": str(node.kind),
        "status": str(node.status),
        "outcome": str(outcome),
        "outcome_label": OUTCOME_LABEL[outcome],
        "hypothesis": node.hypothesis,
        "score": score.primary if score else None,
        "standard_error": score.standard_error if score else None,
        "metrics": score.metrics if score else None,
        "gain": node.gain.model_dump(mode="json") if node.gain else None,
        "versus_best": node.versus_best.model_dump(mode="json") if node.versus_best else None,
        "accepted": node.accepted,
        "repair_of": node.repair_of,
        "failure": (
            {
                "stage": str(node.failure.stage),
                "cause": cause.label if cause else None,
                "message": node.failure.message,
            }
            if node.failure
            else None
        ),
        "wall_s": node.execution.wall_s if node.execution else None,
        "tokens": node.usage.total_tokens,
        "cost_usd": node.usage.cost_usd,
        "log": str(log) if log.is_file() else None,
    }
