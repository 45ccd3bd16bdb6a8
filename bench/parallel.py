"""Candidates per hour with 1 and 2 workers on CPU-bound candidates (target: >= 1.7x).

Runs a real research loop (best-first, local sandbox, the ``noop-bump`` agent, real edits,
real journal) whose candidate burns a fixed amount of CPU in one thread, once with
``--workers 1`` and once with ``--workers 2``, and reads throughput from the journal: agent
nodes divided by the time from the first agent node's start to the last one's finish.
A 2-core machine shared with other work will show less than 2x; the figure is the ratio.

Usage: ``uv run python bench/parallel.py [--iterations 12] [--work 30000000] [--isolation none]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import noop_plugin
from _common import bench_workspace, run_noop

from rlab_core.journal import read_events

SEED = '''"""CPU-bound candidate: a fixed pure-Python loop, then write VALUE as the prediction."""
import os

VALUE = 0

total = 0
for i in range({work}):
    total += i % 7

with open(os.path.join(os.environ["RLAB_OUTPUT_DIR"], "{file}"), "w") as out:
    out.write(str(VALUE))
'''


def throughput(root: Path, workers: int, iterations: int, work: int, isolation: str) -> dict:
    seed = root / f"seed-{workers}"
    seed.mkdir(parents=True)
    (seed / "main.py").write_text(SEED.format(work=work, file=noop_plugin.PREDICTION_FILE))
    outcome = run_noop(
        root,
        iterations=iterations,
        isolation=isolation,
        seed_candidate=seed,
        workers=workers,
        threads=1,
        out=root / f"runs-{workers}",
    )
    events, _ = read_events(outcome.run.journal_path)
    seed_ids = {
        e["node"]["id"]
        for e in events
        if e["type"] == "node_finished" and e["node"]["kind"] == "seed"
    }
    starts = [e["t"] for e in events if e["type"] == "node_started" and e["id"] not in seed_ids]
    ends = [
        e["t"] for e in events if e["type"] == "node_finished" and e["node"]["id"] not in seed_ids
    ]
    walls = [
        e["node"]["execution"]["wall_s"]
        for e in events
        if e["type"] == "node_finished" and e["node"]["id"] not in seed_ids
    ]
    span = max(ends) - min(starts)
    return {
        "workers": workers,
        "nodes": len(ends),
        "span_s": span,
        "per_hour": len(ends) / span * 3600,
        "candidate_median_s": statistics.median(walls),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--work", type=int, default=30_000_000, help="loop steps per candidate")
    parser.add_argument("--isolation", default="none", choices=["none", "bubblewrap", "auto"])
    args = parser.parse_args(argv)
    with bench_workspace("parallel") as root:
        rows = [
            throughput(root, workers, args.iterations, args.work, args.isolation)
            for workers in (1, 2)
        ]
    print(f"{'workers':>8} {'nodes':>6} {'span s':>8} {'cand. median s':>15} {'per hour':>9}")
    for row in rows:
        print(
            f"{row['workers']:>8} {row['nodes']:>6} {row['span_s']:>8.1f} "
            f"{row['candidate_median_s']:>15.2f} {row['per_hour']:>9.0f}"
        )
    ratio = rows[1]["per_hour"] / rows[0]["per_hour"]
    print(f"speed-up with 2 workers: {ratio:.2f}x (target >= 1.7x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
