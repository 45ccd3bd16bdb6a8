"""Does the knowledge base help a sibling task? The playbook agent with and without it.

Usage: ``uv run python bench/knowledge_transfer.py [--pairs FIRST>SIBLING,...] [--seeds 0,1]
[--iterations 10] [--out f.json]``.

For each pair and run seed, in a throw-away workspace:

1. the playbook agent runs ``FIRST`` with an empty knowledge base of its own, which the run
   writes its lessons into;
2. it runs ``SIBLING`` twice with the same budgets (``--iterations``, all of them made:
   ``min_iterations`` too): once with knowledge switched off
   (``knowledge.enabled=false``), once with a copy of the first run's base;
3. for both sibling runs: the best validation score after each iteration, the iteration and
   the wall-clock at which each run first reaches the no-knowledge run's best validation
   score (the target), and the test score of the node ``rlab final`` chooses, with its
   interval over the task's own resampling units.

Default pairs: rel-flights plane-delay -> plane-arr-delay (the SQL-aggregate LightGBM seed
only, so both arms start from the same program and the GNN seed's minutes are not spent) and
mle diabetes-progression -> nyc-flights-air-time (both regressions, the tabular seed).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rlab_core.config import KnowledgeSettings, RunConfig
from rlab_core.final import finalize
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import NodeKind
from rlab_core.runner import start_run

PAIRS = (
    "relbench:rel-flights/plane-delay>relbench:rel-flights/plane-arr-delay",
    "mle:diabetes-progression>mle:nyc-flights-air-time",
)


def seed_program(task: str) -> Path | None:
    """The one seed both arms start from on rel-flights (the SQL-aggregate LightGBM)."""
    if not task.startswith("relbench:"):
        return None
    import rlab_relbench

    return Path(rlab_relbench.__file__).parent / "seeds" / "entity_sql_lgbm"


def one_run(
    host: PluginHost,
    task: str,
    root: Path,
    base: Path,
    *,
    enabled: bool,
    iterations: int,
    seed: int,
) -> dict[str, Any]:
    """One playbook run of ``task`` reading (when ``enabled``) and writing ``base``."""
    os.environ["RLAB_KNOWLEDGE"] = str(base)
    config = RunConfig(
        task=task,
        agent="playbook",
        iterations=iterations,
        # every run makes all its iterations: the first one tries as many moves as it can
        # teach, and both sibling runs are compared over the same number of iterations
        min_iterations=iterations,
        seed=seed,
        out=root / "runs",
        seed_candidate=seed_program(task),
        knowledge=KnowledgeSettings(enabled=enabled),
    )
    started = time.time()
    outcome = start_run(host, config)
    wall = time.time() - started
    tree = replay(outcome.run.journal_path).tree
    report = finalize(host, outcome.run)
    higher = report.get("higher_is_better", True)
    sign = 1.0 if higher else -1.0
    # best validation so far after each iteration (seeds count as iteration 0)
    curve: list[dict[str, Any]] = []
    best = None
    for node in sorted(tree.evaluated(), key=lambda n: n.finished_at):
        value = node.score.primary  # type: ignore[union-attr]
        if best is None or sign * value > sign * best:
            best = value
        curve.append(
            {
                "node": node.id,
                "iteration": node.iteration if node.kind != NodeKind.SEED else 0,
                "at_s": round(node.finished_at - started, 1),
                "best_val": best,
                "move": node.move_id,
            }
        )
    return {
        "run": outcome.run.root.name,
        "stop": outcome.stop_reason,
        "wall_s": round(wall, 1),
        "sign": sign,
        "curve": curve,
        "best_val": best,
        "chosen": report.get("node"),
        "test": report.get("test_primary"),
        "test_interval": report.get("test_interval"),
        "test_se": report.get("test_standard_error"),
        "moves_in_order": [c["move"] for c in curve if c["move"]],
    }


def reach(run: dict[str, Any], target: float) -> tuple[int | None, float | None]:
    """The iteration and seconds at which ``run`` first reaches ``target`` (None: never)."""
    for point in run["curve"]:
        if run["sign"] * point["best_val"] >= run["sign"] * target - 1e-12:
            return point["iteration"], point["at_s"]
    return None, None


def study(host: PluginHost, pair: str, seed: int, iterations: int, root: Path) -> dict:
    first, sibling = pair.split(">")
    home = root / f"{seed}-{first.replace(':', '_').replace('/', '_')}"
    learned = home / "knowledge-first.sqlite"
    first_run = one_run(
        host, first, home / "first", learned, enabled=True, iterations=iterations, seed=seed
    )
    without = one_run(
        host,
        sibling,
        home / "without",
        home / "knowledge-without.sqlite",
        enabled=False,
        iterations=iterations,
        seed=seed,
    )
    copy = home / "knowledge-with.sqlite"
    shutil.copyfile(learned, copy)
    with_kb = one_run(
        host, sibling, home / "with", copy, enabled=True, iterations=iterations, seed=seed
    )
    target = without["best_val"]
    out = {"pair": pair, "seed": seed, "target_val": target, "first": first_run}
    for name, run in (("without", without), ("with", with_kb)):
        iteration, seconds = reach(run, target)
        out[name] = {**run, "reach_iteration": iteration, "reach_s": seconds}
    return out


def _fmt(value: Any, digits: int = 4) -> str:
    return (
        "—" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    )


def _interval(run: dict) -> str:
    lo_hi = run.get("test_interval")
    if not lo_hi:
        return _fmt(run["test"])
    return f"{_fmt(run['test'])} [{_fmt(lo_hi[0])}, {_fmt(lo_hi[1])}]"


def _rows(result: dict) -> list[str]:
    rows = []
    for name in ("without", "with"):
        run = result[name]
        rows.append(
            f"| {result['pair'].split('>')[1]} | {result['seed']} | {name} | "
            f"{_fmt(run['best_val'])} | {_fmt(run['reach_iteration'])} | {_fmt(run['reach_s'], 1)} | "
            f"{_interval(run)} | {run['wall_s']} | {', '.join(run['moves_in_order'][:4])} |"
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default=",".join(PAIRS))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    logging.getLogger("rlab_core").setLevel(logging.ERROR)
    root = Path(tempfile.mkdtemp(prefix="rlab-bench-knowledge-"))
    previous = {k: os.environ.get(k) for k in ("RLAB_CACHE_HOME", "RLAB_KNOWLEDGE")}
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    host = PluginHost()
    results = []
    print(
        "| sibling task | run seed | knowledge | best val | iteration reaching the "
        "no-knowledge best | seconds to reach | test [interval] | wall s | first moves |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for pair in args.pairs.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                result = study(host, pair, seed, args.iterations, root)
                results.append(result)
                print("\n".join(_rows(result)), flush=True)
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        from rlab_core.api import remove_tree

        remove_tree(root)  # prepared caches are read-only by design
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
