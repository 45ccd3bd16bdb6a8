"""Item popularity: each video's smoothed long_view rate in the training rows (prior 20).

Reads $RLAB_DATA_DIR/{train,val,test}.csv and writes val_predictions.npy and
test_predictions.npy (one score per row, row_id order) into $RLAB_OUTPUT_DIR.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(os.environ.get("RLAB_DATA_DIR", "."))
OUT = Path(os.environ.get("RLAB_OUTPUT_DIR", "."))
DEBUG = "--debug" in sys.argv
# pseudo-rows at the global rate that shrink a video's rate (a trailing "tune:" comment
# declares a value that tuning may set)
PRIOR = 20.0  # tune: float 1.0..500.0 log
REFIT_ON_VAL_FOR_TEST = False


def rates(rows: pd.DataFrame) -> tuple[pd.Series, float]:
    """Smoothed long_view rate per video and the global rate."""
    overall = float(rows["long_view"].mean())
    stats = rows.groupby("video_id")["long_view"].agg(["sum", "count"])
    return (stats["sum"] + PRIOR * overall) / (stats["count"] + PRIOR), overall


def main() -> None:
    limit = 20_000 if DEBUG else None
    train = pd.read_csv(DATA / "train.csv", nrows=limit)
    val = pd.read_csv(DATA / "val.csv", nrows=limit)
    test = pd.read_csv(DATA / "test.csv", nrows=limit)
    rate, overall = rates(train)
    val_scores = val["video_id"].map(rate).fillna(overall).to_numpy(float)
    if REFIT_ON_VAL_FOR_TEST:
        rate, overall = rates(pd.concat([train, val]))
    test_scores = test["video_id"].map(rate).fillna(overall).to_numpy(float)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", val_scores)
    np.save(OUT / "test_predictions.npy", test_scores)
    print(f"popularity: {len(val_scores)} val and {len(test_scores)} test scores written")


if __name__ == "__main__":
    main()
