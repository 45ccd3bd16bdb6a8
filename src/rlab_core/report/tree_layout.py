"""Rows and lanes of the dashboard's decision tree: creation order, no crossing connectors.

The ordering rule: roots (seeds, and any node whose parent is unknown) in creation order,
each node followed by its whole subtree, a node's children in creation order (node id
order). So every subtree is a contiguous block of rows, siblings read in the order the run
made them, and a parent is always above its children.

The lane rule (the column of a node's dot): a root sits in lane 0; a node's last child
continues its parent's lane; every other child sits one lane to the right of its parent.

How the page draws a connector from a parent to a child: down the parent's lane (its
trunk), and, for a child in the next lane, an elbow into the child's dot in the band just
above the child's row. No two connectors cross, and none runs through a dot: lanes never
decrease going down the tree, so everything below a parent's earlier children lies right
of the parent's trunk, which runs on only to the parent's last child, and each elbow spans
one lane, where nothing else runs at that height (``tests/test_dashboard_views.py`` checks
this geometrically on random trees). The tree is as wide as its deepest chain of "not the
last child" steps: a search that keeps improving its newest child stays in one lane.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_NUMBERED = re.compile(r"(\d+)$")


def creation_key(node_id: str) -> tuple[int, str]:
    """Sort key of node ids in the order the run created them (``n0009`` before ``n0010``)."""
    match = _NUMBERED.search(node_id)
    return (int(match.group(1)) if match else 1 << 62, node_id)


def tree_rows(nodes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"id", "lane"}]`` in row order for nodes given as mappings with ``id``, ``parent_id``."""
    parents = {str(n["id"]): n.get("parent_id") for n in nodes}
    ids = sorted(parents, key=creation_key)
    children: dict[str, list[str]] = {i: [] for i in ids}
    roots: list[str] = []
    for node_id in ids:  # creation order, so every child list is in creation order too
        parent = parents[node_id]
        if parent in children and parent != node_id:
            children[parent].append(node_id)
        else:
            roots.append(node_id)
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()
    # then any node a broken journal left in a cycle of parents, as a root
    for start in [*roots, *ids]:
        if start in placed:
            continue
        stack = [(start, 0)]
        while stack:  # depth first, iteratively: a long chain of repairs is no recursion limit
            node_id, lane = stack.pop()
            if node_id in placed:
                continue
            placed.add(node_id)
            rows.append({"id": node_id, "lane": lane})
            kids = children[node_id]
            stack.extend((kid, lane + (kid != kids[-1])) for kid in reversed(kids))
    return rows
