"""Terminal views: one line per finished node while a run goes, the node table and the tree.

Every validation score is printed with its bootstrap standard error (``0.66733 ± 0.0073``)
and every gain with its verdict (``+0.0046 within noise``); see :mod:`.numbers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree as RichTree

from rlab_core.records import Gain, Node, NodeKind, NodeStatus
from rlab_core.report.numbers import (
    format_number,
    format_score,
    format_se,
    gain_text,
    gain_verdict,
    level_text,
    mean_spread_text,
    seed_noise_text,
    seed_order,
)
from rlab_core.report.status import OUTCOME_LABEL, OUTCOME_STYLE, Outcome, classify, winner_path
from rlab_core.tree import Tree

STATUS_STYLE = {
    NodeStatus.EVALUATED: "green",
    NodeStatus.FAILED: "red",
    NodeStatus.RECOVERED_FAILURE: "magenta",
}

#: rich styles of a gain's verdict
VERDICT_STYLE = {
    "better": "green",
    "within noise": "yellow",
    "worse": "red",
    "unmeasured": "dim",
}

#: the hypothesis column needs at least this many characters, else it goes below the table
HYPOTHESIS_MIN = 30
#: a tree label keeps its kind and wall time while the hypothesis keeps this many characters
HYPOTHESIS_ROOM = 24


def _score_text(node: Node) -> str:
    """The node's validation score with its standard error, or ``-``."""
    if node.score is None:
        return "-"
    return format_score(node.score.primary, node.score.standard_error)


def _gain_markup(gain: Gain | Mapping[str, Any] | None) -> str:
    if gain is None:
        return ""
    return f"[{VERDICT_STYLE.get(gain_verdict(gain), 'white')}]{gain_text(gain)}[/]"


class ProgressPrinter:
    """Prints run events as plain lines; works on terminals and in logs alike."""

    def __init__(self, console: Console) -> None:
        self.console = console
        #: the run's best node so far (its score and id), under the run's acceptance rule
        self.best: float | None = None
        self.best_se: float | None = None
        self.best_id: str | None = None
        self.higher = True
        self.metric = "score"
        self._noted = False

    def _warn(self, event: dict[str, Any]) -> None:
        """Say loudly when candidates can read private data (an explicit opt-in)."""
        if event.get("isolation_warning"):
            self.console.print(
                f"[bold red]WARNING: {escape(event['isolation_warning'])}[/]", soft_wrap=True
            )

    def _note(self, event: dict[str, Any]) -> None:
        """Say once when the benchmark cannot tell a gain from noise."""
        if event.get("acceptance_note") and not self._noted:
            self._noted = True
            self.console.print(f"[yellow]note:[/] {escape(event['acceptance_note'])}")

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "run_started":
            self.higher = bool(event.get("higher_is_better", True))
            self.metric = event.get("primary_metric", self.metric)
            self.console.print(
                f"[bold]run[/] {event['run_id']}  task [cyan]{event['task']}[/]  metric "
                f"{event['primary_metric']} ({'higher' if self.higher else 'lower'} is better)  "
                f"isolation [bold]{event['isolation']}[/]"
            )
            self._warn(event)
            self._note(event)
        elif kind == "run_resumed":
            self.console.print(
                f"[bold]resumed[/] with {event['nodes']} completed nodes; abandoned: "
                f"{', '.join(event['abandoned']) or 'none'}; isolation [bold]{event['isolation']}[/]"
            )
            self._warn(event)
        elif kind == "node_finished":
            self._node(Node.model_validate(event["node"]))
        elif kind == "branch_closed":
            self.console.print(
                f"  [magenta]branch closed[/] {', '.join(event['node_ids'])}: {escape(event['reason'])}"
            )
        elif kind == "parent_exhausted":
            self.console.print(
                f"  [dim]{event['node_id']} exhausted: {escape(event.get('reason', ''))}[/]"
            )
        elif kind == "replicate_scored":
            self._replicate(event)
        elif kind == "seed_noise_measured":
            self.console.print(f"  [cyan]{escape(seed_noise_text(event) or '')}[/]")
        elif kind == "finalists_chosen":
            self.console.print(
                finalists_table(event, higher_is_better=self.higher, metric=self.metric)
            )
        elif kind == "run_stopped":
            self.console.print(f"[bold]stopped:[/] {escape(event['reason'])}")

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
            detail = f"val {_score_text(node)}"
            if node.gain is not None:
                detail += f"  {_gain_markup(node.gain)}"
            if node.versus_best is not None:
                detail += (
                    f"  (vs best {node.versus_best.against}: {_gain_markup(node.versus_best)})"
                )
        else:
            detail = f"[red]{escape(node.failure.message[:160]) if node.failure else ''}[/]"
        wall = f"{node.execution.wall_s:.1f}s" if node.execution else "-"
        self.console.print(
            f"  [{style}]{node.id}[/] {node.kind:<7} ← {node.parent_id or '-':<5} {detail}  ({wall}){mark}\n"
            f"      [dim]{escape(node.hypothesis[:180])}[/]"
        )

    def _replicate(self, event: dict[str, Any]) -> None:
        """One finalist's run under another seed: ``replicate n0005 seed 1: 0.66520``."""
        head = f"  [cyan]replicate[/] {event['node_id']} seed {event['seed']}"
        wall = f"  ({float(event.get('wall_s') or 0.0):.1f}s)"
        if event.get("primary") is None:
            failure = escape(str(event.get("failure") or "failed")[:160])
            self.console.print(f"{head}: [red]failed[/] {failure}{wall}")
        else:
            self.console.print(f"{head}: {format_number(event['primary'])}{wall}")


def finalists_table(
    finalists: Mapping[str, Any], *, higher_is_better: bool = True, metric: str | None = None
) -> RenderableType:
    """The finalists' seed replicates: node, a score per seed, mean ± spread, and the rule.

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
        table.add_row(f"{row.get('node')}{star}", *cells, mean_spread_text(row))
    rule = Text.assemble((f"★ {chosen}", "bold"), f": {finalists.get('rule') or ''}")
    return Group(table, rule)


def _unit(tree: Tree) -> str | None:
    return next(
        (n.score.resample_unit for n in tree.evaluated() if n.score and n.score.resample_unit),
        None,
    )


def _hypothesis_text(node: Node) -> str:
    """The hypothesis, and a failed node's failure in red (run text is escaped, not markup)."""
    if node.failure is None:
        return escape(node.hypothesis)
    failure = escape(f"{node.failure.stage}: {node.failure.message[:200]}")
    return f"{escape(node.hypothesis)}\n[red]{failure}[/]"


def node_table(tree: Tree, title: str = "nodes", width: int | None = None) -> RenderableType:
    """The ``rlab show`` table: id, parent, kind, status, val ± SE, the gain over the parent
    with its verdict, wall, tokens and the hypothesis.

    ``width`` is the console's: a narrower one drops wall and tokens, then folds the status
    into the score and lists the hypotheses under the table, so no column is cut off.
    """
    chosen = tree.selected()
    nodes = list(tree)
    ids = [f"{n.id} ★" if chosen is not None and n.id == chosen.id else n.id for n in nodes]
    val = [_score_text(n) for n in nodes]
    gains = [gain_text(n.gain) for n in nodes]
    statuses = [str(n.status) for n in nodes]

    def need(columns: list[tuple[str, list[str]]]) -> int:
        # the default box: one border and two spaces of padding per column, one closing border
        return 1 + sum(3 + max([len(h)] + [len(c) for c in cells]) for h, cells in columns)

    core: list[tuple[str, list[str]]] = [
        ("id", ids),
        ("parent", [n.parent_id or "-" for n in nodes]),
        ("kind", [str(n.kind) for n in nodes]),
    ]
    timing: list[tuple[str, list[str]]] = [
        ("wall s", [f"{n.execution.wall_s:.2f}" if n.execution else "-" for n in nodes]),
        ("tokens", [str(n.usage.total_tokens) for n in nodes]),
    ]
    scores = [("status", statuses), ("val ± SE", val), ("vs parent", gains)]
    room = width if width is not None else 10_000
    if need(core + scores + timing) + 3 + HYPOTHESIS_MIN <= room:
        layout = "full"
    elif need(core + scores) + 3 + HYPOTHESIS_MIN <= room:
        layout = "no-timing"
    else:
        layout = "compact"

    table = Table(title=title)
    for column, _ in core:
        table.add_column(column, no_wrap=True)
    if layout != "compact":
        table.add_column("status", no_wrap=True)
    table.add_column("val ± SE", no_wrap=True)
    table.add_column("vs parent", no_wrap=True)
    if layout == "full":
        table.add_column("wall s", no_wrap=True)
        table.add_column("tokens", no_wrap=True)
    if layout != "compact":
        table.add_column("hypothesis", overflow="fold", min_width=HYPOTHESIS_MIN, ratio=1)
    for i, node in enumerate(nodes):
        style = STATUS_STYLE.get(node.status, "white")
        status = f"[{style}]{node.status}[/]"
        cells = [ids[i], node.parent_id or "-", str(node.kind)]
        if layout != "compact":
            cells.append(status)
            cells.append(val[i])
        else:  # the status word stands where a failed node has no score
            cells.append(val[i] if node.score is not None else status)
        cells.append(_gain_markup(node.gain))
        if layout == "full":
            cells += [timing[0][1][i], timing[1][1][i]]
        if layout != "compact":
            cells.append(_hypothesis_text(node))
        table.add_row(*cells)
    parts: list[RenderableType] = [table]
    if layout == "compact":
        listing = Table.grid(padding=(0, 1))
        listing.add_column(no_wrap=True)
        listing.add_column(overflow="fold")
        for node in nodes:
            listing.add_row(node.id, _hypothesis_text(node))
        parts.append(listing)
    parts.append(table_legend(tree))
    return Group(*parts)


def table_legend(tree: Tree) -> Text:
    """What the table's marks mean."""
    unit = _unit(tree)
    level = next((n.gain.level for n in tree if n.gain is not None), None)
    parts = ["★ best: the node `rlab final` scores"]
    parts.append("± bootstrap standard error" + (f" over {unit}" if unit else ""))
    if level is not None:
        parts.append(f"vs parent: gain (+ is better), {level_text(level)} one-sided")
    return Text(" · ".join(parts), style="dim")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tree_label(
    node: Node, outcome: Outcome, *, best: bool, on_path: bool, room: int, error_width: int
) -> Text:
    style = OUTCOME_STYLE[outcome]
    label = Text()
    label.append("■ " if node.kind == NodeKind.SEED else "● ", style=style)
    label.append(node.id, style="bold underline" if on_path else "")
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
    failure = f"  [{node.failure.stage}] {node.failure.message}" if node.failure else ""
    text = _clip(" ".join(node.hypothesis.split()) + failure, room - len(label))
    cut = min(len(text), len(" ".join(node.hypothesis.split())))
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
    root = RichTree(Text(title, style="bold"), guide_style="dim")
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
        label = Text.assemble(("◌ ", "cyan"), node_id, ("  running  ", "cyan"))
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
