"""The problem as an agent reads it: data, schema, cutoffs, label SQL, statistics, rules."""

from __future__ import annotations

import os

from rlab_relbench import gnn, official

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
        "## Schema (as the candidate sees it, "
        + (
            "every row kept, target cells after the test cutoff blank)"
            if spec.get("kind") == "autocomplete"
            else "truncated at the test cutoff)"
        ),
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
        spec.get("sql") or _no_sql(spec),
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
        "`test.parquet` (keys and seed time only). "
        + _time_rules(spec)
        + " Validation predictions must come from a model never fit on validation labels "
        "(a train+val refit may produce the test predictions). No network, no other paths.",
        "",
        "## Playbook",
        _PLAYBOOK.get(kind, ""),
        "",
        "## Graph neural network seed",
        gnn.context_note(),
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


def _no_sql(spec: dict) -> str:
    if spec.get("kind") == "autocomplete":
        return f"(autocomplete: the label is column {spec['target_col']} of {spec['entity_table']})"
    return "(labels hosted, no SQL)"


def _time_rules(spec: dict) -> str:
    if spec.get("kind") == "autocomplete":
        return (
            f"The database keeps every row; {spec['entity_table']}.{spec['target_col']} is the "
            "label, blank after the test cutoff: never use a row's own target cell as its "
            "feature. Use only rows strictly before each row's time."
        )
    return (
        "The database ends at the test cutoff, so every test row sees it as of the test "
        "cutoff, however late its seed time. Build every split the same way: val rows as of "
        "the validation cutoff, train rows in blocks of num_eval_timestamps seed times, each "
        "as of its block's first seed time (the sql-aggregates seed does this), using only "
        "rows strictly before that time. Add no feature that says where a row sits in its "
        "block or which calendar week it is: with features frozen at the cutoff, the model "
        "can only learn the validation weeks' base rates from it and replay them on the "
        "test weeks."
    )


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
