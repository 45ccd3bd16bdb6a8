# ruff: noqa: E402
"""Seed: time-censored DuckDB SQL aggregates over the related tables, then LightGBM.

Works on any RelBench entity task (binary classification or regression): it reads the
schema from $RLAB_DATA_DIR/dataset.yaml and the task from task.yaml. For every table
with a foreign key to the entity table and a time column, it aggregates that table's
rows strictly before each seed time (counts over several windows, means and maxima of
its numeric columns, recency), joins the entity table's own columns, and fits LightGBM
on train. Validation predictions come from the train-only model (out-of-sample); the
test predictions come from a refit on train+val.
"""

import os
import sys
from pathlib import Path

import duckdb

sys.modules.setdefault("sklearn", None)  # lightgbm runs without scikit-learn; skips a 6 s import
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # no spinning threads on a busy machine
import lightgbm as lgb
import numpy as np
import pandas as pd
import yaml

DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ["RLAB_OUTPUT_DIR"])
THREADS = int(os.environ.get("RLAB_THREADS", "2"))
SEED = int(os.environ.get("RLAB_SEED", "0"))
DEBUG = "--debug" in sys.argv

WINDOWS_DAYS = [7, 28, None]  # None = all history before the seed time
NUMERIC_AGGS = ["avg", "max"]
MAX_NUMERIC = 6  # numeric columns aggregated per related table
MAX_TRAIN_ROWS = 30_000
MAX_LEVELS = 200  # categorical entity columns with more levels are dropped
LABEL_HISTORY = False
TIME_FEATURES = False
# feature switches (one line each)
PARAMS = {
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.9,
    "verbose": -1,
}
NUM_ROUNDS = 200
REGRESSION_OBJECTIVE = "regression"
REFIT_ON_TRAIN_VAL = True
# model settings (one line each)
TRAIN_Q = (-np.inf, np.inf)  # 2nd and 98th percentiles of the train target, set in main()

SCHEMA = yaml.safe_load((DATA / "dataset.yaml").read_text())
TASK = yaml.safe_load((DATA / "task.yaml").read_text())
ENTITY, ENTITY_COL = TASK["entity_table"], TASK["entity_col"]
TIME, TARGET = TASK["time_col"], TASK["target_col"]
BINARY = TASK["task_type"] == "binary_classification"
con = duckdb.connect()
con.execute(f"SET threads={THREADS}")
for name in SCHEMA["tables"]:
    con.execute(
        f"CREATE VIEW \"{name}\" AS SELECT * FROM read_parquet('{DATA / 'db' / name}.parquet')"
    )


def numeric_columns(table, skip):
    info = con.execute(f'DESCRIBE "{table}"').df()
    kinds = ("INT", "BIGINT", "DOUBLE", "FLOAT", "SMALLINT", "TINYINT", "DECIMAL", "HUGEINT")
    cols = [r.column_name for r in info.itertuples() if r.column_type.startswith(kinds)]
    return [c for c in cols if c not in skip][:MAX_NUMERIC]


def related_features(labels):
    """Aggregates of every table pointing at the entity table, strictly before each seed."""
    con.register("labels", labels[["__row", ENTITY_COL, TIME, "__asof"]])
    frames = []
    for table, spec in SCHEMA["tables"].items():
        tcol = spec.get("time_col")
        for fkey, parent in (spec.get("fkeys") or {}).items():
            if parent != ENTITY or not tcol:
                continue
            skip = {spec.get("pkey"), tcol, *spec["fkeys"]}
            nums = numeric_columns(table, skip)
            p = f"{table}_{fkey}"
            exprs = []
            for days in WINDOWS_DAYS:
                cond = "TRUE" if days is None else f'c."{tcol}" >= l.__asof - INTERVAL {days} DAY'
                tag = "all" if days is None else f"{days}d"
                exprs.append(f'COUNT(c."{tcol}") FILTER (WHERE {cond}) AS "{p}_cnt_{tag}"')
                for col in nums:
                    for agg in NUMERIC_AGGS:
                        exprs.append(
                            f'{agg}(c."{col}") FILTER (WHERE {cond}) AS "{p}_{col}_{agg}_{tag}"'
                        )
            exprs.append(
                f'date_diff(\'hour\', MAX(c."{tcol}"), l.__asof) AS "{p}_hours_since_last"'
            )
            # extra aggregates (one line each)
            sql = f"""SELECT l.__row, {", ".join(exprs)}
                FROM labels l LEFT JOIN "{table}" c
                  ON c."{fkey}" = l."{ENTITY_COL}" AND c."{tcol}" < l.__asof
                GROUP BY l.__row, l.__asof """
            frames.append(con.execute(sql).df().set_index("__row"))
    return frames


def entity_features(labels):
    entity = con.execute(f'SELECT * FROM "{ENTITY}"').df()
    spec = SCHEMA["tables"][ENTITY]
    drop = [c for c in entity.columns if c == spec.get("time_col")]
    merged = labels[["__row", ENTITY_COL]].merge(
        entity.drop(columns=drop), left_on=ENTITY_COL, right_on=spec["pkey"], how="left"
    )
    merged = merged.set_index("__row").drop(columns=[ENTITY_COL], errors="ignore")
    for col in list(merged.columns):
        series = merged[col]
        if pd.api.types.is_datetime64_any_dtype(series):
            merged[col] = series.astype("int64") // 10**9
        elif pd.api.types.is_bool_dtype(series):
            merged[col] = series.astype(float)
        elif not pd.api.types.is_numeric_dtype(series):
            if entity[col].nunique() > MAX_LEVELS:  # ids and free text: no signal per level
                merged = merged.drop(columns=[col])
            else:
                merged[col] = pd.Categorical(
                    series.astype(str), categories=sorted(entity[col].dropna().astype(str).unique())
                )
    return merged


def label_history(labels, history):
    """Mean and count of the entity's earlier labels (history rows strictly before the seed)."""
    con.register("hist", history[[ENTITY_COL, TIME, TARGET]])
    con.register("labels", labels[["__row", ENTITY_COL, "__asof"]])
    return (
        con.execute(f"""SELECT l.__row, AVG(h."{TARGET}") AS hist_label_mean,
        COUNT(h."{TARGET}") AS hist_label_count,
        arg_max(h."{TARGET}", h."{TIME}") AS hist_label_last
        FROM labels l LEFT JOIN hist h ON h."{ENTITY_COL}" = l."{ENTITY_COL}"
          AND h."{TIME}" + INTERVAL '{TASK["timedelta"]}' <= l.__asof
        GROUP BY l.__row""")
        .df()
        .set_index("__row")
    )


def features(labels, history, cutoff=None):
    """Features of each label row, as of min(seed time, cutoff).

    The candidate's database ends at the test cutoff, so test rows with later seed times
    see no newer rows; val rows are censored the same way at the val cutoff so that the
    validation score measures what test will see.
    """
    labels = labels.reset_index(drop=True).copy()
    labels["__row"] = np.arange(len(labels))
    seed = pd.to_datetime(labels[TIME])
    labels["__asof"] = seed if cutoff is None else seed.clip(upper=pd.Timestamp(cutoff))
    # train-time horizon simulation (one line each)
    parts = [entity_features(labels), *related_features(labels)]
    if LABEL_HISTORY:
        parts.append(label_history(labels, history))
    X = pd.concat(parts, axis=1).sort_index()
    X["horizon_days"] = ((seed - labels["__asof"]).dt.total_seconds() / 86400).to_numpy()
    if TIME_FEATURES:
        seed = pd.to_datetime(labels[TIME])
        X["seed_dow"] = seed.dt.dayofweek.to_numpy()
        X["seed_month"] = seed.dt.month.to_numpy()
    # derived features (one line each)
    return X


def fit(X, y):
    params = {
        **PARAMS,
        "objective": "binary" if BINARY else REGRESSION_OBJECTIVE,
        "num_threads": THREADS,
        "seed": SEED,
    }
    return lgb.train(params, lgb.Dataset(X, y), num_boost_round=NUM_ROUNDS if not DEBUG else 20)


def predict(model, X):
    out = model.predict(X)
    if BINARY:
        out = np.clip(out, 0.0, 1.0)
    # prediction post-processing (one line each)
    return out


def main():
    import time

    start = time.time()
    train = pd.read_parquet(DATA / "train.parquet")
    val = pd.read_parquet(DATA / "val.parquet")
    test = pd.read_parquet(DATA / "test.parquet")
    limit = 3000 if DEBUG else MAX_TRAIN_ROWS
    if len(train) > limit:  # keep the most recent rows: closest to the evaluation period
        train = train.sort_values(TIME, kind="stable").iloc[-limit:]
    X_train = features(train, train)
    X_val = features(val, train, TASK["val_timestamp"])
    y_train = train[TARGET].astype(float).to_numpy()
    global TRAIN_Q
    TRAIN_Q = tuple(np.quantile(y_train, [0.02, 0.98]))
    model = fit(X_train, y_train)
    val_pred = predict(model, X_val)
    both = pd.concat([train, val], ignore_index=True)
    X_test = features(test, both, TASK["test_timestamp"])
    if REFIT_ON_TRAIN_VAL:
        model = fit(
            pd.concat([X_train, X_val], ignore_index=True), both[TARGET].astype(float).to_numpy()
        )
    test_pred = predict(model, X_test)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", np.asarray(val_pred, dtype=np.float64))
    np.save(OUT / "test_predictions.npy", np.asarray(test_pred, dtype=np.float64))
    print(f"train rows {len(train)}, features {X_train.shape[1]}, {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
