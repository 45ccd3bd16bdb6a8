"""Terminal views: one line per finished node while a run goes, the finalists and the tree
(the node table is :mod:`.node_table`).

Every validation score is printed with its bootstrap standard error (``0.66733 ± 0.0073``)
and every gain with its verdict (``+0.0046 within noise``); see :mod:`.numbers`. Text from
the run (hypotheses, failure messages, reasons) goes through :mod:`.sanitize` first, so an
escape sequence from a candidate is shown, never obeyed, and rich markup in it stays literal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree as RichTree

from rlab_core.records import Node, NodeKind, NodeStatus
from rlab_core.report.node_table import gain_markup, node_table, score_text
from rlab_core.report.numbers import (
    format_number,
    format_se,
    mean_spread_text,
    seed_noise_text,
    seed_order,
)
from rlab_core.report.sanitize import clean, one_line, safe
from rlab_core.report.status import (
    OUTCOME_LABEL,
    OUTCOME_STYLE,
    Outcome,
    classify,
    failure_cause,
    winner_path,
)
from rlab_core.tree import Tree

__all__ = [
    "ProgressPrinter",
    "finalists_rule",
    "finalists_table",
    "node_table",
    "node_tree",
    "tree_legend",
    "unbroken_lines",
]

STATUS_STYLE = {
    NodeStatus.EVALUATED: "green",
    NodeStatus.FAILED: "red",
    NodeStatus.RECOVERED_FAILURE: "magenta",
}

#: a tree label keeps its kind and wall time while the hypothesis keeps this many characters
HYPOTHESIS_ROOM = 24


def unbroken_lines(console: Console) -> bool:
    """Whether lines go out unbroken (``soft_wrap``): off a terminal (a pipe, a file, a CI
    log), unless ``COLUMNS`` asks for a width.

    rich would break them at 80 columns there, splitting paths and commands for whoever
    copies or greps them; tables keep the console's width either way.
    """
    return not console.is_terminal and not os.environ.get("COLUMNS")


class ProgressPrinter:
    """Prints run events as plain lines; works on terminals and in logs alike.

    Off a terminal a line is never broken at the console's width (:func:`unbroken_lines`).
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        #: the run's best node so far (its score and id), under the run's acceptance rule
        self.best: float | None = None
        self.best_se: float | None = None
        self.best_id: str | None = None
        self.higher = True
        self.metric = "score"
        self._noted = False

    def say(self, markup: str) -> None:
        """Print one line (rich markup; run text in it already :func:`safe`)."""
        self.console.print(markup, soft_wrap=unbroken_lines(self.console))

    def _warn(self, event: dict[str, Any]) -> None:
        """Say loudly when candidates can read private data (an explicit opt-in)."""
        if event.get("isolation_warning"):
            self.console.print(
                f"[bold red]WARNING: {safe(event['isolation_warning'])}[/]", soft_wrap=True
            )

    def _note(self, event: dict[str, Any]) -> None:
        """Say once when the benchmark cannot tell a gain from noise."""
        if event.get("acceptance_note") and not self._noted:
            self._noted = True
            self.say(f"[yellow]note:[/] {safe(event['acceptance_note'])}")

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "run_started":
            self.higher = bool(event.get("higher_is_better", True))
            self.metric = event.get("primary_metric", self.metric)
            self.say(
                f"[bold]run[/] {safe(event['run_id'])}  task [cyan]{safe(event['task'])}[/]  "
                f"metric {safe(event['primary_metric'])} "
                f"({'higher' if self.higher else 'lower'} is better)  "
                f"isolation [bold]{safe(event['isolation'])}[/]"
            )
            self._warn(event)
            self._note(event)
        elif kind == "run_resumed":
            abandoned = ", ".join(safe(a) for a in event["abandoned"]) or "none"
            self.say(
                f"[bold]resumed[/] with {event['nodes']} completed nodes; abandoned: "
                f"{abandoned}; isolation [bold]{safe(event['isolation'])}[/]"
            )
            self._warn(event)
        elif kind == "node_finished":
            self._node(Node.model_validate(event["node"]))
        elif kind == "branch_closed":
            ids = ", ".join(safe(i) for i in event["node_ids"])
            self.say(f"  [magenta]branch closed[/] {ids}: {safe(event['reason'], newlines=False)}")
        elif kind == "parent_exhausted":
            reason = safe(event.get("reason", ""), newlines=False)
            self.say(f"  [dim]{safe(event['node_id'])} exhausted: {reason}[/]")
        elif kind == "replicate_scored":
            self._replicate(event)
        elif kind == "seed_noise_measured":
            self.say(f"  [cyan]{safe(seed_noise_text(event) or '', newlines=False)}[/]")
        elif kind == "finalists_chosen":
            self.console.print(
                finalists_table(event, higher_is_better=self.higher, metric=self.metric)
            )
            self.console.print(finalists_rule(event), soft_wrap=unbroken_lines(self.console))
        elif kind == "run_stopped":
            self.say(f"[bold]stopped:[/] {safe(event['reason'], newlines=False)}")

    def _becomes_best(self, node: Node) -> bool:
        """Whether the node became the run's best (:meth:`Tree.best`'s rule, one node at a time).

        An accepted node (every node in journals without the rule) replaces the best when
        its score is better; a node inside the noise never does.
        """
        if node.score is None or node.accepted is False:
            return False
        primary = node.score.primary
        return self.best is None or (primary > self.best if self.higher else primary < self.best)

    def _node(self, node: Node) -> None:
        style = STATUS_STYLE.get(node.status, "white")
        mark = ""
        if self._becomes_best(node):
            first = self.best is None
            self.best, self.best_id = node.score.primary, node.id  # type: ignore[union-attr]
            self.best_se = node.score.standard_error  # type: ignore[union-attr]
            if node.kind == NodeKind.SEED:
                mark = " [bold]baseline[/]" if first else " [bold]best seed[/]"
            else:
                mark = " [bold green]★ new best[/]"
        if node.score is not None:
            detail = f"val {score_text(node)}"
            if node.gain is not None:
                detail += f"  {gain_markup(node.gain)}"
            if node.versus_best is not None:
                detail += (
                    f"  (vs best {safe(node.versus_best.against)}: {gain_markup(node.versus_best)})"
                )
        elif (cause := failure_cause(node)) is not None and node.failure is not None:
            message = safe(one_line(node.failure.message, 160))
            detail = f"[red]failed: {safe(cause.label)}[/] — {message}"
        else:
            detail = "[red]failed[/]"
        wall = f"{node.execution.wall_s:.1f}s" if node.execution else "-"
        parent = safe(node.parent_id or "-")
        self.say(
            f"  [{style}]{safe(node.id)}[/] {node.kind:<7} ← {parent:<5} {detail}  ({wall}){mark}\n"
            f"      [dim]{safe(one_line(node.hypothesis, 180))}[/]"
        )

    def _replicate(self, event: dict[str, Any]) -> None:
        """One finalist's run under another seed: ``replicate n0005 seed 1: 0.66520``."""
        head = f"  [cyan]replicate[/] {safe(event['node_id'])} seed {safe(event['seed'])}"
        wall = f"  ({float(event.get('wall_s') or 0.0):.1f}s)"
        if event.get("primary") is None:
            failure = safe(one_line(event.get("failure") or "failed", 160))
            self.say(f"{head}: [red]failed[/] {failure}{wall}")
        else:
            self.say(f"{head}: {format_number(event['primary'])}{wall}")


def finalists_table(
    finalists: Mapping[str, Any], *, higher_is_better: bool = True, metric: str | None = None
) -> RenderableType:
    """The finalists' seed replicates: node, a score per seed, mean ± spread (the rule in
    words is :func:`finalists_rule`).

    ``finalists`` is a ``finalists_chosen`` event (or :attr:`RunState.finalists`).
    """
    rows: list[Mapping[str, Any]] = list(finalists.get("finalists") or [])
    chosen = finalists.get("node_id")
    seeds = seed_order(rows)
    direction = "higher" if higher_is_better else "lower"
    title = (
        f"finalists: validation {metric + ' ' if metric else ''}per seed ({direction} is better)"
    )
    table = Table(title=title, title_justify="left", title_style="bold")
    table.add_column("node", no_wrap=True)
    for seed in seeds:
        table.add_column(f"seed {seed}", justify="right", no_wrap=True)
    table.add_column("mean ± spread", no_wrap=True)
    for row in rows:
        scores = row.get("scores") or {}
        failures = row.get("failures") or {}
        cells = []
        for seed in seeds:
            if seed in scores:
                cells.append(format_number(scores[seed]))
            elif seed in failures:
                cells.append("[red]failed[/]")
            else:
                cells.append("[dim]not run[/]")
        star = " ★" if row.get("node") == chosen else ""
        table.add_row(f"{safe(row.get('node'))}{star}", *cells, mean_spread_text(row))
    return table


def finalists_rule(finalists: Mapping[str, Any]) -> Text:
    """``★ n0005: chosen by mean validation over 3 seeds ...``: the finalists' choice in words.

    Apart from :func:`finalists_table`, so a caller can print it unbroken off a terminal.
    """
    chosen = clean(finalists.get("node_id"))
    return Text.assemble((f"★ {chosen}", "bold"), f": {one_line(finalists.get('rule'))}")


def _clip(text: str, limit: int) -> str:
    """Run text on one line (control characters shown), cut to ``limit`` with ``…``."""
    return one_line(text, limit)


def _tree_label(
    node: Node, outcome: Outcome, *, best: bool, on_path: bool, room: int, error_width: int
) -> Text:
    style = OUTCOME_STYLE[outcome]
    label = Text()
    label.append("■ " if node.kind == NodeKind.SEED else "● ", style=style)
    label.append(clean(node.id), style="bold underline" if on_path else "")
    label.append(" ★" if best else "  ", style="bold yellow")
    value = format_number(node.score.primary) if node.score else "-"
    se = node.score.standard_error if node.score else None
    error = f" ± {format_se(se)}" if se is not None else ""
    label.append(f" {value:>9}{error:<{error_width}}  ")
    label.append(f"{OUTCOME_LABEL[outcome]:<19}", style=style)
    wall = f"{node.execution.wall_s:.1f}s" if node.execution else "-"
    facts = f" {node.kind!s:<7} {wall:>6}  "
    if room - len(label) - len(facts) >= HYPOTHESIS_ROOM:  # a narrow terminal drops these first
        label.append(facts, style="dim")
    else:
        label.append(" ")
    if room - len(label) < HYPOTHESIS_ROOM // 2:
        return label  # no room for the hypothesis: one line per node beats a folded one
    hypothesis = one_line(node.hypothesis)
    cause = failure_cause(node)
    failure = f"  [{cause.label}] {node.failure.message}" if cause and node.failure else ""
    text = _clip(hypothesis + failure, room - len(label))
    cut = min(len(text), len(hypothesis))
    label.append(text[:cut])
    label.append(text[cut:], style=style)
    return label


def node_tree(
    tree: Tree,
    title: str = "nodes",
    running: dict[str, tuple[str | None, str]] | None = None,
    width: int = 120,
) -> RichTree:
    """The ``rlab show --tree`` view: every node under its parent, coloured by outcome.

    ``running`` maps unfinished node ids to (parent id, hypothesis), drawn as running;
    ``width`` is the line length the labels are clipped to.
    """
    outcomes = classify(tree)
    path = set(winner_path(tree))
    best = tree.selected()
    # scores right-aligned, their standard errors left-aligned after them
    error_width = max(
        [0]
        + [
            len(f" ± {format_se(n.score.standard_error)}")
            for n in tree
            if n.score and n.score.standard_error is not None
        ]
    )
    root = RichTree(Text(clean(title), style="bold"), guide_style="dim")
    branches: dict[str, tuple[RichTree, int]] = {}
    for node in tree:  # finishing order: a parent always finished before its children
        parent, depth = branches.get(node.parent_id or "", (root, 0))
        label = _tree_label(
            node,
            outcomes[node.id],
            best=best is not None and node.id == best.id,
            on_path=node.id in path,
            room=width - 4 * (depth + 1) - 1,
            error_width=error_width,
        )
        branches[node.id] = (parent.add(label), depth + 1)
    for node_id, (parent_id, hypothesis) in sorted((running or {}).items()):
        parent, depth = branches.get(parent_id or "", (root, 0))
        label = Text.assemble(("◌ ", "cyan"), clean(node_id), ("  running  ", "cyan"))
        label.append(_clip(hypothesis, max(width - 4 * (depth + 1) - len(label) - 1, 24)))
        parent.add(label)
    return root


def tree_legend() -> Text:
    """One line naming the colours of :func:`node_tree`."""
    legend = Text("  ")
    for outcome in Outcome:
        legend.append("● ", style=OUTCOME_STYLE[outcome])
        legend.append(f"{OUTCOME_LABEL[outcome]}   ")
    legend.append("■ seed   ★ best   underlined: the winner's path", style="dim")
    return legend
