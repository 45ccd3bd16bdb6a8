"""Seed candidate: logistic regression (Newton steps, NumPy) on distance and departure hour.

Reads $RLAB_DATA_DIR/{train,val,test}.csv and writes val_predictions.npy and
test_predictions.npy (probabilities, file order) into $RLAB_OUTPUT_DIR.
"""

import csv
import os
import sys
from pathlib import Path

import numpy as np

DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ["RLAB_OUTPUT_DIR"])
DEBUG = "--debug" in sys.argv

NUMERIC = ["distance", "hour"]
CATEGORICAL = []
# feature additions (one line each)
# a trailing "tune:" comment declares a value that tuning may set, and its range
NEWTON_STEPS = 6  # tune: int 2..20
L2 = 1e-6  # tune: float 1e-8..100.0 log
MIN_LEVEL_COUNT = 1  # tune: int 1..100 log


def read(name):
    with open(DATA / name, newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows = rows[:2000] if DEBUG else rows
    for r in rows:  # noqa: B007 - playbook moves add derived columns here
        pass  # derived columns
    return rows


def to_float(value):
    return float(value) if value not in ("", "NA") else np.nan


def build_levels(rows):
    levels = {}
    for column in CATEGORICAL:
        counts = {}
        for r in rows:
            counts[r[column]] = counts.get(r[column], 0) + 1
        levels[column] = sorted(v for v, n in counts.items() if n >= MIN_LEVEL_COUNT)
    return levels


def features(rows, levels, stats=None):
    numeric = np.array([[to_float(r[c]) for c in NUMERIC] for r in rows], dtype=float)
    if stats is None:
        stats = (np.nanmean(numeric, axis=0), np.nanstd(numeric, axis=0) + 1e-9)
    mean, std = stats
    numeric = np.where(np.isnan(numeric), mean, numeric)
    blocks = [np.ones((len(rows), 1)), (numeric - mean) / std]
    for column in CATEGORICAL:
        index = {v: i for i, v in enumerate(levels[column])}
        onehot = np.zeros((len(rows), len(index)))
        for i, r in enumerate(rows):
            j = index.get(r[column])
            if j is not None:
                onehot[i, j] = 1.0
        blocks.append(onehot)
    return np.hstack(blocks), stats


def fit_logistic(X, y):
    w = np.zeros(X.shape[1])
    penalty = L2 * np.eye(X.shape[1])
    penalty[0, 0] = 0.0  # never shrink the intercept
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(X @ w, -30, 30)))
        grad = X.T @ (p - y) + penalty @ w
        hess = (X * (p * (1 - p))[:, None]).T @ X + penalty + 1e-8 * np.eye(X.shape[1])
        w -= np.linalg.solve(hess, grad)
    return w


def predict(X, w):
    return 1.0 / (1.0 + np.exp(-np.clip(X @ w, -30, 30)))


def main():
    train, val, test = read("train.csv"), read("val.csv"), read("test.csv")
    levels = build_levels(train)
    X_train, stats = features(train, levels)
    y_train = np.array([float(r["delayed"]) for r in train])
    w = fit_logistic(X_train, y_train)
    X_val, _ = features(val, levels, stats)
    X_test, _ = features(test, levels, stats)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", predict(X_val, w))
    np.save(OUT / "test_predictions.npy", predict(X_test, w))
    print(f"trained on {len(train)} rows with {X_train.shape[1]} features")


if __name__ == "__main__":
    main()
