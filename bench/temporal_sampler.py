"""Speed of the GNN seed's temporal neighbour sampler on rel-flights (plane-delay).

Usage: ``uv run python bench/temporal_sampler.py [--data PUBLIC_DIR] [--batches 30] [--repeats 5]``.
Without ``--data`` it prepares rel-flights/plane-delay through the plugin in a throw-away
``RLAB_CACHE_HOME``; with it, it reads a prepared task's public folder (``dataset.yaml``,
``db/*.parquet``, ``train.parquet``). Builds the graph with relbench's
``make_pkey_fkey_graph``, then for each fan-out prints, for batches of 512 training seeds
in shuffled order (median of the repeats): seeds sampled per second by ``sample`` alone and
by the whole loader (``sample`` + ``to_batch``, features gathered), and sampled nodes per
seed. For comparison, torch_geometric's ``NeighborLoader`` without time (it runs without
pyg-lib only non-temporal and non-disjoint, so its trees share nodes) and the rlab sampler
without time. Figures only; nothing is asserted.

OpenMP's wait policy is set to PASSIVE (as the seeds do) unless ``OMP_WAIT_POLICY`` is set:
with the default spinning threads, two torch threads on a busy two-core machine sampled
5-10x slower than one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP
SEED_DIR = Path(__file__).parents[1] / "plugins/rlab_relbench/src/rlab_relbench/seeds/gnn"
FANOUTS = {
    "[128, 64] (RelBench's examples: 128 halved per layer, 2 layers)": [128, 64],
    "[32, 16]": [32, 16],
}


def load_sampler():
    spec = importlib.util.spec_from_file_location(
        "temporal_sampler", SEED_DIR / "temporal_sampler.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["temporal_sampler"] = module
    spec.loader.exec_module(module)
    return module


def prepared_folder(root: Path) -> Path:
    """rel-flights/plane-delay prepared by the plugin, as a run would; its public folder."""
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    from rlab_relbench.benchmark import RelBenchBenchmark
    from rlab_relbench.options import RelBenchOptions

    bench = RelBenchBenchmark(RelBenchOptions())
    task = bench.prepare("rel-flights/plane-delay", root / "cache" / "relbench")
    return Path(task.data_dir)


def load_graph(public: Path):
    """The candidate's view of the data as a relbench graph (text columns left out)."""
    import pandas as pd
    import yaml
    from relbench.base import Database, Table
    from relbench.modeling.graph import make_pkey_fkey_graph
    from relbench.modeling.utils import get_stype_proposal
    from torch_frame import stype

    schema = yaml.safe_load((public / "dataset.yaml").read_text())["tables"]
    tables = {}
    for name, spec in schema.items():
        frame = pd.read_parquet(public / "db" / f"{name}.parquet")
        tables[name] = Table(
            frame, spec.get("fkeys") or {}, pkey_col=spec["pkey"], time_col=spec.get("time_col")
        )
    db = Database(tables)
    stypes = get_stype_proposal(db)
    for columns in stypes.values():
        for col in [c for c, s in columns.items() if s == stype.text_embedded]:
            del columns[col]
    return make_pkey_fkey_graph(db, stypes)[0]


def seeds(public: Path):
    import pandas as pd
    import torch
    from relbench.modeling.utils import to_unix_time

    train = pd.read_parquet(public / "train.parquet")
    return (
        torch.from_numpy(train["plane_id"].to_numpy()).long(),
        torch.from_numpy(to_unix_time(train["timestamp"])),
    )


def timed(run, repeats: int) -> tuple[float, object]:
    """Median seconds of ``run()`` over the repeats and its last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, help="a prepared task's public folder")
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--threads", default="1,2", help="torch thread counts to time")
    args = parser.parse_args()
    import torch
    import torch_geometric.typing

    ts = load_sampler()
    scratch = None if args.data else Path(tempfile.mkdtemp(prefix="rlab-bench-sampler-"))
    public = args.data or prepared_folder(scratch)
    start = time.perf_counter()
    data = load_graph(public)
    graph_s = time.perf_counter() - start
    start = time.perf_counter()
    graph = ts.TemporalGraph.from_hetero_data(data)
    csc_s = time.perf_counter() - start
    nodes, seed_time = seeds(public)
    order = torch.randperm(len(nodes), generator=torch.Generator().manual_seed(0))
    batches = order.split(args.batch_size)[: args.batches]
    count = sum(len(b) for b in batches)
    print(
        f"rel-flights/plane-delay: {len(nodes)} training seeds; graph "
        f"{ {t: int(data[t].num_nodes) for t in data.node_types} }, "
        f"{sum(int(data[e].num_edges) for e in data.edge_types)} edges"
    )
    print(
        f"make_pkey_fkey_graph {graph_s:.1f} s, TemporalGraph.from_hetero_data {csc_s:.2f} s; "
        f"OMP_WAIT_POLICY {os.environ['OMP_WAIT_POLICY']}, pyg-lib {torch_geometric.typing.WITH_PYG_LIB}; "
        f"{count} seeds in batches of {args.batch_size}, median of {args.repeats} repeats"
    )
    generator = torch.Generator().manual_seed(0)

    def run_sample(fanout, with_time=True):
        sizes = []
        for index in batches:
            sub = ts.sample(
                graph,
                "planes",
                nodes[index],
                seed_time[index] if with_time else None,
                fanout,
                generator=generator,
            )
            sizes.append(sum(len(v) for v in sub.node.values()))
        return sizes

    def run_loader(fanout):
        for index in batches:
            sub = ts.sample(
                graph, "planes", nodes[index], seed_time[index], fanout, generator=generator
            )
            ts.to_batch(data, sub, "planes", seed_time[index], input_id=index)

    for threads in [int(n) for n in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for label, fanout in FANOUTS.items():
            seconds, sizes = timed(lambda f=fanout: run_sample(f), args.repeats)
            loader_s, _ = timed(lambda f=fanout: run_loader(f), args.repeats)
            print(
                f"{threads} thread(s), fan-out {label}: sample {count / seconds:,.0f} seeds/s "
                f"({1000 * seconds / len(batches):.1f} ms per batch), sample + to_batch "
                f"{count / loader_s:,.0f} seeds/s; {sum(sizes) / count:.1f} sampled nodes per seed"
            )
    # non-temporal comparison: NeighborLoader runs without pyg-lib only without time
    from torch_geometric.loader import NeighborLoader

    for fanout in FANOUTS.values():
        seconds, sizes = timed(lambda f=fanout: run_sample(f, with_time=False), args.repeats)
        line = (
            f"no time, fan-out {fanout}: rlab sample (disjoint) {count / seconds:,.0f} seeds/s, "
            f"{sum(sizes) / count:.1f} nodes per seed"
        )
        try:
            loader = NeighborLoader(
                data,
                num_neighbors=fanout,
                input_nodes=("planes", nodes[torch.cat(list(batches))]),
                batch_size=args.batch_size,
            )

            def run_pyg(loader=loader):
                return [sum(int(v.numel()) for v in b.n_id_dict.values()) for b in loader]

            pyg_s, pyg_sizes = timed(run_pyg, args.repeats)
            line += (
                f"; torch_geometric NeighborLoader (shared, with features) {count / pyg_s:,.0f} "
                f"seeds/s, {sum(pyg_sizes) / count:.1f} nodes per seed"
            )
        except Exception as error:  # report why the comparison is missing, not crash
            line += f"; torch_geometric NeighborLoader failed: {type(error).__name__}: {error}"
        print(line)
    if scratch is not None:
        from rlab_core.api import remove_tree

        remove_tree(scratch)  # the prepared cache is read-only by design
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
