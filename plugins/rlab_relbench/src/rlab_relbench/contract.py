"""The prediction contract: one clear sentence per broken rule.

Rows align with ``train/val/test.parquet`` of the data folder (in file order):
binary classification -> float (N,) in [0, 1]; regression -> float (N,) on the target's
scale; multiclass -> float (N, C); recommendation -> int (N, K) distinct destination ids
in [0, num_dst). Files are loaded with ``allow_pickle=False``; NaN and inf are refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def expected_shape(spec: dict, rows: int) -> tuple[int, ...]:
    """The shape ``spec``'s task type asks of a prediction file with ``rows`` rows."""
    if spec["task_type"] == "recommendation":
        return (rows, int(spec["eval_k"]))
    return (rows,)


def check(path: Path, spec: dict, rows: int) -> list[str]:
    """Return the contract problems of one prediction file (empty when it is fine)."""
    if not path.exists():
        return [f"{path.name} is missing; write it with numpy.save into $RLAB_OUTPUT_DIR"]
    try:
        pred = np.load(path, allow_pickle=False)
    except Exception as exc:
        return [f"{path.name} is not a readable .npy array without pickles ({exc})"]
    kind = spec["task_type"]
    want = expected_shape(spec, rows)
    if kind == "multiclass_classification":
        if pred.ndim != 2 or pred.shape[0] != rows:
            return [f"{path.name} has shape {pred.shape}, expected ({rows}, num_classes)"]
    elif pred.shape != want:
        return [f"{path.name} has shape {pred.shape}, expected {want}"]
    if kind == "recommendation":
        return _check_ids(path.name, pred, int(spec["num_dst"]))
    if not np.issubdtype(pred.dtype, np.floating):
        return [f"{path.name} has dtype {pred.dtype}, expected a float dtype"]
    if not np.all(np.isfinite(pred)):
        return [f"{path.name} contains NaN or infinite values"]
    if kind == "binary_classification" and pred.size and (pred.min() < 0 or pred.max() > 1):
        return [f"{path.name} has values outside [0, 1] (probabilities expected)"]
    return []


def _check_ids(name: str, pred: np.ndarray, num_dst: int) -> list[str]:
    if not np.issubdtype(pred.dtype, np.integer):
        return [f"{name} has dtype {pred.dtype}, expected an integer dtype (destination ids)"]
    problems = []
    if pred.size and (pred.min() < 0 or pred.max() >= num_dst):
        problems.append(f"{name} holds ids outside [0, {num_dst}) (out-of-range destination ids)")
    if pred.size:
        ordered = np.sort(pred, axis=1)
        dup_rows = int(np.any(ordered[:, 1:] == ordered[:, :-1], axis=1).sum())
        if dup_rows:
            problems.append(
                f"{name} repeats a destination id within {dup_rows} row(s); ids in a row must be distinct"
            )
    return problems
