"""rel-flights figures: seeds, the entity-table-only baseline, a 10-iteration playbook run.

Usage: ``uv run python bench/relbench_flights.py [--tasks plane-delay,...] [--iterations 10]``.
Runs in a throw-away ``RLAB_CACHE_HOME``. For each task prints: cache build time cold and
warm, validation and test metric of every seed (the entity-table-only baseline included),
the best node of a playbook run (validation-chosen, test scored once by ``finalize``) and
the wall-clock per iteration. Writes the figures as JSON to ``--out`` when given.

For research into the validation-test gap (never fed back into the run) it also scores
the test predictions of every node of the run, and bootstraps standard errors by
resampling entities (a plane's rows across the weekly seed times are correlated, so rows
are not independent): of the chosen node's val and test metric, and of its paired
difference from the entity-table-only baseline (or the first seed) on val and on test.
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


def seed_scores(task, keep: dict) -> dict:
    """Run every seed once as the loop would; return its val and test primary metric.

    ``keep`` receives each seed's output folder (for the bootstrap)."""
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
        keep[seed.name] = folder
        val = task.score(folder, "val").primary
        test = task.evaluate(np.load(folder / "test_predictions.npy"), "test")[task.primary_metric]
        out[seed.name] = {
            "val": round(val, 4),
            "test": round(float(test), 4),
            "wall_s": round(time.time() - start, 1),
        }
    return out


def load_predictions(folder: Path) -> dict:
    return {
        s: np.load(folder / f"{s}_predictions.npy", allow_pickle=False) for s in ("val", "test")
    }


def node_predictions(run, node_id: str) -> dict:
    """A node's val predictions (its outputs) and test predictions (the private folder)."""
    outputs, private = run.node_dir(node_id) / "outputs", run.private_node_dir(node_id)
    test = private if (private / "test_predictions.npy").exists() else outputs
    return {
        "val": np.load(outputs / "val_predictions.npy", allow_pickle=False),
        "test": np.load(test / "test_predictions.npy", allow_pickle=False),
    }


def node_scores(task, run) -> list[dict]:
    """Val and test primary metric of every evaluated node (research only)."""
    from rlab_core.journal import replay

    rows = []
    for node in replay(run.journal_path).tree.evaluated():
        test = task.evaluate(node_predictions(run, node.id)["test"], "test")
        rows.append(
            {
                "node": node.id,
                "parent": node.parent_id,
                "move": node.move_id or node.hypothesis[:40],
                "val": round(node.score.primary, 4),
                "test": round(float(test[task.primary_metric]), 4),
            }
        )
    return rows


def bootstrap(task, arms: dict[str, dict], pairs: list[tuple[str, str]], draws: int = 400) -> dict:
    """Entity-resampled standard errors of every arm and of each pair's difference.

    One set of resampled entities per draw serves every arm, so a pair's difference is
    paired. Returns ``{split: {"arms": {name: {metric, se}}, "pairs": {"a - b": {...}}}}``."""
    import pandas as pd

    rng = np.random.default_rng(0)
    key = task.spec.get("src_entity_col") or task.spec["entity_col"]
    metric = task.primary_metric
    out = {}
    for split in ("val", "test"):
        labels = pd.read_parquet(task.private / f"{split}_labels.parquet")
        groups = [np.asarray(v) for v in labels.groupby(key).indices.values()]
        point = {name: task.evaluate(p[split], split)[metric] for name, p in arms.items()}
        draws_by_arm: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(draws):
            rows = np.concatenate([groups[i] for i in rng.integers(0, len(groups), len(groups))])
            for name, p in arms.items():
                draws_by_arm[name].append(task.evaluate(p[split][rows], split, rows)[metric])
        table = {"arms": {}, "pairs": {}, "entities": len(groups)}
        for name in arms:
            table["arms"][name] = {
                "metric": round(float(point[name]), 4),
                "se": round(float(np.std(draws_by_arm[name], ddof=1)), 4),
            }
        for a, b in pairs:
            if a not in arms or b not in arms:
                continue
            diff = np.asarray(draws_by_arm[a]) - np.asarray(draws_by_arm[b])
            lo, hi = np.quantile(diff, [0.025, 0.975])
            se = float(np.std(diff, ddof=1))
            delta = float(point[a] - point[b])
            table["pairs"][f"{a} - {b}"] = {
                "diff": round(delta, 4),
                "se": round(se, 4),
                "ci95": [round(float(lo), 4), round(float(hi), 4)],
                "z": round(delta / se, 2) if se else None,
            }
        out[split] = table
    return out


def label_levels(task) -> dict:
    """Each split's label level: positive rate, or mean and median (seasonal shift in view)."""
    import pandas as pd

    if task.kind == "recommendation":
        return {}
    col, out = task.spec["target_col"], {}
    for split in ("train", "val", "test"):
        folder = task.data_dir if split == "train" else task.private
        y = pd.read_parquet(folder / f"{split}{'' if split == 'train' else '_labels'}.parquet")[col]
        out[split] = (
            round(float(y.mean()), 4)
            if task.kind == "binary_classification"
            else {"mean": round(float(y.mean()), 2), "median": round(float(y.median()), 2)}
        )
    return out


def level_split(task, predictions: dict) -> dict:
    """Regression: the split's median residual (a level no feature foresees) and NMAE without it."""
    import pandas as pd

    col, std, out = task.spec["target_col"], task.facts["nmae_std"], {}
    for split in ("val", "test"):
        y = pd.read_parquet(task.private / f"{split}_labels.parquet")[col].to_numpy(float)
        residual = y - predictions[split]
        shift = float(np.median(residual))
        out[split] = {
            "median_residual": round(shift, 2),
            "nmae_level_removed": round(float(np.mean(np.abs(residual - shift)) / std), 4),
        }
    return out


def render_table(name: str, metric: str, row: dict) -> str:
    """The task's rows as markdown: each arm's val and test with its SE, wall per candidate."""
    boot = row["bootstrap"]
    lines = [
        f"### rel-flights/{name} ({metric})",
        "",
        "| arm | val ± SE | test ± SE | wall per candidate (s) |",
        "|---|---|---|---|",
    ]
    for arm, val in boot["val"]["arms"].items():
        test = boot["test"]["arms"][arm]
        wall = row["seeds"].get(arm, {}).get("wall_s", row["run"]["per_iteration_s"])
        lines.append(
            f"| {arm} | {val['metric']:.4f} ± {val['se']:.4f} | "
            f"{test['metric']:.4f} ± {test['se']:.4f} | {wall} |"
        )
    lines += ["", "| pair (test) | difference ± SE | z |", "|---|---|---|"]
    for pair, figures in boot["test"]["pairs"].items():
        lines.append(f"| {pair} | {figures['diff']:+.4f} ± {figures['se']:.4f} | {figures['z']} |")
    return "\n".join(lines)


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
            "label_level": label_levels(task),
        }
        # a knowledge base per task: the figures are each task's own, not a transfer study
        os.environ["RLAB_KNOWLEDGE"] = str(root / f"knowledge-{name}.sqlite")
        kept: dict = {}
        row["seeds"] = seed_scores(task, kept)
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
        row["nodes"] = node_scores(task, outcome.run)
        reference_name = (
            "entity-table-only-lightgbm"
            if "entity-table-only-lightgbm" in kept
            else next(iter(kept))
        )
        chosen = node_predictions(outcome.run, report["node"])
        reference = load_predictions(kept[reference_name])
        arms = {name: load_predictions(folder) for name, folder in kept.items()}
        arms["best node"] = chosen
        seeds_run = [name for name in kept if name != "gnn"]
        pairs = [("gnn", name) for name in seeds_run if "gnn" in kept]
        pairs += [("best node", name) for name in kept]
        row["bootstrap"] = {"reference": reference_name, **bootstrap(task, arms, pairs)}
        print(render_table(name, task.primary_metric, row), flush=True)
        if task.kind == "regression":
            row["level"] = {
                "chosen": level_split(task, chosen),
                "reference": level_split(task, reference),
                "first_seed": level_split(task, load_predictions(next(iter(kept.values())))),
            }
        figures[name] = row
        print(f"{name} ({task.primary_metric}): {json.dumps(row)}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    from rlab_core.api import remove_tree

    remove_tree(root)  # the cache folders are read-only by design
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
