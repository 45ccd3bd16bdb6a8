"""Terminal views: one line per finished node while a run goes, the node table and the tree."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree as RichTree

from rlab_core.records import Node, NodeKind, NodeStatus
from rlab_core.report.status import OUTCOME_LABEL, OUTCOME_STYLE, Outcome, classify, winner_path
from rlab_core.tree import Tree

STATUS_STYLE = {
    NodeStatus.EVALUATED: "green",
    NodeStatus.FAILED: "red",
    NodeStatus.RECOVERED_FAILURE: "magenta",
}


def _score_text(node: Node) -> str:
    if node.score is None:
        return "-"
    return f"{node.score.primary:.5f}"


class ProgressPrinter:
    """Prints run events as plain lines; works on terminals and in logs alike."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.best: float | None = None
        self.higher = True

    def _warn(self, event: dict[str, Any]) -> None:
        """Say loudly when candidates can read private data (an explicit opt-in)."""
        if event.get("isolation_warning"):
            self.console.print(
                f"[bold red]WARNING: {escape(event['isolation_warning'])}[/]", soft_wrap=True
            )

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "run_started":
            self.higher = bool(event.get("higher_is_better", True))
            self.console.print(
                f"[bold]run[/] {event['run_id']}  task [cyan]{event['task']}[/]  metric "
                f"{event['primary_metric']} ({'higher' if self.higher else 'lower'} is better)  "
                f"isolation [bold]{event['isolation']}[/]"
            )
            self._warn(event)
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
        elif kind == "run_stopped":
            self.console.print(f"[bold]stopped:[/] {escape(event['reason'])}")

    def _node(self, node: Node) -> None:
        style = STATUS_STYLE.get(node.status, "white")
        mark = ""
        if node.score is not None:
            primary = node.score.primary
            if self.best is None or (primary > self.best if self.higher else primary < self.best):
                self.best, mark = primary, " [bold green]★ new best[/]"
        detail = (
            f"val {_score_text(node)}"
            if node.score
            else f"[red]{escape(node.failure.message[:160]) if node.failure else ''}[/]"
        )
        wall = f"{node.execution.wall_s:.1f}s" if node.execution else "-"
        self.console.print(
            f"  [{style}]{node.id}[/] {node.kind:<7} ← {node.parent_id or '-':<5} {detail}  ({wall}){mark}\n"
            f"      [dim]{escape(node.hypothesis[:180])}[/]"
        )


def node_table(tree: Tree, title: str = "nodes") -> Table:
    """The ``rlab show`` table: id, parent, kind, status, val score, wall, tokens, hypothesis."""
    best = tree.best()
    table = Table(title=title)
    for column in ("id", "parent", "kind", "status", "val", "wall s", "tokens"):
        table.add_column(column, no_wrap=True)
    table.add_column("hypothesis", overflow="fold", min_width=30, ratio=1)
    for node in tree:
        style = STATUS_STYLE.get(node.status, "white")
        star = " ★" if best is not None and node.id == best.id else ""
        table.add_row(
            f"{node.id}{star}",
            node.parent_id or "-",
            str(node.kind),
            f"[{style}]{node.status}[/]",
            _score_text(node),
            f"{node.execution.wall_s:.2f}" if node.execution else "-",
            str(node.usage.total_tokens),
            escape(
                node.hypothesis
                if node.failure is None
                else f"{node.hypothesis}\n[red]{node.failure.stage}: {node.failure.message[:200]}[/]"
            ),
        )
    return table


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tree_label(node: Node, outcome: Outcome, *, best: bool, on_path: bool, room: int) -> Text:
    style = OUTCOME_STYLE[outcome]
    label = Text()
    label.append("■ " if node.kind == NodeKind.SEED else "● ", style=style)
    label.append(node.id, style="bold underline" if on_path else "")
    label.append(" ★" if best else "  ", style="bold yellow")
    label.append(f" {_score_text(node):>9}  ")
    label.append(f"{OUTCOME_LABEL[outcome]:<19}", style=style)
    wall = f"{node.execution.wall_s:.1f}s" if node.execution else "-"
    label.append(f" {node.kind!s:<7} {wall:>6}  ", style="dim")
    failure = f"  [{node.failure.stage}] {node.failure.message}" if node.failure else ""
    text = _clip(" ".join(node.hypothesis.split()) + failure, max(room - len(label), 24))
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
    best = tree.best()
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
