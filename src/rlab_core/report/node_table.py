"""The ``rlab show`` node table, readable from 80 columns to a wide screen.

Every node's validation score with its bootstrap standard error, its gain over the parent
with the verdict, its outcome (:mod:`.status`) and a failed node's cause; the hypothesis
always wraps in a column of its own. Run text goes through :mod:`.sanitize` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rlab_core.records import Gain, Node
from rlab_core.report.numbers import format_score, gain_text, gain_verdict, level_text
from rlab_core.report.sanitize import clean, one_line, safe
from rlab_core.report.status import OUTCOME_LABEL, OUTCOME_STYLE, Outcome, classify, failure_cause
from rlab_core.tree import Tree

#: rich styles of a gain's verdict
VERDICT_STYLE = {
    "better": "green",
    "within noise": "yellow",
    "worse": "red",
    "unmeasured": "dim",
}

#: the hypothesis column gets at least this many characters (a 180-character hypothesis
#: then wraps in five lines at most), else the table stacks each node's facts above it
HYPOTHESIS_MIN = 40


def score_text(node: Node) -> str:
    """The node's validation score with its standard error (``mini``: a screen's), or ``-``."""
    if node.score is None:
        return "-"
    text = format_score(node.score.primary, node.score.standard_error)
    return f"{text} mini" if node.score.fidelity == "mini" else text


def gain_markup(gain: Gain | Mapping[str, Any] | None) -> str:
    """The gain and its verdict as rich markup, coloured by the verdict."""
    if gain is None:
        return ""
    return f"[{VERDICT_STYLE.get(gain_verdict(gain), 'white')}]{gain_text(gain)}[/]"


def _unit(tree: Tree) -> str | None:
    return next(
        (n.score.resample_unit for n in tree.evaluated() if n.score and n.score.resample_unit),
        None,
    )


def _cause_label(node: Node) -> str:
    cause = failure_cause(node)
    return clean(cause.label) if cause is not None else "-"


def _failure_detail(node: Node) -> str:
    """A failed node's stage and message on one line, clipped (``""`` when it did not fail)."""
    cause = failure_cause(node)
    return one_line(cause.detail, 200) if cause is not None else ""


def _hypothesis_text(node: Node) -> str:
    """The hypothesis, and a failed node's failure in red (run text is escaped, not markup)."""
    failure = _failure_detail(node)
    hypothesis = safe(one_line(node.hypothesis))
    return f"{hypothesis}\n[red]{safe(failure)}[/]" if failure else hypothesis


def _need(columns: list[tuple[str, list[str]]]) -> int:
    """Width of a default-box table whose columns hold these cells on one line each."""
    # one border and two spaces of padding per column, one closing border
    return 1 + sum(3 + max([len(h)] + [len(c) for c in cells]) for h, cells in columns)


def node_table(tree: Tree, title: str = "nodes", width: int | None = None) -> RenderableType:
    """The ``rlab show`` table: id, parent, kind, status, val ± SE, the gain over the parent
    with its verdict, wall, tokens and the hypothesis.

    ``width`` is the console's. Each layout leaves the hypothesis column at least
    :data:`HYPOTHESIS_MIN` characters, so a hypothesis wraps in a few lines, never in a
    sliver: a narrower console first drops wall and tokens, then stacks each node in two
    columns, its id and a cell that holds the node's facts on one line and the hypothesis
    (and a failed node's cause) wrapped below them.
    """
    chosen = tree.selected()
    outcomes = classify(tree)
    nodes = list(tree)
    ids = [
        f"{clean(n.id)} ★" if chosen is not None and n.id == chosen.id else clean(n.id)
        for n in nodes
    ]
    parents = [clean(n.parent_id or "-") for n in nodes]
    # a failed node's cause stands where its score would
    val = [
        score_text(n) if n.score is not None or n.failure is None else _cause_label(n)
        for n in nodes
    ]
    gains = [gain_text(n.gain) for n in nodes]
    statuses = [OUTCOME_LABEL[outcomes[n.id]] for n in nodes]
    core: list[tuple[str, list[str]]] = [
        ("id", ids),
        ("parent", parents),
        ("kind", [str(n.kind) for n in nodes]),
    ]
    scores = [("status", statuses), ("val ± SE", val), ("vs parent", gains)]
    timing: list[tuple[str, list[str]]] = [
        ("wall s", [f"{n.execution.wall_s:.2f}" if n.execution else "-" for n in nodes]),
        ("tokens", [str(n.usage.total_tokens) for n in nodes]),
    ]
    room = width if width is not None else 10_000
    if _need(core + scores + timing) + 3 + HYPOTHESIS_MIN <= room:
        columns = core + scores + timing
    elif _need(core + scores) + 3 + HYPOTHESIS_MIN <= room:
        columns = core + scores
    else:
        return Group(_stacked_table(tree, title, ids, outcomes), table_legend(tree))

    table = Table(title=clean(title))
    for name, _ in columns:
        table.add_column(name, no_wrap=True)
    table.add_column("hypothesis", overflow="fold", min_width=HYPOTHESIS_MIN, ratio=1)
    shown = {name for name, _ in columns}
    for i, node in enumerate(nodes):
        style = OUTCOME_STYLE[outcomes[node.id]]
        cells = [safe(ids[i]), safe(parents[i]), str(node.kind)]
        cells += [f"[{style}]{statuses[i]}[/]", val[i], gain_markup(node.gain)]
        if node.score is None and node.failure is not None:
            cells[4] = f"[{style}]{safe(val[i])}[/]"
        if "wall s" in shown:
            cells += [timing[0][1][i], timing[1][1][i]]
        cells.append(_hypothesis_text(node))
        table.add_row(*cells)
    return Group(table, table_legend(tree))


def _stacked_table(
    tree: Tree, title: str, ids: list[str], outcomes: dict[str, Outcome]
) -> RenderableType:
    """The narrow layout: the id, then one cell per node with its facts on the first line
    (parent, kind, val ± SE and the gain; a failed node's outcome and cause instead) and
    its hypothesis wrapped under them."""
    nodes = list(tree)
    facts: list[list[tuple[str, str]]] = []  # per node: (text, style) per slot
    for node in nodes:
        outcome = outcomes[node.id]
        if node.score is not None:
            verdict = gain_verdict(node.gain) if node.gain is not None else ""
            third = (score_text(node), "")
            fourth = (gain_text(node.gain), VERDICT_STYLE.get(verdict, ""))
        else:
            cause = failure_cause(node)
            third = (OUTCOME_LABEL[outcome], OUTCOME_STYLE[outcome])
            fourth = (clean(cause.label) if cause else "", OUTCOME_STYLE[outcome])
        facts.append([(clean(node.parent_id or "-"), ""), (str(node.kind), ""), third, fourth])
    headers = ["parent", "kind", "val ± SE", "vs parent"]
    widths = [max([len(h)] + [len(f[slot][0]) for f in facts]) for slot, h in enumerate(headers)]
    table = Table(title=clean(title))
    table.add_column(Text("id\n"), no_wrap=True)  # on the facts' line (headers sit low)
    header = Text("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    header.append("\nhypothesis")
    table.add_column(header, overflow="fold", ratio=1)
    for i, node in enumerate(nodes):
        cell = Text()
        for slot, (text, style) in enumerate(facts[i]):
            last = slot == len(headers) - 1
            cell.append(text if last else text.ljust(widths[slot]) + "  ", style=style)
        cell.rstrip()
        cell.append("\n")
        cell.append(one_line(node.hypothesis))
        if node.failure is not None:
            cell.append("\n" + _failure_detail(node), style="red")
        table.add_row(Text(ids[i]), cell)
    return table


def table_legend(tree: Tree) -> Text:
    """What the table's marks mean."""
    unit = _unit(tree)
    level = next((n.gain.level for n in tree if n.gain is not None), None)
    parts = ["★ best: the node `rlab final` scores"]
    parts.append("± bootstrap standard error" + (f" over {unit}" if unit else ""))
    if level is not None:
        parts.append(f"vs parent: gain (+ is better), {level_text(level)} one-sided")
    return Text(" · ".join(parts), style="dim")
