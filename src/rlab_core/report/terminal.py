"""Terminal views: one line per finished node while a run goes, and the node table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlab_core.models import Node, NodeStatus
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

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "run_started":
            self.higher = bool(event.get("higher_is_better", True))
            self.console.print(
                f"[bold]run[/] {event['run_id']}  task [cyan]{event['task']}[/]  metric "
                f"{event['primary_metric']} ({'higher' if self.higher else 'lower'} is better)  "
                f"isolation [bold]{event['isolation']}[/]"
            )
            if event["isolation"] == "none":
                self.console.print(
                    "[bold red]WARNING: candidates run WITHOUT isolation (network and files open); "
                    "install bubblewrap (apt-get install bubblewrap) to jail them.[/]"
                )
        elif kind == "run_resumed":
            self.console.print(
                f"[bold]resumed[/] with {event['nodes']} completed nodes; abandoned: "
                f"{', '.join(event['abandoned']) or 'none'}; isolation [bold]{event['isolation']}[/]"
            )
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
