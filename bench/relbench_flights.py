"""rel-flights figures: seeds, the entity-table-only baseline, a 10-iteration playbook run.

Usage: ``uv run python bench/relbench_flights.py [--tasks plane-delay,...] [--iterations 10]``.
Runs in a throw-away ``RLAB_CACHE_HOME``. For each task prints: cache build time cold and
warm, validation and test metric of every seed (the entity-table-only baseline included),
the best node of a playbook run (validation-chosen, test scored once by ``finalize``) and
the wall-clock per iteration. Writes the figures as JSON to ``--out`` when given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def seed_scores(task) -> dict:
    """Run every seed once as the loop would; return its val and test primary metric."""
    out = {}
    for seed in task.seed_candidates():
        folder = Path(tempfile.mkdtemp())
        env = {
            **os.environ,
            "RLAB_DATA_DIR": str(task.data_dir),
            "RLAB_OUTPUT_DIR": str(folder),
            "RLAB_THREADS": "2",
        }
        start = time.time()
        done = subprocess.run(
            [sys.executable, "main.py"],
            cwd=seed.path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            out[seed.name] = {"error": done.stderr[-300:]}
            continue
        val = task.score(folder, "val").primary
        test = task.evaluate(np.load(folder / "test_predictions.npy"), "test")[task.primary_metric]
        out[seed.name] = {
            "val": round(val, 4),
            "test": round(float(test), 4),
            "wall_s": round(time.time() - start, 1),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="plane-delay,plane-arr-delay,plane-dest")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rlab-relbench-bench-"))
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    import rlab_agents.plugin as agents
    from rlab_relbench import plugin
    from rlab_relbench.benchmark import RelBenchBenchmark
    from rlab_relbench.options import RelBenchOptions

    from rlab_core.config import RunConfig
    from rlab_core.final import finalize
    from rlab_core.plugins import PluginHost
    from rlab_core.runner import start_run

    figures = {}
    for name in args.tasks.split(","):
        bench = RelBenchBenchmark(RelBenchOptions())
        start = time.time()
        task = bench.prepare(f"rel-flights/{name}", root / "cache" / "relbench")
        cold = time.time() - start
        start = time.time()
        task = bench.prepare(f"rel-flights/{name}", root / "cache" / "relbench")
        warm = time.time() - start
        row = {
            "cache_cold_s": round(cold, 1),
            "cache_warm_s": round(warm, 2),
            "rows": task.facts["counts"],
            "seeds": seed_scores(task),
        }
        host = PluginHost(use_entry_points=False, strict=True)
        host.register(plugin, name="relbench")
        host.register(agents, name="agents")
        config = RunConfig(
            task=f"relbench:rel-flights/{name}",
            agent="playbook",
            out=root / "runs",
            iterations=args.iterations,
            min_iterations=args.iterations,
        )
        start = time.time()
        outcome = start_run(host, config)
        wall = time.time() - start
        report = finalize(host, outcome.run)
        row["run"] = {
            "stop": outcome.stop_reason,
            "best_node": report["node"],
            "best_hypothesis": report["hypothesis"],
            "best_val": round(report["val_primary"], 4),
            "best_test": None
            if report["test_primary"] is None
            else round(report["test_primary"], 4),
            "wall_s": round(wall, 1),
            "per_iteration_s": round(wall / max(1, args.iterations), 1),
            "audit_clean": report["audit"]["clean"],
        }
        figures[name] = row
        print(f"{name} ({task.primary_metric}): {json.dumps(row)}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    from rlab_relbench.build import force_rmtree

    force_rmtree(root)  # the cache folders are read-only by design
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
