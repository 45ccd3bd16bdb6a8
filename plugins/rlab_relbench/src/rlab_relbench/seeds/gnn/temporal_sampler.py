"""Temporal neighbour sampling for heterogeneous graphs, with or without pyg-lib.

torch_geometric's ``NeighborLoader`` samples time-respecting subgraphs only through pyg-lib,
which is not on PyPI. This module does the same sampling with torch alone: pyg-lib's
*disjoint, temporal, uniform* strategy. Each seed is the root of its own tree; hop by hop,
every node added in the previous hop draws, per edge type, up to the fan-out of its
in-neighbours whose time is at most its tree's seed time (uniformly, without replacement;
a node type without time is always admissible). A (tree, node) pair is added once; later
edges to it point at the existing copy. Everything is vectorised over seeds, nodes and
edges; Python loops run over hops and edge types only.

``TemporalLoader`` yields mini-batches shaped like ``NeighborLoader``'s and uses pyg-lib's
sampler when it is installed. The file is part of the candidate's source (it must not import
rlab): edit it freely.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

EdgeType = tuple[str, str, str]


@dataclass
class _Incoming:
    """One edge type's incoming edges of every destination node (CSC), each node's
    sources sorted by their time so the admissible ones are a prefix."""

    colptr: Tensor  # (num_dst + 1,)
    row: Tensor  # source node of each entry
    eid: Tensor  # column of the entry in the edge type's original edge_index
    key: Tensor | None  # dst * num_levels + time level of the source; None: static source


class TemporalGraph:
    """CSC adjacency per edge type (incoming edges of each destination node), each node's
    neighbour list sorted by the neighbour's time, plus each node type's time (None for a
    static table)."""

    def __init__(
        self,
        num_nodes: dict[str, int],
        node_time: dict[str, Tensor | None],
        incoming: dict[EdgeType, _Incoming],
        levels: dict[str, Tensor],
    ) -> None:
        self.num_nodes = num_nodes
        self.node_time = node_time
        self.incoming = incoming
        self.levels = levels  # sorted distinct times of each timed node type

    @property
    def edge_types(self) -> list[EdgeType]:
        return list(self.incoming)

    @classmethod
    def from_hetero_data(cls, data, time_attr: str = "time") -> TemporalGraph:
        """The graph of a ``HeteroData`` (e.g. from relbench's ``make_pkey_fkey_graph``)."""
        times = {t: data[t].get(time_attr, None) for t in data.node_types}
        return cls.from_edges(
            {et: data[et].edge_index for et in data.edge_types},
            {t: int(data[t].num_nodes) for t in data.node_types},
            {t: v for t, v in times.items() if v is not None},
        )

    @classmethod
    def from_edges(
        cls,
        edge_index_dict: dict[EdgeType, Tensor],
        num_nodes_dict: dict[str, int],
        node_time_dict: dict[str, Tensor],
    ) -> TemporalGraph:
        """Build from ``(2, E)`` edge indices (row: source, col: destination) per edge type;
        node types missing from ``node_time_dict`` are static."""
        node_time: dict[str, Tensor | None] = {t: None for t in num_nodes_dict}
        levels, level_of = {}, {}
        for t, time in node_time_dict.items():
            time = torch.as_tensor(time).reshape(-1)
            node_time[t] = time
            levels[t], level_of[t] = torch.unique(time, sorted=True, return_inverse=True)
        incoming = {}
        for et, edge_index in edge_index_dict.items():
            src, dst = torch.as_tensor(edge_index).as_subclass(Tensor).long().view(2, -1)
            num_dst = num_nodes_dict[et[2]]
            if et[0] in levels:
                width = max(1, len(levels[et[0]]))
                key = dst * width + level_of[et[0]][src]
            else:
                key = dst
            key, perm = torch.sort(key, stable=True)
            colptr = torch.zeros(num_dst + 1, dtype=torch.long)
            colptr[1:] = torch.cumsum(torch.bincount(dst, minlength=num_dst), 0)
            incoming[et] = _Incoming(colptr, src[perm], perm, key if et[0] in levels else None)
        return cls(dict(num_nodes_dict), node_time, incoming, levels)


@dataclass
class SampledSubgraph:
    """Disjoint sampled trees. Per node type: global ids ``node`` and tree index ``batch``;
    per edge type: local ``row`` (source) / ``col`` (destination) indices into the node
    lists and the global edge ids ``edge``; counts per hop. The seeds are the first
    entries of the seed type, in input order."""

    node: dict[str, Tensor]
    batch: dict[str, Tensor]
    row: dict[EdgeType, Tensor]
    col: dict[EdgeType, Tensor]
    edge: dict[EdgeType, Tensor]
    num_sampled_nodes: dict[str, list[int]]
    num_sampled_edges: dict[EdgeType, list[int]]


def _ragged_arange(counts: Tensor) -> tuple[Tensor, Tensor]:
    """(row, position) of every slot of rows holding ``counts`` slots each."""
    total = int(counts.sum())
    rows = torch.repeat_interleave(torch.arange(len(counts)), counts, output_size=total)
    return rows, torch.arange(total) - (torch.cumsum(counts, 0) - counts)[rows]


def _by_random_keys(n: Tensor, k: int, gen: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """k of n per row via a random order of all n slots (cheap where n is near k)."""
    rows, offset = _ragged_arange(n)
    order = torch.argsort(torch.rand(len(rows), generator=gen, dtype=torch.float64))
    order = order[torch.sort(rows[order], stable=True).indices]  # random within each row
    _, rank = _ragged_arange(n)  # rows[order] == rows: rank is the position in the row
    keep = rank < k
    return rows[keep], offset[order][keep]


def _by_draws(n: Tensor, k: int, gen: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """k of n per row (n >> k): i.i.d. draws, the first k distinct values in draw order.

    Keeping first occurrences of uniform draws is sampling without replacement; a row that
    got fewer than k distinct values draws afresh with more draws (a permutation-invariant
    rejection, so the subset stays uniform)."""
    out_rows, out_offsets = [], []
    pending, draws = torch.arange(len(n)), 2 * k
    while len(pending):
        size = n[pending].unsqueeze(1)
        value = (torch.rand(len(pending), draws, generator=gen, dtype=torch.float64) * size).long()
        value = torch.minimum(value, size - 1)
        key = (torch.arange(len(pending)).unsqueeze(1) * int(size.max()) + value).view(-1)
        sorted_key, order = torch.sort(key, stable=True)
        first = torch.ones_like(sorted_key, dtype=torch.bool)
        first[1:] = sorted_key[1:] != sorted_key[:-1]
        fresh = torch.empty_like(first)
        fresh[order] = first
        fresh = fresh.view(len(pending), draws)
        done = fresh.sum(1) >= k
        keep = fresh & (fresh.cumsum(1) <= k) & done.unsqueeze(1)
        local_row, column = keep.nonzero(as_tuple=True)
        out_rows.append(pending[local_row])
        out_offsets.append(value[local_row, column])
        pending, draws = pending[~done], draws * 2
    return torch.cat(out_rows), torch.cat(out_offsets)


def _choose(n: Tensor, k: int, gen: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """min(n_i, k) distinct offsets in ``[0, n_i)`` per row, uniformly (k < 0: all)."""
    if k < 0:
        return _ragged_arange(n)
    parts = []
    for mask, pick in (
        (n <= k, lambda m: _ragged_arange(m)),
        ((n > k) & (n <= 3 * k), lambda m: _by_random_keys(m, k, gen)),
        (n > 3 * k, lambda m: _by_draws(m, k, gen)),
    ):
        index = mask.nonzero().view(-1)
        if len(index):
            rows, offsets = pick(n[index])
            parts.append((index[rows], offsets))
    if not parts:
        return torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    if len(parts) == 1:  # each path returns its rows grouped already
        return parts[0]
    rows = torch.cat([p[0] for p in parts])
    offsets = torch.cat([p[1] for p in parts])
    order = torch.sort(rows, stable=True).indices  # group by frontier node, as pyg-lib does
    return rows[order], offsets[order]


def _fanouts(
    num_neighbors: list[int] | dict[EdgeType, list[int]], edge_types: list[EdgeType]
) -> tuple[int, dict[EdgeType, list[int]]]:
    if not isinstance(num_neighbors, dict):
        num_neighbors = {et: list(num_neighbors) for et in edge_types}
    hops = max((len(v) for v in num_neighbors.values()), default=0)
    # an edge type left out of a dict (or a list shorter than the others) samples nothing
    return hops, {et: [*num_neighbors.get(et, []), *[0] * hops][:hops] for et in edge_types}


def _admissible_end(graph: TemporalGraph, et: EdgeType, dst: Tensor, time: Tensor | None) -> Tensor:
    """End of each node's admissible prefix: sources with time <= the tree's seed time."""
    adj = graph.incoming[et]
    if adj.key is None or time is None:
        return adj.colptr[dst + 1]
    levels = graph.levels[et[0]]
    common = torch.promote_types(levels.dtype, time.dtype)
    if common.is_floating_point:
        common = torch.float64
    below = torch.searchsorted(levels.to(common), time.to(common), right=True)
    return torch.searchsorted(adj.key, dst * max(1, len(levels)) + below)


class _NodeList:
    """One node type's sampled (tree, node) pairs in local order, with a sorted index of
    their keys ``tree * width + node``: the disjoint dedup."""

    def __init__(self, width: int, nodes: Tensor, trees: Tensor) -> None:
        self.width, self.nodes, self.trees = width, [nodes], [trees]
        self.count = len(nodes)
        self.key, self.local = torch.sort(trees * width + nodes)

    def place(self, nodes: Tensor, trees: Tensor) -> Tensor:
        """Local index of each (tree, node), appending the new ones in first-seen order."""
        key = trees * self.width + nodes
        local = torch.full_like(key, -1)
        if len(self.key):
            position = torch.searchsorted(self.key, key).clamp(max=len(self.key) - 1)
            hit = self.key[position] == key
            local[hit] = self.local[position[hit]]
        miss = (local < 0).nonzero().view(-1)
        if not len(miss):
            return local
        unique, inverse = torch.unique(key[miss], sorted=True, return_inverse=True)
        seen_at = torch.full((len(unique),), len(miss), dtype=torch.long)
        seen_at.scatter_reduce_(0, inverse, torch.arange(len(miss)), reduce="amin")
        order = torch.argsort(seen_at)
        new_local = torch.empty_like(order)
        new_local[order] = torch.arange(self.count, self.count + len(unique))
        local[miss] = new_local[inverse]
        self.nodes.append(unique[order] % self.width)
        self.trees.append(unique[order] // self.width)
        self.count += len(unique)
        self.key, merged = torch.sort(torch.cat([self.key, unique]))
        self.local = torch.cat([self.local, new_local])[merged]
        return local

    def since(self, start: int) -> tuple[Tensor, Tensor]:
        """Nodes and trees of local indices ``start..count``."""
        nodes, trees = torch.cat(self.nodes), torch.cat(self.trees)
        self.nodes, self.trees = [nodes], [trees]
        return nodes[start:], trees[start:]


def sample(
    graph: TemporalGraph,
    seed_type: str,
    seed_nodes: Tensor,
    seed_time: Tensor | None,
    num_neighbors: list[int] | dict[EdgeType, list[int]],
    *,
    generator: torch.Generator | None = None,
) -> SampledSubgraph:
    """Disjoint temporal uniform neighbour sampling (pyg-lib's semantics) from the seeds.

    ``num_neighbors[hop]`` is the fan-out per node and edge type (-1: every admissible
    neighbour); ``seed_time`` None samples without a time limit."""
    seed_nodes = torch.as_tensor(seed_nodes).long().view(-1)
    seed_time = None if seed_time is None else torch.as_tensor(seed_time).view(-1)
    hops, fanout = _fanouts(num_neighbors, graph.edge_types)
    empty = torch.empty(0, dtype=torch.long)
    lists = {t: _NodeList(max(1, n), empty, empty) for t, n in graph.num_nodes.items()}
    lists[seed_type] = _NodeList(
        max(1, graph.num_nodes[seed_type]), seed_nodes, torch.arange(len(seed_nodes))
    )
    counts = {t: [nl.count] for t, nl in lists.items()}
    edges = {et: ([], [], [], []) for et in graph.edge_types}  # row, col, eid, per-hop sizes
    begin = dict.fromkeys(lists, 0)  # the frontier: nodes added by the previous hop
    for hop in range(hops):
        frontier = {t: (begin[t], *nl.since(begin[t])) for t, nl in lists.items()}
        begin = {t: nl.count for t, nl in lists.items()}
        for et in graph.edge_types:
            first_local, dst, tree = frontier[et[2]]
            k = fanout[et][hop]
            if k == 0 or not len(dst):
                edges[et][3].append(0)
                continue
            adj = graph.incoming[et]
            first = adj.colptr[dst]
            time = None if seed_time is None else seed_time[tree]
            rows, offsets = _choose(_admissible_end(graph, et, dst, time) - first, k, generator)
            position = first[rows] + offsets
            row_list, col_list, eid_list, sizes = edges[et]
            row_list.append(lists[et[0]].place(adj.row[position], tree[rows]))
            col_list.append(first_local + rows)
            eid_list.append(adj.eid[position])
            sizes.append(len(rows))
        for t, nl in lists.items():
            counts[t].append(nl.count - begin[t])
    return SampledSubgraph(
        node={t: torch.cat(nl.nodes) for t, nl in lists.items()},
        batch={t: torch.cat(nl.trees) for t, nl in lists.items()},
        row={et: torch.cat([empty, *edges[et][0]]) for et in graph.edge_types},
        col={et: torch.cat([empty, *edges[et][1]]) for et in graph.edge_types},
        edge={et: torch.cat([empty, *edges[et][2]]) for et in graph.edge_types},
        num_sampled_nodes=counts,
        num_sampled_edges={et: edges[et][3] for et in graph.edge_types},
    )


def to_batch(
    data,
    sub: SampledSubgraph,
    seed_type: str,
    seed_time: Tensor | None,
    *,
    input_id: Tensor | None = None,
):
    """A mini-batch as RelBench's model code expects it (what ``NeighborLoader`` yields):
    per node type ``tf`` and every other node attribute indexed by ``n_id``, ``n_id``,
    ``batch``, ``time`` where the type has one, ``num_sampled_nodes``; per edge type
    ``edge_index`` (local), ``e_id``, ``num_sampled_edges``; on the seed type ``seed_time``,
    ``batch_size`` and (when given) ``input_id``, the seeds' positions in the loader's input."""
    from torch_geometric.loader.utils import filter_hetero_data

    out = filter_hetero_data(data, dict(sub.node), dict(sub.row), dict(sub.col), dict(sub.edge))
    for t in data.node_types:
        out[t].n_id = sub.node[t]
        out[t].batch = sub.batch[t]
        out[t].num_sampled_nodes = sub.num_sampled_nodes[t]
    for et in data.edge_types:
        out[et].e_id = sub.edge[et]
        out[et].num_sampled_edges = sub.num_sampled_edges[et]
    size = sub.num_sampled_nodes[seed_type][0]
    if seed_time is not None:
        out[seed_type].seed_time = seed_time
    out[seed_type].batch_size = size
    if input_id is not None:
        out[seed_type].input_id = input_id
    return out


class TemporalLoader:
    """Mini-batches over ``(seed_nodes, seed_time)`` like ``NeighborLoader(time_attr="time",
    temporal_strategy="uniform")``: pyg-lib's sampler when ``WITH_PYG_LIB``, else
    :func:`sample` + :func:`to_batch`. ``.backend`` says which ("pyg-lib" or "rlab").

    The shuffle order and (rlab backend) the sampling draw from ``generator``, by default
    one seeded from ``RLAB_SEED``; pyg-lib draws from torch's global generator instead.
    Pass ``graph`` to share one :class:`TemporalGraph` between loaders, ``backend`` to force
    one."""

    def __init__(
        self,
        data,
        num_neighbors: list[int] | dict[EdgeType, list[int]],
        seed_type: str,
        seed_nodes: Tensor,
        seed_time: Tensor | None,
        *,
        batch_size: int = 512,
        shuffle: bool = False,
        generator: torch.Generator | None = None,
        transform=None,
        graph: TemporalGraph | None = None,
        backend: str | None = None,
        time_attr: str = "time",
    ) -> None:
        import torch_geometric.typing

        if generator is None:
            generator = torch.Generator().manual_seed(int(os.environ.get("RLAB_SEED", "0")))
        self.data, self.num_neighbors, self.seed_type = data, num_neighbors, seed_type
        self.seed_nodes = torch.as_tensor(seed_nodes).long()
        self.seed_time = None if seed_time is None else torch.as_tensor(seed_time)
        self.batch_size, self.shuffle, self.generator = batch_size, shuffle, generator
        self.transform = transform
        self.backend = backend or ("pyg-lib" if torch_geometric.typing.WITH_PYG_LIB else "rlab")
        if self.backend == "pyg-lib":
            from torch_geometric.loader import NeighborLoader

            self._loader = NeighborLoader(
                data,
                num_neighbors=num_neighbors,
                input_nodes=(seed_type, self.seed_nodes),
                input_time=self.seed_time,
                time_attr=time_attr if seed_time is not None else None,
                temporal_strategy="uniform",
                subgraph_type="directional",
                disjoint=True,
                batch_size=batch_size,
                shuffle=shuffle,
                generator=generator,
                transform=transform,
            )
        else:
            self.graph = graph or TemporalGraph.from_hetero_data(data, time_attr)

    def __len__(self) -> int:
        return math.ceil(len(self.seed_nodes) / self.batch_size)

    def __iter__(self) -> Iterator:
        if self.backend == "pyg-lib":
            yield from self._loader
            return
        count = len(self.seed_nodes)
        order = (
            torch.randperm(count, generator=self.generator) if self.shuffle else torch.arange(count)
        )
        for index in order.split(self.batch_size):
            time = None if self.seed_time is None else self.seed_time[index]
            sub = sample(
                self.graph,
                self.seed_type,
                self.seed_nodes[index],
                time,
                self.num_neighbors,
                generator=self.generator,
            )
            batch = to_batch(self.data, sub, self.seed_type, time, input_id=index)
            yield batch if self.transform is None else self.transform(batch)
