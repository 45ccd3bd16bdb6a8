"""The GNN seed's temporal neighbour sampler against a brute-force reference.

The reference walks each seed's tree in pure Python with pyg-lib's disjoint temporal
semantics; the sampler must match it exactly where the fan-out covers every neighbour,
and otherwise keep its invariants: no future node, the fan-out per (node, edge type,
hop), real edges, disjoint trees, determinism and uniform draws.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

SEED_DIR = Path(__file__).parents[1] / "src" / "rlab_relbench" / "seeds" / "gnn"


def _load():
    name = "temporal_sampler"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SEED_DIR / "temporal_sampler.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


ts = _load()

EDGE_TYPES = [
    ("u", "to_v", "v"),
    ("v", "to_u", "u"),
    ("w", "to_u", "u"),
    ("u", "to_w", "w"),
    ("v", "to_v", "v"),
]


def random_graph(seed: int, sizes=(30, 20, 6), edges: int = 120):
    """Timed types u and v (times with ties), static type w; duplicate edges on purpose."""
    rng = random.Random(seed)
    num_nodes = dict(zip("uvw", sizes, strict=True))
    times = {t: [rng.randint(0, 20) for _ in range(num_nodes[t])] for t in "uv"}
    edge_lists = {}
    for src, rel, dst in EDGE_TYPES:
        pairs = [
            (rng.randrange(num_nodes[src]), rng.randrange(num_nodes[dst])) for _ in range(edges)
        ]
        pairs += rng.sample(pairs, 10)  # the same (src, dst) twice
        edge_lists[(src, rel, dst)] = pairs
    return num_nodes, times, edge_lists


def build(num_nodes, times, edge_lists):
    return ts.TemporalGraph.from_edges(
        {
            et: torch.tensor(pairs, dtype=torch.long).view(-1, 2).T
            for et, pairs in edge_lists.items()
        },
        num_nodes,
        {t: torch.tensor(v) for t, v in times.items()},
    )


def admissible(times, edge_lists, et, dst, seed_time):
    """Edge ids of dst's incoming edges of type et whose source is not in the future."""
    src_type = et[0]
    return [
        eid
        for eid, (u, v) in enumerate(edge_lists[et])
        if v == dst and (src_type not in times or times[src_type][u] <= seed_time)
    ]


def reference(times, edge_lists, seed_type, seeds, seed_times, hops):
    """Every tree's nodes {(type, id): hop} and edges {(et, eid)} with the whole neighbourhood."""
    out = []
    for seed, seed_time in zip(seeds, seed_times, strict=True):
        hop_of = {(seed_type, seed): 0}
        frontier, edges = {seed_type: [seed]}, set()
        for hop in range(hops):
            new = defaultdict(list)
            for et in EDGE_TYPES:
                for v in frontier.get(et[2], []):
                    for eid in admissible(times, edge_lists, et, v, seed_time):
                        edges.add((et, eid))
                        node = (et[0], edge_lists[et][eid][0])
                        if node not in hop_of:
                            hop_of[node] = hop + 1
                            new[et[0]].append(node[1])
            frontier = new
        out.append((hop_of, edges))
    return out


def trees_of(sub, seed_type, hops):
    """The sampler's output in the reference's shape, per tree."""
    out = defaultdict(lambda: ({}, set()))
    for t, nodes in sub.node.items():
        bounds = [0]
        for n in sub.num_sampled_nodes[t]:
            bounds.append(bounds[-1] + n)
        assert bounds[-1] == len(nodes)
        for hop in range(hops + 1):
            for i in range(bounds[hop], bounds[hop + 1]):
                key = (t, int(nodes[i]))
                tree = int(sub.batch[t][i])
                assert key not in out[tree][0], "a (tree, node) pair added twice"
                out[tree][0][key] = hop
    for et, eids in sub.edge.items():
        for tree, eid in zip(sub.batch[et[2]][sub.col[et]].tolist(), eids.tolist(), strict=True):
            out[tree][1].add((et, eid))
    return out


def check_invariants(sub, graph_parts, seeds, seed_times, fanout):
    """Real edges, disjoint trees, no future node, fan-out exact per (node, edge type, hop)."""
    _, times, edge_lists = graph_parts
    seed_type = "u"
    assert sub.node[seed_type][: len(seeds)].tolist() == seeds
    assert sub.batch[seed_type][: len(seeds)].tolist() == list(range(len(seeds)))
    for t, nodes in sub.node.items():
        start = len(seeds) if t == seed_type else 0
        if t in times:
            for node, tree in zip(
                nodes[start:].tolist(), sub.batch[t][start:].tolist(), strict=True
            ):
                assert times[t][node] <= seed_times[tree], "a node from the future"
    dst_bounds = {t: [0] for t in sub.node}
    for t, counts in sub.num_sampled_nodes.items():
        for n in counts:
            dst_bounds[t].append(dst_bounds[t][-1] + n)
    for et in EDGE_TYPES:
        src_type, _, dst_type = et
        row, col, eids = sub.row[et].tolist(), sub.col[et].tolist(), sub.edge[et].tolist()
        src = sub.node[src_type][row].tolist() if row else []
        dst = sub.node[dst_type][col].tolist() if col else []
        for s, d, e in zip(src, dst, eids, strict=True):
            assert edge_lists[et][e] == (s, d), "not a real edge"
        assert sub.batch[src_type][row].tolist() == sub.batch[dst_type][col].tolist()
        start = 0
        for hop, size in enumerate(sub.num_sampled_edges[et]):
            # edges of a hop leave exactly the nodes the previous hop added
            lo, hi = dst_bounds[dst_type][hop], dst_bounds[dst_type][hop + 1]
            picked = defaultdict(list)
            for c, e in zip(col[start : start + size], eids[start : start + size], strict=True):
                assert lo <= c < hi
                picked[c].append(e)
            for c in range(lo, hi):
                node, tree = int(sub.node[dst_type][c]), int(sub.batch[dst_type][c])
                allowed = admissible(times, edge_lists, et, node, seed_times[tree])
                assert len(picked[c]) == len(set(picked[c])), "drawn with replacement"
                assert set(picked[c]) <= set(allowed)
                assert len(picked[c]) == min(fanout[hop], len(allowed)), "fan-out not respected"
            start += size
        assert start == len(eids)


@pytest.mark.parametrize("case", range(4))
def test_whole_neighbourhood_matches_the_reference(case):
    parts = random_graph(case, sizes=(20 + 10 * case, 15, 4 + case), edges=60 + 20 * case)
    graph = build(*parts)
    rng = random.Random(100 + case)
    seeds = [rng.randrange(parts[0]["u"]) for _ in range(12)] + [0, 0]  # a seed twice
    seed_times = [rng.randint(0, 20) for _ in range(12)] + [-1, 20]  # -1: nothing admissible
    hops = 3
    for fanout in ([-1] * hops, [1000] * hops):
        sub = ts.sample(graph, "u", torch.tensor(seeds), torch.tensor(seed_times), fanout)
        got = trees_of(sub, "u", hops)
        want = reference(parts[1], parts[2], "u", seeds, seed_times, hops)
        for tree, (hop_of, edges) in enumerate(want):
            assert got[tree][0] == hop_of
            assert got[tree][1] == edges
        assert sub.num_sampled_nodes["u"][0] == len(seeds)
        # seed time -1 admits only the static type w; the seed at time 20 admits plenty
        assert {et[0] for et, _ in want[12][1]} <= {"w"} and len(want[13][1]) > 10


@pytest.mark.parametrize("case", range(4))
def test_partial_fanout_keeps_every_invariant(case):
    parts = random_graph(10 + case, sizes=(25, 25, 5), edges=150)
    graph = build(*parts)
    rng = random.Random(case)
    seeds = [rng.randrange(25) for _ in range(40)]
    seed_times = [rng.randint(-2, 22) for _ in range(40)]
    fanout = [[2, 3], [1, 4, 2], [3, 1], [5, 5]][case]
    generator = torch.Generator().manual_seed(case)
    sub = ts.sample(
        graph, "u", torch.tensor(seeds), torch.tensor(seed_times), fanout, generator=generator
    )
    check_invariants(sub, parts, seeds, seed_times, fanout)
    assert sum(sub.num_sampled_edges[EDGE_TYPES[1]]) > 0


def test_per_edge_type_fanout_and_no_time_limit():
    parts = random_graph(7)
    graph = build(*parts)
    fanout = {et: [2, 2] for et in EDGE_TYPES if et != ("w", "to_u", "u")}
    sub = ts.sample(graph, "u", torch.arange(10), None, fanout)
    assert len(sub.edge[("w", "to_u", "u")]) == 0
    assert len(sub.edge[("v", "to_u", "u")]) > 0
    # no seed time: every neighbour is admissible, so full fan-out equals the whole graph
    everything = ts.sample(graph, "u", torch.tensor([3]), None, [-1])
    want = {e for e, (_, d) in enumerate(parts[2][("v", "to_u", "u")]) if d == 3}
    assert set(everything.edge[("v", "to_u", "u")].tolist()) == want


def test_every_admissible_neighbour_is_reachable():
    # node u0 has 12 incoming edges from v at times 0..11; seed time 7 admits 8 of them
    times = {"u": [0], "v": list(range(12))}
    edge_lists = {et: [] for et in EDGE_TYPES}
    edge_lists[("v", "to_u", "u")] = [(i, 0) for i in range(12)]
    graph = build({"u": 1, "v": 12, "w": 1}, times, edge_lists)
    generator = torch.Generator().manual_seed(0)
    seen = Counter()
    for _ in range(30):
        sub = ts.sample(graph, "u", torch.tensor([0]), torch.tensor([7]), [3], generator=generator)
        seen.update(sub.node["v"].tolist())
        assert len(sub.node["v"]) == 3
    assert set(seen) == set(range(8))


def test_deterministic_for_a_seeded_generator():
    parts = random_graph(3, sizes=(40, 40, 5), edges=300)
    graph = build(*parts)
    seeds, seed_times = torch.arange(40), torch.full((40,), 15)

    def draw(seed):
        generator = torch.Generator().manual_seed(seed)
        sub = ts.sample(graph, "u", seeds, seed_times, [3, 2], generator=generator)
        return [sub.node[t].tolist() for t in "uvw"] + [sub.edge[et].tolist() for et in EDGE_TYPES]

    assert draw(1) == draw(1)
    assert draw(1) != draw(2)


@pytest.mark.parametrize(("n", "k"), [(5, 2), (7, 2), (12, 3), (40, 3)])
def test_draws_are_uniform_subsets(n, k):
    """All C(n, k) subsets equally likely (covers the random-key and the draw paths)."""
    times = {"u": [0], "v": [*range(n), 99, 99]}  # two future neighbours never drawn
    edge_lists = {et: [] for et in EDGE_TYPES}
    edge_lists[("v", "to_u", "u")] = [(i, 0) for i in range(n + 2)]
    graph = build({"u": 1, "v": n + 2, "w": 1}, times, edge_lists)
    trees = 6000
    sub = ts.sample(
        graph,
        "u",
        torch.zeros(trees, dtype=torch.long),
        torch.full((trees,), 50),
        [k],
        generator=torch.Generator().manual_seed(n),
    )
    et = ("v", "to_u", "u")
    tree_of_edge = sub.batch["u"][sub.col[et]]
    picked = defaultdict(set)
    for tree, eid in zip(tree_of_edge.tolist(), sub.edge[et].tolist(), strict=True):
        picked[tree].add(eid)
    assert all(len(s) == k for s in picked.values()) and len(picked) == trees
    if n <= 12:  # the subsets themselves
        counts = Counter(frozenset(s) for s in picked.values())
        cells = len(list(combinations(range(n), k)))
    else:  # the marginals
        counts = Counter(e for s in picked.values() for e in s)
        cells = n
    assert len(counts) == cells
    total = sum(counts.values())
    chi2 = sum((c - total / cells) ** 2 / (total / cells) for c in counts.values())
    # generous: a chi-square with d dof lies below d + 6 sqrt(2d) essentially always
    dof = cells - 1
    assert chi2 < dof + 6 * (2 * dof) ** 0.5, (chi2, dof)


def test_temporal_loader_batches_feed_relbench_models():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("torch_frame")
    import numpy as np
    from relbench.base import Database, Table
    from relbench.modeling.graph import AttachTargetTransform, make_pkey_fkey_graph
    from relbench.modeling.nn import HeteroEncoder, HeteroGraphSAGE, HeteroTemporalEncoder
    from torch_frame import stype

    rng = np.random.default_rng(0)
    customers = pd.DataFrame({"customer_id": range(30), "age": rng.integers(18, 80, 30)})
    products = pd.DataFrame(
        {"product_id": range(8), "kind": rng.choice(["a", "b", "c"], 8), "price": rng.random(8)}
    )
    when = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 90, 400)), "D")
    sales = pd.DataFrame(
        {
            "sale_id": range(400),
            "when": when,
            "customer_id": rng.integers(0, 30, 400),
            "product_id": rng.integers(0, 8, 400),
            "amount": rng.random(400),
        }
    )
    db = Database(
        {
            "customers": Table(customers, {}, pkey_col="customer_id"),
            "products": Table(products, {}, pkey_col="product_id"),
            "sales": Table(
                sales,
                {"customer_id": "customers", "product_id": "products"},
                pkey_col="sale_id",
                time_col="when",
            ),
        }
    )
    stypes = {
        "customers": {"age": stype.numerical},
        "products": {"kind": stype.categorical, "price": stype.numerical},
        "sales": {"when": stype.timestamp, "amount": stype.numerical},
    }
    data, col_stats = make_pkey_fkey_graph(db, stypes)
    seed_nodes = torch.tensor(rng.integers(0, 30, 50))
    seed_time = torch.tensor(
        (pd.Timestamp("2024-02-01").value // 10**9) + rng.integers(-20, 20, 50) * 86400
    )
    target = torch.arange(50, dtype=torch.float)
    loader = ts.TemporalLoader(
        data,
        [8, 4],
        "customers",
        seed_nodes,
        seed_time,
        batch_size=16,
        shuffle=True,
        transform=AttachTargetTransform("customers", target),
    )
    assert loader.backend == "rlab" and len(loader) == 4
    batches = list(loader)
    seen = torch.cat([b["customers"].input_id for b in batches])
    assert sorted(seen.tolist()) == list(range(50))
    batch = batches[0]
    size = batch["customers"].batch_size
    ids = batch["customers"].input_id
    assert batch["customers"].n_id[:size].tolist() == seed_nodes[ids].tolist()
    assert torch.equal(batch["customers"].y, target[ids])
    assert torch.equal(batch["customers"].seed_time, seed_time[ids])
    assert (batch["sales"].time <= batch["customers"].seed_time[batch["sales"].batch]).all()
    assert batch["sales"].num_nodes > 0 and batch["products"].num_nodes > 0
    assert batch["sales"].tf.num_rows == batch["sales"].num_nodes

    channels = 16
    encoder = HeteroEncoder(
        channels,
        {t: data[t].tf.col_names_dict for t in data.node_types},
        col_stats,
        torch_frame_model_kwargs={"channels": 16, "num_layers": 1},
    )
    temporal = HeteroTemporalEncoder([t for t in data.node_types if "time" in data[t]], channels)
    gnn = HeteroGraphSAGE(data.node_types, data.edge_types, channels, aggr="sum", num_layers=2)
    x = encoder(batch.tf_dict)
    for t, rel in temporal(batch["customers"].seed_time, batch.time_dict, batch.batch_dict).items():
        x[t] = x[t] + rel
    x = gnn(x, batch.edge_index_dict, batch.num_sampled_nodes_dict, batch.num_sampled_edges_dict)
    for t in data.node_types:
        assert x[t].shape == (batch[t].num_nodes, channels)
    assert x["customers"][:size].shape == (size, channels)
    assert torch.isfinite(x["customers"]).all()
    # the batch is the graph the seeds' trees span: message edges point at the seeds
    to_seed = ("sales", "f2p_customer_id", "customers")
    assert set(batch[to_seed].edge_index[1].tolist()) <= set(range(size))
    assert len(batch.num_sampled_nodes_dict["sales"]) == 3
