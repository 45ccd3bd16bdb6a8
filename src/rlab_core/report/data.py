"""The dashboard's data: everything the journal, ``run.json`` and the node folders say.

Validation evidence only, plus the chosen node's test metrics (with their interval) from
``final_report.json`` once ``rlab final`` has written it; nothing is read from the run's
``private/`` folder. Works on a run in progress: it shows what the journal holds so far.

Every score carries its bootstrap standard error and every gain its verdict, with the
texts the terminal prints (:mod:`rlab_core.report.numbers`) so both views say the same.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from rlab_core import __version__
from rlab_core.errors import RunFolderError
from rlab_core.journal import RunState, replay
from rlab_core.records import Node, Score
from rlab_core.report.node_data import in_flight_nodes, node_data, se_text
from rlab_core.report.numbers import (
    acceptance_line,
    final_gap_text,
    final_test_text,
    format_interval,
    format_se,
    level_text,
    mean_spread_text,
    seed_noise_text,
    seed_order,
    sig_decimals,
)
from rlab_core.report.status import OUTCOME_LABEL, best_after_each, classify, winner_path
from rlab_core.report.tree_layout import tree_rows
from rlab_core.report.winner import exported_paths, seed_to_best
from rlab_core.run_folder import RunFolder
from rlab_core.tree import Tree


def collect_report_data(run: RunFolder) -> dict[str, Any]:
    """The run as one JSON-ready mapping: header, nodes, budgets, facts, final metrics."""
    state = replay(run.journal_path)
    try:
        info = run.read_run_json()
    except RunFolderError:
        info = {}  # a run folder whose run.json is missing still has its journal
    tree = state.tree
    if "higher_is_better" in info:
        tree.higher_is_better = bool(info["higher_is_better"])
    outcomes = classify(tree)
    path = winner_path(tree)
    best_after = {node.id: best for node, best in best_after_each(tree)}
    best = tree.selected()
    accepted_best = tree.best()
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    nodes = [
        node_data(run, node, outcomes[node.id], state, best_after.get(node.id), node.id in path)
        for node in tree
    ]
    nodes += in_flight_nodes(run, state)
    seed = _best_seed(tree)
    metric = info.get("primary_metric") or state.run_info.get("primary_metric") or "score"
    data = {
        "generated_at": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "rlab_version": __version__,
        "run": {
            "id": run.run_id,
            "path": str(run.root),
            "task": info.get("task") or state.run_info.get("task"),
            "agent": info.get("agent"),
            "strategy": config.get("strategy"),
            "sandbox": config.get("sandbox"),
            "created": info.get("created"),
            "primary_metric": metric,
            "higher_is_better": tree.higher_is_better,
        },
        "status": {
            "stopped": state.stop_reason is not None,
            "stop_reason": state.stop_reason,
            "in_flight": state.in_flight,
            "events": state.events,
            "torn_tail": state.torn_tail,
        },
        "headline": _headline(tree, seed, best, info),
        "final": _final(run),
        "budget": _budget(tree, state, config),
        "isolation": info.get("isolation", {"level": state.run_info.get("isolation")}),
        "versions": info.get("versions", {}),
        "machine": info.get("machine", {}),
        "config": {
            key: config.get(key)
            for key in ("epsilon", "window", "min_iterations", "debug_tries", "seed", "target_val")
            if key in config
        },
        "candidates": _candidates(info, config),
        "winner_path": path,
        #: the node `rlab final` scores: the finalists' choice, else the last node accepted
        "best": best.id if best else None,
        "accepted_best": accepted_best.id if accepted_best else None,
        "acceptance": _acceptance(info, tree, state.seed_noise),
        "finalists": _finalists(state),
        "metrics": _metric_names(tree, metric),
        "outcome_labels": {str(k): v for k, v in OUTCOME_LABEL.items()},
        "nodes": nodes,
        #: the decision tree's rows: creation order, subtrees contiguous (tree_layout.py)
        "tree_rows": tree_rows(nodes),
        "seed_to_best": seed_to_best(run, tree, best),
        "exported": exported_paths(run),
    }
    return _finite(data)


def _candidates(info: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """How candidates ran: the wall-clock timeout and memory limit, and how many at once.

    ``run.json``'s ``limits`` (the limits in effect) where it records them, else the run's
    own options; ``None`` there means the task's default limit was in effect.
    """
    limits = info.get("limits") if isinstance(info.get("limits"), dict) else {}
    workers = config.get("workers")
    several = isinstance(workers, int) and workers > 1
    return {
        "timeout_s": limits.get("timeout_s") or config.get("timeout_s"),
        "memory_mb": limits.get("memory_mb") or config.get("memory_mb"),
        "workers": workers,
        #: how decisions see results, which matters only with several workers
        "parallel_order": config.get("parallel_order") if several else None,
    }


def _best_seed(tree: Tree) -> Node | None:
    best: Node | None = None
    best_score: Score | None = None
    for node in tree.seeds():
        score = node.score if node.evaluated else None
        if score is not None and (best_score is None or score.better_than(best_score)):
            best, best_score = node, score
    return best


def _gain(best: float, reference: float, higher_is_better: bool) -> dict[str, Any]:
    """Best minus reference, and how much better that is in percent of the reference."""
    delta = best - reference
    better = delta if higher_is_better else -delta
    relative = better / abs(reference) * 100 if reference else None
    return {"delta": delta, "relative_pct": relative, "better": better > 0}


def _headline(tree, seed: Node | None, best: Node | None, info: dict[str, Any]) -> dict[str, Any]:
    """Seed, best, their gain, and the benchmark's reference baselines when it names any."""
    higher = tree.higher_is_better
    headline: dict[str, Any] = {
        "seed": {"id": seed.id, "score": seed.score.primary} if seed and seed.score else None,
        "best": (
            {"id": best.id, "score": best.score.primary, "hypothesis": best.hypothesis}
            if best and best.score
            else None
        ),
        #: their standard errors as the views print them (None where unmeasured)
        "seed_se_text": se_text(seed) if seed else None,
        "best_se_text": se_text(best) if best else None,
        "gain": None,
        "baselines": [],
    }
    if seed and best and seed.score and best.score:
        headline["gain"] = _gain(best.score.primary, seed.score.primary, higher)
    baselines = info.get("task_facts", {}).get("baselines")
    if isinstance(baselines, dict):
        for name, score in baselines.items():
            if isinstance(score, int | float) and not isinstance(score, bool):
                gain = _gain(best.score.primary, score, higher) if best and best.score else None
                headline["baselines"].append({"name": str(name), "score": score, "gain": gain})
    return headline


def _final(run: RunFolder) -> dict[str, Any] | None:
    """The chosen node's test metrics, once `rlab final` wrote them; nothing else test-side."""
    try:
        report = json.loads(run.final_report.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    keys = (
        "node",
        "val_primary",
        "val_standard_error",
        "test_primary",
        "test_metrics",
        "test_error",
        "forced",
        "selection_rule",
        "test_standard_error",
        "test_interval",
        "test_interval_level",
        "test_resample_unit",
        "val_test_gap",
    )
    final = {key: report.get(key) for key in keys}
    final["scored_at"] = report.get("scored_at")
    final["audit_clean"] = (report.get("audit") or {}).get("clean")
    final["test_se_text"] = format_se(report.get("test_standard_error"))
    final["val_se_text"] = format_se(report.get("val_standard_error"))
    final["test_text"] = final_test_text(report) if report.get("test_primary") is not None else None
    final["gap_text"] = final_gap_text(report)
    interval, se = report.get("test_interval"), report.get("test_standard_error")
    final["interval_text"] = (
        f"{level_text(float(report.get('test_interval_level') or 0.9))} interval "
        + format_interval(interval[0], interval[1], sig_decimals(se) if se else 5)
        if isinstance(interval, list) and len(interval) == 2
        else None
    )
    return final


def _acceptance(
    info: dict[str, Any], tree: Tree, seed_noise: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """``run.json``'s acceptance rule, and the sentence that says it (``None`` before it)."""
    acceptance = info.get("acceptance")
    if not isinstance(acceptance, dict):
        return None
    unit = next(
        (n.score.resample_unit for n in tree.evaluated() if n.score and n.score.resample_unit),
        None,
    )
    text = acceptance_line(acceptance, unit)
    noise = seed_noise_text(seed_noise)
    if noise:
        text = f"{text}; {noise}" if text else noise
    return {**acceptance, "unit": unit, "text": text, "seed_noise": seed_noise}


def _finalists(state: RunState) -> dict[str, Any] | None:
    """The finalists' choice (rule, per-seed scores, mean ± spread), or the replicates so far."""
    if state.finalists:
        rows = [
            {
                **row,
                "mean_text": mean_spread_text(row),
                "spread_text": format_se(row.get("spread") or 0.0),
            }
            for row in state.finalists.get("finalists") or []
        ]
        return {
            "chosen": state.finalists.get("node_id"),
            "rule": state.finalists.get("rule"),
            "seeds": seed_order(rows),
            "rows": rows,
        }
    if not state.replicates:
        return None
    rows = [
        {
            "node": node_id,
            "scores": {
                str(seed): e.get("primary")
                for seed, e in sorted(seeds.items())
                if e.get("primary") is not None
            },
            "failures": {
                str(seed): str(e.get("failure") or "failed")
                for seed, e in sorted(seeds.items())
                if e.get("primary") is None
            },
        }
        for node_id, seeds in state.replicates.items()
    ]
    return {"chosen": None, "rule": None, "seeds": seed_order(rows), "rows": rows}


def _budget(tree, state: RunState, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "iterations": {"used": tree.iterations_used(), "max": config.get("iterations")},
        "time_s": {"used": state.elapsed_s, "max": config.get("time_budget_s")},
        "tokens": {
            "used": sum(n.usage.total_tokens for n in tree),
            "max": config.get("max_tokens"),
        },
        "cost_usd": {"used": sum(n.usage.cost_usd for n in tree), "max": config.get("max_cost")},
    }


def _metric_names(tree: Tree, primary: str) -> list[str]:
    """Validation metric names, the primary first."""
    names: list[str] = [primary]
    for node in tree.evaluated():
        metrics = node.score.metrics if node.score is not None else {}
        names += [name for name in metrics if name not in names]
    return names


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (which JSON cannot carry) with None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
