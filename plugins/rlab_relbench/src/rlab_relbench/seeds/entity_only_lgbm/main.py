# ruff: noqa: E402
"""Reference seed (to beat): LightGBM on the entity table's own columns only.

The shape of RelBench's official LightGBM example: no other table is read, so the model
knows each entity's static attributes and the seed time, nothing of its history.
Validation predictions come from the train-only model; test from a train+val refit.
"""

import os
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import yaml

sys.modules.setdefault("sklearn", None)  # lightgbm runs without scikit-learn; skips a 6 s import
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # no spinning threads on a busy machine
import lightgbm as lgb

DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ["RLAB_OUTPUT_DIR"])
THREADS = int(os.environ.get("RLAB_THREADS", "2"))
SEED = int(os.environ.get("RLAB_SEED", "0"))
DEBUG = "--debug" in sys.argv
MAX_TRAIN_ROWS = 50_000  # the official example samples 50k training rows
MAX_LEVELS = 200
# LightGBM's settings: a trailing "tune:" comment declares a value that tuning may set, and
# its range
PARAMS = {
    "learning_rate": 0.05,  # tune: float 0.01..0.3 log
    "num_leaves": 31,  # tune: int 8..255 log
    "min_data_in_leaf": 50,  # tune: int 5..500 log
    "verbose": -1,
}
NUM_ROUNDS = 200  # tune: int 50..1000 log

SCHEMA = yaml.safe_load((DATA / "dataset.yaml").read_text())
TASK = yaml.safe_load((DATA / "task.yaml").read_text())
ENTITY, ENTITY_COL = TASK["entity_table"], TASK["entity_col"]
TIME, TARGET = TASK["time_col"], TASK["target_col"]
BINARY = TASK["task_type"] == "binary_classification"


def features(labels, entity):
    spec = SCHEMA["tables"][ENTITY]
    own = [c for c in entity.columns if c in (spec.get("time_col"), TARGET)]  # autocomplete
    merged = labels[[ENTITY_COL, TIME]].merge(
        entity.drop(columns=own), left_on=ENTITY_COL, right_on=spec["pkey"], how="left"
    )
    seed = pd.to_datetime(merged.pop(TIME))
    merged["seed_month"] = seed.dt.month
    merged = merged.drop(columns=[ENTITY_COL, spec["pkey"]], errors="ignore")
    for col in list(merged.columns):
        series = merged[col]
        if pd.api.types.is_datetime64_any_dtype(series):
            merged[col] = series.astype("int64") // 10**9
        elif pd.api.types.is_bool_dtype(series):
            merged[col] = series.astype(float)
        elif not pd.api.types.is_numeric_dtype(series):
            if entity[col].nunique() > MAX_LEVELS:
                merged = merged.drop(columns=[col])
            else:
                levels = sorted(entity[col].dropna().astype(str).unique())
                merged[col] = pd.Categorical(series.astype(str), categories=levels)
    return merged


def fit(X, y):
    params = {
        **PARAMS,
        "objective": "binary" if BINARY else "regression",
        "num_threads": THREADS,
        "seed": SEED,
    }
    return lgb.train(params, lgb.Dataset(X, y), num_boost_round=20 if DEBUG else NUM_ROUNDS)


def main():
    entity = duckdb.sql(f"SELECT * FROM read_parquet('{DATA / 'db' / ENTITY}.parquet')").df()
    train = pd.read_parquet(DATA / "train.parquet")
    val = pd.read_parquet(DATA / "val.parquet")
    test = pd.read_parquet(DATA / "test.parquet")
    limit = 3000 if DEBUG else MAX_TRAIN_ROWS
    if len(train) > limit:
        train = train.sample(n=limit, random_state=SEED)
    model = fit(features(train, entity), train[TARGET].astype(float).to_numpy())
    val_pred = model.predict(features(val, entity))
    both = pd.concat([train, val], ignore_index=True)
    model = fit(features(both, entity), both[TARGET].astype(float).to_numpy())
    test_pred = model.predict(features(test, entity))
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", np.asarray(val_pred, dtype=np.float64))
    np.save(OUT / "test_predictions.npy", np.asarray(test_pred, dtype=np.float64))
    print(f"entity-only LightGBM on {len(train)} rows")


if __name__ == "__main__":
    main()
