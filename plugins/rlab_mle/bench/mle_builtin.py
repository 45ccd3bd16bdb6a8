"""Built-in competitions: the seed, then a 10-iteration playbook run, graded as mle-bench does.

    uv run python plugins/rlab_mle/bench/mle_builtin.py [--only ID,...] [--iterations 10]
                                                     [--threads 1] [--out figures.json]

Runs in a throw-away ``RLAB_CACHE_HOME``. For each built-in competition: the seed run once
as the loop runs it (validation score, then its test grade and medal: this is a benchmark
of the seed, no search reads it), then a playbook run of ``--iterations`` iterations with
the ``local`` sandbox whose validation-chosen node is graded once by ``finalize`` (rlab
final), and the wall-clock per iteration. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def seed_figures(task, threads: int) -> dict:
    """Val score and test grade of the seed, run as the loop runs candidates."""
    from rlab_core.api import LocalSandbox, LocalSandboxConfig
    from rlab_core.testing import run_candidate

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        execution, out = run_candidate(
            task, task.seed_candidates()[0].path, LocalSandbox(LocalSandboxConfig()), Path(tmp),
            threads=threads,
        )  # fmt: skip
        wall = time.perf_counter() - start
        if not execution.ok:
            return {"error": execution.log_tail[-300:]}
        val = task.score(out, "val").primary
        test = task.score(out, "test")
        return {
            "val": val,
            "test": test.primary,
            "medal": medal(test.details.get("grading_report")),
            "wall_s": round(wall, 1),
        }


def medal(report: dict | None) -> str:
    """gold / silver / bronze / above median / below median."""
    if not report:
        return "-"
    for kind in ("gold", "silver", "bronze"):
        if report[f"{kind}_medal"]:
            return kind
    return "above median" if report["above_median"] else "below median"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rlab-mle-bench-"))
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    import rlab_agents.plugin as agents
    import rlab_mle.plugin as plugin
    from rlab_mle.benchmark import MleBenchmark
    from rlab_mle.options import MleOptions

    from rlab_core.api import remove_tree
    from rlab_core.config import RunConfig
    from rlab_core.final import finalize
    from rlab_core.plugins import PluginHost
    from rlab_core.runner import start_run

    bench = MleBenchmark(MleOptions())
    wanted = [w for w in args.only.split(",") if w]
    figures = {}
    for cid in bench.registry().builtin_ids():
        if wanted and cid not in wanted:
            continue
        task = bench.prepare(cid, root / "cache" / "mle")
        row: dict = {"metric": task.primary_metric, "rows": task.facts["rows"]}
        row["seed"] = seed_figures(task, args.threads)
        host = PluginHost(use_entry_points=False, strict=True)
        host.register(plugin, name="mle")
        host.register(agents, name="agents")
        config = RunConfig(
            task=f"mle:{cid}",
            agent="playbook",
            out=root / "runs",
            iterations=args.iterations,
            min_iterations=args.iterations,
            threads=args.threads,
        )
        start = time.perf_counter()
        outcome = start_run(host, config)
        wall = time.perf_counter() - start
        report = finalize(host, outcome.run)
        grade = (report["test_details"] or {}).get("grading_report")
        row["run"] = {
            "stop": outcome.stop_reason,
            "nodes": len(list(outcome.run.nodes_dir.iterdir())),
            "best_node": report["node"],
            "best_hypothesis": report["hypothesis"],
            "best_val": report["val_primary"],
            "best_test": report["test_primary"],
            "medal": medal(grade),
            "thresholds": None
            if not grade
            else [grade[f"{k}_threshold"] for k in ("gold", "silver", "bronze", "median")],
            "wall_s": round(wall, 1),
            # the seed is node 0; a run the agent exhausts early has fewer iterations
            "per_iteration_s": round(
                wall / max(1, len(list(outcome.run.nodes_dir.iterdir())) - 1), 1
            ),
            "audit_clean": report["audit"]["clean"],
        }
        figures[cid] = row
        print(f"{cid}: {json.dumps(row)}", flush=True)
    print()
    print(
        "| competition | metric | seed val | seed test (medal) | best node | best val | "
        "best test (medal) | s / iteration |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for cid, row in figures.items():
        seed, run = row["seed"], row["run"]
        print(
            f"| {cid} | {row['metric']} | {seed.get('val', 'error')} | "
            f"{seed.get('test')} ({seed.get('medal')}) | {run['best_node']} | {run['best_val']} | "
            f"{run['best_test']} ({run['medal']}) | {run['per_iteration_s']} |"
        )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    remove_tree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
