"""The problem as an agent reads it: the competition page, the files, the contract, the rules."""

from __future__ import annotations

from typing import Any

DESCRIPTION_LIMIT = 6000

PREDICTION_WORDS = {
    "probability": "a probability in [0, 1] per target column",
    "label": "the predicted label per target column",
    "value": "a number per target column",
    "ranking": "space-separated labels, best first",
}


def render(facts: dict[str, Any], description: str) -> str:
    """Markdown context for agents; holds no test-side number."""
    files = facts["files"]
    rows = facts["rows"]
    direction = "higher" if facts["higher_is_better"] else "lower"
    text = description.strip()
    if len(text) > DESCRIPTION_LIMIT:
        text = (
            text[:DESCRIPTION_LIMIT] + "\n\n[... description cut; the full text is description.md]"
        )
    split = facts["split"]
    held = (
        f"grouped by '{split['group_column']}'"
        if split["group_column"]
        else "stratified by label"
        if split["stratified"]
        else "random"
    )
    columns = ", ".join(
        f"{c['name']} ({c['dtype']}, {c['distinct']} values"
        + (f", {c['missing']:.0%} missing" if c["missing"] else "")
        + ")"
        for c in facts["columns"][:40]
    )
    label = (
        f" The submission one-hot encodes train's '{facts['label_column']}' column: one "
        "probability column per class."
        if facts["label_column"]
        else ""
    )
    return (
        f"# mle:{facts['competition_id']}: {facts['name']}\n\n"
        f"Metric: **{facts['grader']}** ({direction} is better), the competition's own grader. "
        "The framework scores your validation predictions with it; the test submission is "
        "graded once, after the search, by `rlab final` (medals against the leaderboard).\n\n"
        "## Files in $RLAB_DATA_DIR (read-only)\n\n"
        f"- `{files['train']}`: {rows['train']} labelled rows (public train minus the validation "
        f"rows; {held} split held by the framework)\n"
        f"- `{files['val']}`: {rows['val']} validation rows, features only\n"
        + (
            f"- `{files['test']}`: {rows['test']} test rows, features only\n"
            if files["test"]
            else ""
        )
        + f"- `{files['sample_submission']}` and `{files['val_sample_submission']}`: the formats "
        "to write\n"
        "- `competition.json`: grader, direction, id and target columns, prediction form\n"
        "- `description.md`: the competition page below; other public files of the competition\n\n"
        f"Id column: `{facts['id_column']}`. Target columns: {facts['target_columns']}; each row "
        f"needs {PREDICTION_WORDS.get(facts['prediction'], 'a prediction')}.{label}\n\n"
        f"Feature columns of train: {columns}\n\n"
        "## Write to $RLAB_OUTPUT_DIR\n\n"
        "- `val_predictions.csv`: the header and ids of `val_sample_submission.csv`\n"
        "- `submission.csv`: the header and ids of the sample submission (the test predictions; "
        "moved out of reach as soon as the program exits)\n\n"
        "Problems (wrong columns or length, repeated or unknown ids, NaN, probabilities outside "
        "[0, 1]) fail the node with the reason.\n\n"
        "## Stages\n\n"
        "RLAB_STAGE is `debug` for the `--debug` smoke run (read a few hundred rows, finish in "
        "seconds), `mini` early in the budget (subsample large train files), `full`, and "
        "`ensemble` near the end: then RLAB_TOP_NODES lists the best nodes by validation, best "
        "first; a program that caches its predictions under "
        "$RLAB_CACHE_DIR/predictions/$RLAB_NODE_ID/ can combine theirs with its own.\n\n"
        "## The competition page\n\n"
        f"{text}\n"
    )
