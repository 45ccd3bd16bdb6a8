"""KuaiRand figures: valid and test GAUC / nDCG@5 / primary of the seeds and of a search's winner.

    uv run python plugins/rlab_kuairand/bench/kuairand_table.py            # SYNTHETIC sample
    uv run python plugins/rlab_kuairand/bench/kuairand_table.py --task pure --data-dir /data/KuaiRand-Pure

One research run does it all, as ``rlab run`` would (offline playbook agent, best-first,
local sandbox, ``--threads`` per candidate): its first nodes are the three seeds
(popularity, fm, history_lgbm), then ``--iterations`` playbook moves (``min_iterations`` is
the same number, so convergence cannot cut the run short), then ``rlab final``'s
``finalize`` scores the test split once for the node validation chose. The seeds' test rows
are scored from the run's private folder for this table only (research into the
validation-test gap; nothing reads them to choose). Wall-clock: each candidate's process
(``execution.wall_s``), the cold ``prepare`` and the whole run. Everything happens in a
throw-away ``RLAB_CACHE_HOME``, removed at the end; ``--out FILE`` keeps the figures as JSON.
Prints a Markdown table. The agent is rlab-agents' ``playbook``; ``--agent ranked-playbook``
takes the testing kit's (moves strictly in rank order), so no other plugin is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _metrics(metrics: dict[str, float] | None) -> dict[str, float] | None:
    if metrics is None:
        return None
    return {k: round(float(metrics[k]), 4) for k in ("GAUC", "nDCG@5", "primary")}


def _cell(metrics: dict[str, float] | None) -> str:
    if metrics is None:
        return "—"
    return f"{metrics['GAUC']:.4f} / {metrics['nDCG@5']:.4f} / {metrics['primary']:.4f}"


def figures(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Prepare the task, run the search under ``root``, finalize; return the table's figures.

    The prepared data goes to the rlab cache (``RLAB_CACHE_HOME``; ``main`` points it into
    ``root``).
    """
    from rlab_kuairand import plugin
    from rlab_kuairand.benchmark import KuaiRandBenchmark
    from rlab_kuairand.options import KuaiRandOptions

    from rlab_core.api import cache_home
    from rlab_core.config import RunConfig
    from rlab_core.final import finalize
    from rlab_core.journal import replay
    from rlab_core.plugins import PluginHost
    from rlab_core.runner import start_run

    options: dict[str, Any] = {"download": not args.no_download}
    if args.data_dir is not None:
        options["data_dir"] = str(args.data_dir)
    if args.sample_users:
        options["sample_users"] = args.sample_users
    if args.sample_videos:
        options["sample_videos"] = args.sample_videos
    start = time.perf_counter()
    # where the run will look for it too
    task = KuaiRandBenchmark(KuaiRandOptions(**options)).prepare(
        args.task, cache_home() / "kuairand"
    )
    prepare_s = time.perf_counter() - start

    host = PluginHost(use_entry_points=False, strict=True)
    host.register(plugin, name="kuairand")
    if args.agent == "ranked-playbook":
        from rlab_core.testing import playbook as agents
    else:
        import rlab_agents.plugin as agents
    host.register(agents, name="agents")
    config = RunConfig(
        task=f"kuairand:{args.task}",
        agent=args.agent,
        iterations=args.iterations,
        min_iterations=args.iterations,
        threads=args.threads,
        out=root / "runs",
        benchmark_options=options,
    )
    start = time.perf_counter()
    outcome = start_run(host, config)
    run_s = time.perf_counter() - start
    report = finalize(host, outcome.run)
    tree = replay(outcome.run.journal_path).tree

    rows = []
    for seed in sorted(outcome.seeds, key=lambda n: n.score.primary if n.score else -1.0):
        name = seed.move_id or seed.id  # the loop records the seed name as its move
        test = None
        private = outcome.run.private_node_dir(seed.id)
        if seed.score is not None and (private / "test_predictions.npy").exists():
            test = _metrics(task.score(private, "test").metrics)
        rows.append(
            {
                "model": name,
                "node": seed.id,
                "valid": _metrics(seed.score.metrics if seed.score else None),
                "test": test,
                "wall_s": round(seed.execution.wall_s, 1) if seed.execution else None,
            }
        )
    best = tree.nodes[report["node"]]
    moves = [n.move_id for n in tree.lineage(best.id) if n.move_id]
    rows.append(
        {
            "model": f"best node {best.id} ({' + '.join(moves) or 'a seed'})",
            "node": best.id,
            "valid": _metrics(report["val_metrics"]),
            "test": _metrics(report["test_metrics"]),
            "wall_s": round(best.execution.wall_s, 1) if best.execution else None,
        }
    )
    agent_nodes = [n for n in tree.nodes.values() if n.iteration > 0]
    searched = [  # the search path, validation only (no test number of a non-chosen node)
        {
            "node": n.id,
            "parent": n.parent_id,
            "move": n.move_id,
            "status": str(n.status),
            "valid_primary": round(n.score.primary, 4) if n.score else None,
            "wall_s": round(n.execution.wall_s, 1) if n.execution else None,
        }
        for n in tree.nodes.values()
    ]
    return {
        "task": f"kuairand:{args.task}",
        "synthetic": task.synthetic,
        "rows": task.facts["counts"],
        "users": task.facts["users"],
        "prepare_s": round(prepare_s, 1),
        "rows_table": rows,
        "nodes": searched,
        "run": {
            "iterations": len(agent_nodes),
            "stop": outcome.stop_reason,
            "wall_s": round(run_s, 1),
            "per_candidate_s": round(run_s / max(1, len(agent_nodes) + len(outcome.seeds)), 1),
            "threads": args.threads,
            "audit_clean": report["audit"]["clean"],
            "submission": (outcome.run.best_dir / "submission.csv").is_file(),
        },
    }


def table(result: dict[str, Any]) -> str:
    """The figures as a Markdown table with a header line and a footer line."""
    lines = []
    if result["synthetic"]:
        lines.append(
            "SYNTHETIC DATA (kuairand:sample): not comparable with published KuaiRand numbers."
        )
    counts = result["rows"]
    lines.append(
        f"{result['task']}: train / valid / test {counts['train']:,} / {counts['val']:,} / "
        f"{counts['test']:,} rows; prepare (cold) {result['prepare_s']} s"
    )
    lines.append("")
    lines.append(
        "| model | valid GAUC / nDCG@5 / primary | test GAUC / nDCG@5 / primary | wall s |"
    )
    lines.append("|---|---|---|---|")
    for row in result["rows_table"]:
        lines.append(
            f"| {row['model']} | {_cell(row['valid'])} | {_cell(row['test'])} | {row['wall_s']} |"
        )
    run = result["run"]
    lines.append("")
    lines.append(
        f"playbook run: {run['iterations']} iterations after the seeds, {run['wall_s']} s "
        f"({run['per_candidate_s']} s per candidate, {run['threads']} threads), stop: "
        f"{run['stop']}; audit clean: {run['audit_clean']}; submission.csv: {run['submission']}"
    )
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    """The command line: task, data folder, search length, candidate threads, sample size."""
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parse.add_argument("--task", default="sample", choices=["sample", "pure", "1k"])
    parse.add_argument(
        "--data-dir", type=Path, help="folder with the real KuaiRand files (searched recursively)"
    )
    parse.add_argument("--no-download", action="store_true", help="never try Zenodo")
    parse.add_argument("--iterations", type=int, default=10, help="playbook iterations")
    parse.add_argument(
        "--agent",
        default="playbook",
        choices=["playbook", "ranked-playbook"],
        help="playbook: rlab-agents' agent; ranked-playbook: the testing kit's",
    )
    parse.add_argument("--threads", type=int, default=2, help="RLAB_THREADS per candidate")
    parse.add_argument("--sample-users", type=int, help="users of the synthetic sample")
    parse.add_argument("--sample-videos", type=int, help="videos of the synthetic sample")
    parse.add_argument("--out", type=Path, help="write the figures as JSON here")
    return parse


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from rlab_core.api import RlabUserError

    root = Path(tempfile.mkdtemp(prefix="rlab-kuairand-bench-"))
    previous = os.environ.get("RLAB_CACHE_HOME")
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    try:
        result = figures(args, root)
    except RlabUserError as exc:
        print(exc, file=sys.stderr)
        return 2
    finally:
        if previous is None:
            os.environ.pop("RLAB_CACHE_HOME", None)
        else:
            os.environ["RLAB_CACHE_HOME"] = previous
        shutil.rmtree(root, ignore_errors=True)
    print(table(result), flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
