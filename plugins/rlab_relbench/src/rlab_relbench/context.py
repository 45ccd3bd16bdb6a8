"""The problem as an agent reads it: data, schema, cutoffs, label SQL, statistics, rules."""

from __future__ import annotations

import os

from rlab_relbench import official

_PLAYBOOK = {
    "binary_classification": (
        "Classification playbook: aggregate every table that points at the entity over several "
        "time windows strictly before the seed time (counts, means, maxima, recency); add the "
        "entity's own label history; compare with the entity-table-only baseline; tune LightGBM "
        "(leaves, learning rate, rounds) last. AUROC only needs a good ranking."
    ),
    "regression": (
        "Regression playbook: the metric is MAE divided by the train target's std, so fit an "
        "L1 (or Huber) objective and clip predictions to the train target's 2nd-98th "
        "percentiles; aggregate related tables over several windows; add label history."
    ),
    "recommendation": (
        "Recommendation playbook: most future destinations repeat past ones: score each "
        "source's past destinations by time-decayed frequency and recency, backfill with "
        "recent popularity, then re-rank the candidates with a LightGBM lambdarank model."
    ),
}


def render(facts: dict, resources: dict | None = None) -> str:
    """Markdown context for agents from the build's facts (never a test label)."""
    spec = facts["spec"]
    kind = spec["task_type"]
    name = f"{spec['dataset']}/{spec['task']}"
    lines = [
        f"# RelBench task {name} ({kind})",
        "",
        spec.get("description") or "",
        "",
        "## Dataset",
        facts.get("dataset_description", ""),
        "",
        f"Validation cutoff {spec['val_timestamp']}, test cutoff {spec['test_timestamp']}; "
        f"window {spec['timedelta']}; {spec['num_eval_timestamps']} evaluation seed times per split.",
        f"Rows: train {facts['counts']['train']}, val {facts['counts']['val']}, test {facts['counts']['test']}.",
        "",
        "## Schema (as the candidate sees it, truncated at the test cutoff)",
    ]
    for table, info in facts["tables"].items():
        span = (
            f", time {info['time_col']} {info['time_range'][0]} .. {info['time_range'][1]}"
            if info.get("time_range")
            else ""
        )
        fkeys = ", ".join(f"{c}->{t}" for c, t in info["fkeys"].items()) or "none"
        lines.append(
            f"- **{table}**: {info['rows']} rows, pkey {info['pkey']}, fkeys {fkeys}{span}"
        )
        cols = "; ".join(
            f"{c['name']} {c['dtype']} ({c['null']:.0%} null)" for c in info["columns"]
        )
        more = (
            f" (+{info['n_columns'] - len(info['columns'])} more)"
            if info["n_columns"] > len(info["columns"])
            else ""
        )
        lines.append(f"  columns: {cols}{more}")
    lines += [
        "",
        "## Label SQL (DuckDB; `timestamps` holds the seed times)",
        "```sql",
        spec.get("sql") or "(labels hosted, no SQL)",
        "```",
    ]
    lines += [
        "",
        "## Label statistics (train)",
        ", ".join(f"{k}: {v}" for k, v in facts["label_stats"].items()),
    ]
    lines += ["", "## Prediction contract", _contract(spec)]
    lines += [
        "",
        "## Data access",
        "Read only $RLAB_DATA_DIR: `db/<table>.parquet`, `dataset.yaml` (keys, time columns), "
        "`task.yaml` (this task), `train.parquet` and `val.parquet` (with labels), "
        "`test.parquet` (keys and seed time only). The database ends at the test cutoff, so "
        "test rows with later seed times see no newer rows: censor validation features at the "
        "validation cutoff the same way. Use only rows strictly before each seed time. "
        "Validation predictions must come from a model never fit on validation labels "
        "(a train+val refit may produce the test predictions). No network, no other paths.",
        "",
        "## Playbook",
        _PLAYBOOK.get(kind, ""),
    ]
    sota = official.SOTA.get(name)
    if sota:
        lines += [
            "",
            "## Best published test result (a bar, not a target)",
            f"{sota['value']} {sota['metric']} ({sota['method']}).",
        ]
    res = resources or {"cpus": os.cpu_count()}
    lines += ["", "## Machine", ", ".join(f"{k}: {v}" for k, v in res.items())]
    return "\n".join(lines) + "\n"


def _contract(spec: dict) -> str:
    head = "Write `val_predictions.npy` and `test_predictions.npy` (numpy.save) into $RLAB_OUTPUT_DIR, rows in the order of val.parquet / test.parquet: "
    kind = spec["task_type"]
    if kind == "binary_classification":
        return (
            head
            + "float array (N,) of probabilities in [0, 1]. Metric: AUROC (roc_auc, higher is better)."
        )
    if kind == "regression":
        return (
            head
            + "float array (N,) on the target's scale. Metric: NMAE = MAE / std of the train target (lower is better)."
        )
    if kind == "recommendation":
        return head + (
            f"int array (N, {spec['eval_k']}) of distinct {spec['dst_entity_table']} ids in "
            f"[0, {spec['num_dst']}), best first. Metric: MAP@{spec['eval_k']} (higher is better)."
        )
    return head + "float array (N, C) of class scores."
