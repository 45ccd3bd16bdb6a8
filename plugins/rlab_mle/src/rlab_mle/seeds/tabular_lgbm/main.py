"""rlab-mle seed: a generic tabular LightGBM baseline for an MLE-bench-style competition.

Reads $RLAB_DATA_DIR: train.csv (with labels), val.csv and test.csv (features only), the
sample submissions (sample_submission.csv, val_sample_submission.csv) and
competition.json (the grader and the form of the predictions). The id column is the
sample submission's first column and the targets are the rest. Numeric columns are used
as they are, text columns with few values become categories, longer text gives length and
word counts, other codes are count-encoded; LightGBM fits each target.

Writes val_predictions.csv and submission.csv into $RLAB_OUTPUT_DIR in the sample
submissions' formats, and keeps a copy under $RLAB_CACHE_DIR/predictions/$RLAB_NODE_ID/.
--debug (RLAB_STAGE=debug) reads a few hundred rows; RLAB_STAGE=mini subsamples a large
train file; RLAB_STAGE=ensemble averages its predictions with the cached ones of the best
nodes (RLAB_TOP_NODES), rank-averaging for ROC AUC.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# OpenMP threads that spin while waiting stall when the machine is busier than RLAB_THREADS
# assumes; waiting passively costs little when it is not (set before LightGBM loads OpenMP)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import lightgbm as lgb
import numpy as np
import pandas as pd

DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ["RLAB_OUTPUT_DIR"])
CACHE = Path(os.environ.get("RLAB_CACHE_DIR") or OUT)
STAGE = "debug" if "--debug" in sys.argv else os.environ.get("RLAB_STAGE", "full")
SEED = int(os.environ.get("RLAB_SEED", "0"))
THREADS = int(os.environ.get("RLAB_THREADS", "1"))
NODE = os.environ.get("RLAB_NODE_ID", "")
TOP_NODES = [n for n in os.environ.get("RLAB_TOP_NODES", "").split(",") if n]
INFO = json.loads((DATA / "competition.json").read_text())

DEBUG_ROWS = 400
MINI_ROWS = 20_000
MAX_LEVELS = 100  # text columns with at most this many values are categories
# LightGBM's settings. A trailing "tune:" comment declares a value that tuning may set, and
# its range; a trial rewrites only the value. Rows are re-drawn every iteration
# (subsample_freq=1), so a subsample below 1.0 takes effect (at 1.0 nothing is drawn);
# L1/L2 at 1e-8 are off in effect (a log range cannot hold 0).
PARAMS = dict(
    n_estimators=250,  # tune: int 50..1000 log
    learning_rate=0.05,  # tune: float 0.01..0.3 log
    num_leaves=31,  # tune: int 4..255 log
    min_child_samples=20,  # tune: int 5..200 log
    subsample=1.0,  # tune: float 0.5..1.0
    subsample_freq=1,
    colsample_bytree=1.0,  # tune: float 0.5..1.0
    reg_alpha=1e-8,  # tune: float 1e-8..10.0 log
    reg_lambda=1e-8,  # tune: float 1e-8..10.0 log
    verbose=-1,
)
CLASS_WEIGHT = None
CV_FOLDS = 0  # 0: one model on all of train; k >= 2: k fold models with early stopping
BAGS = 1  # models with different seeds, averaged
LOG_TARGET = False  # regression: fit log1p(y) and predict expm1
# setting changes (one line each)


def read(name: str) -> pd.DataFrame:
    return pd.read_csv(
        DATA / name, nrows=DEBUG_ROWS if STAGE == "debug" else None, low_memory=False
    )


def is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)


def text_columns(frame: pd.DataFrame, columns: list[str]) -> list[str]:
    """Columns of words: on average at least two per value."""
    out = []
    for column in columns:
        if not is_numeric(frame[column]):
            words = frame[column].astype("string").str.count(" ").fillna(0) + 1
            if words.mean() >= 2:
                out.append(column)
    return out


# feature builders (one block each)


def feature_frame(
    both: pd.DataFrame, columns: list[str], y: np.ndarray, is_train: np.ndarray
) -> pd.DataFrame:
    """Model inputs for every row of train, val and test (stacked in that order)."""
    out = pd.DataFrame(index=both.index)
    texts = text_columns(both, columns)
    for column in columns:
        values = both[column]
        if is_numeric(values):
            out[column] = values.astype(float)
            continue
        text = values.astype("string")
        if text.nunique() <= MAX_LEVELS:
            out[column] = text.astype("category")
        else:
            out[column + "__count"] = text.map(text.value_counts()).astype(float)
        if column in texts:
            out[column + "__chars"] = text.str.len().astype(float)
            out[column + "__words"] = (text.str.count(" ") + 1).astype(float)
    # feature steps (one line each)
    return out


def make_model(regression: bool, seed: int):
    params = {**PARAMS, "random_state": seed, "n_jobs": THREADS}
    if STAGE == "debug":
        params["n_estimators"] = 20
    if regression:
        return lgb.LGBMRegressor(**params)
    return lgb.LGBMClassifier(class_weight=CLASS_WEIGHT, **params)


def fit_predict(X: pd.DataFrame, y: np.ndarray, rest: pd.DataFrame, n_classes: int) -> np.ndarray:
    """Predictions for ``rest``: values (n,) when n_classes == 0, else probabilities (n, k)."""
    regression = n_classes == 0
    if not regression and len(np.unique(y)) < 2:  # one class seen (tiny debug samples)
        return np.eye(n_classes)[np.full(len(rest), int(y[0]))]
    target = np.log1p(np.clip(y, 0, None)) if regression and LOG_TARGET else y
    total = np.zeros(len(rest)) if regression else np.zeros((len(rest), n_classes))
    runs = 0
    for bag in range(BAGS):
        if CV_FOLDS >= 2 and STAGE != "debug":
            order = np.random.default_rng(SEED + bag).permutation(len(X))
            parts = np.array_split(order, CV_FOLDS)
        else:
            parts = [np.array([], dtype=int)]
        for held in parts:
            keep = np.setdiff1d(np.arange(len(X)), held)
            model = make_model(regression, SEED + bag)
            if len(held):
                model.fit(
                    X.iloc[keep],
                    target[keep],
                    eval_set=[(X.iloc[held], target[held])],
                    callbacks=[lgb.early_stopping(50, verbose=False)],
                )
            else:
                model.fit(X, target)
            if regression:
                total += model.predict(rest)
            else:
                proba = np.zeros((len(rest), n_classes))
                proba[:, model.classes_.astype(int)] = model.predict_proba(rest)
                total += proba
            runs += 1
    mean = total / runs
    return np.expm1(mean) if regression and LOG_TARGET else mean


def predict_targets(
    train: pd.DataFrame, val: pd.DataFrame, test: pd.DataFrame
) -> tuple[dict, dict]:
    """{target column: predictions} for val and for test, in the submission's form."""
    id_column, targets, label = INFO["id_column"], INFO["target_columns"], INFO["label_column"]
    truth = [label] if label else targets
    columns = [c for c in train.columns if c not in {id_column, *truth} and c in test.columns]
    both = pd.concat([train[columns], val[columns], test[columns]], ignore_index=True)
    is_train = np.arange(len(both)) < len(train)
    kind = INFO["prediction"]
    val_out, test_out = {}, {}
    if kind == "probability" and label:  # the submission one-hot encodes the label column
        y = train[label].astype(str).map({t: i for i, t in enumerate(targets)}).to_numpy()
        features = feature_frame(both, columns, y, is_train)
        proba = fit_predict(features[is_train], y, features[~is_train], len(targets))
        for i, target in enumerate(targets):
            val_out[target], test_out[target] = proba[: len(val), i], proba[len(val) :, i]
        return val_out, test_out
    for target in targets:
        if kind == "value":
            y = pd.to_numeric(train[target]).to_numpy(dtype=float)
            classes = None
        else:
            raw = (
                train[target].astype(str).str.split().str[0] if kind == "ranking" else train[target]
            )
            classes = np.array(sorted(raw.dropna().unique(), key=str), dtype=object)
            y = pd.Index(classes).get_indexer(raw)
        features = feature_frame(both, columns, y, is_train)
        pred = fit_predict(
            features[is_train], y, features[~is_train], 0 if classes is None else len(classes)
        )
        if kind == "probability":
            pred = pred[:, -1] if len(classes) == 2 else pred @ classes.astype(float)
        elif kind == "label":
            pred = classes[np.argmax(pred, axis=1)]
        elif kind == "ranking":
            top = np.argsort(-pred, axis=1)[:, : int(INFO["k"] or 5)]
            pred = np.array([" ".join(str(c) for c in classes[row]) for row in top], dtype=object)
        val_out[target], test_out[target] = pred[: len(val)], pred[len(val) :]
    return val_out, test_out


def as_frame(ids: pd.Series, predictions: dict) -> pd.DataFrame:
    frame = pd.DataFrame({INFO["id_column"]: ids.to_numpy()})
    for target in INFO["target_columns"]:
        frame[target] = predictions[target]
    return frame


def combine(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Average (rank-average for ROC AUC) or majority-vote the frames, aligned on the first."""
    id_column, first = INFO["id_column"], frames[0]
    keys = first[id_column].astype(str)
    aligned = [
        f.set_index(f[id_column].astype(str)).loc[keys].reset_index(drop=True) for f in frames
    ]
    out = first.copy()
    for target in INFO["target_columns"]:
        if INFO["prediction"] in ("probability", "value"):
            stack = np.column_stack([pd.to_numeric(f[target]).to_numpy(float) for f in aligned])
            if "auc" in INFO["grader"].lower() or "roc" in INFO["grader"].lower():
                stack = pd.DataFrame(stack).rank(pct=True).to_numpy()
            out[target] = stack.mean(axis=1)
        else:
            votes = pd.DataFrame({i: f[target].astype(str) for i, f in enumerate(aligned)})
            out[target] = votes.mode(axis=1)[0].where(votes.nunique(axis=1) < len(frames), votes[0])
    return out


def ensemble(val_pred: pd.DataFrame, test_pred: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """At the ensemble stage, combine with the cached predictions of the best nodes."""
    vals, tests = [val_pred], [test_pred]
    for node in TOP_NODES:
        folder = CACHE / "predictions" / node
        if node == NODE or not (folder / "submission.csv").is_file():
            continue
        v, t = pd.read_csv(folder / "val_predictions.csv"), pd.read_csv(folder / "submission.csv")
        if (
            list(v.columns) == list(val_pred.columns)
            and len(v) == len(val_pred)
            and len(t) == len(test_pred)
        ):
            vals.append(v)
            tests.append(t)
    print(f"ensemble of {len(vals)} prediction sets (this node and {len(vals) - 1} cached)")
    return combine(vals), combine(tests)


def main() -> None:
    start = time.time()
    sample = read(INFO["files"]["sample_submission"])
    train, val = read("train.csv"), read("val.csv")
    test = read(INFO["files"]["test"]) if INFO["files"]["test"] else sample[[INFO["id_column"]]]
    if STAGE == "mini" and len(train) > MINI_ROWS:
        train = train.sample(MINI_ROWS, random_state=SEED).reset_index(drop=True)
    val_out, test_out = predict_targets(train, val, test)
    id_column = INFO["id_column"]
    test_ids = test[id_column] if id_column in test.columns else sample[id_column].iloc[: len(test)]
    val_pred, test_pred = as_frame(val[id_column], val_out), as_frame(test_ids, test_out)
    if STAGE == "ensemble":
        val_pred, test_pred = ensemble(val_pred, test_pred)
    OUT.mkdir(parents=True, exist_ok=True)
    val_pred.to_csv(OUT / "val_predictions.csv", index=False)
    test_pred.to_csv(OUT / "submission.csv", index=False)
    if NODE and STAGE != "debug":
        keep = CACHE / "predictions" / NODE
        keep.mkdir(parents=True, exist_ok=True)
        val_pred.to_csv(keep / "val_predictions.csv", index=False)
        test_pred.to_csv(keep / "submission.csv", index=False)
    print(
        f"stage {STAGE}: {len(train)} train rows, {len(val_pred)} val, {len(test_pred)} test, {time.time() - start:.1f}s"
    )


if __name__ == "__main__":
    main()
