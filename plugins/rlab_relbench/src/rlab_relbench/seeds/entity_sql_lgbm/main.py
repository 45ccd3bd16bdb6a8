# ruff: noqa: E402
"""Seed: time-censored DuckDB SQL aggregates over the related tables, then LightGBM.

Works on any RelBench entity task (binary classification or regression): it reads the
schema from $RLAB_DATA_DIR/dataset.yaml and the task from task.yaml. For every table
with a foreign key to the entity table and a time column, it aggregates that table's
rows strictly before each row's as-of time (counts over several windows, means and maxima
of its numeric columns, recency), joins the entity table's own columns, and fits LightGBM
on train. Validation predictions come from the train-only model (out-of-sample); the
test predictions come from a refit on train+val.

Every split is featurised the same way. The candidate's database ends at the test
cutoff, so all test rows (seed times test_timestamp + k * timedelta) see the database as
of test_timestamp; val rows are cut at val_timestamp, and train rows, whose seed times
step back from val_timestamp by timedelta, are cut into blocks of num_eval_timestamps
seed times, each seen as of its first seed time. So a train row that is k windows past
its block's start looks like a val or test row k windows past the cutoff. No feature
says where in its block a row is: that would only let the model learn each validation
week's base rate and replay it on the test weeks.
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
# feature switches (one line each)
# LightGBM's settings: a trailing "tune:" comment declares a value that tuning may set, and
# its range. Rows are re-drawn every iteration (bagging_freq 1), so a bagging_fraction below
# 1.0 takes effect (at 1.0 nothing is drawn); L2 at 1e-8 is off in effect.
PARAMS = {
    "learning_rate": 0.05,  # tune: float 0.01..0.3 log
    "num_leaves": 31,  # tune: int 8..255 log
    "min_data_in_leaf": 50,  # tune: int 5..500 log
    "feature_fraction": 0.9,  # tune: float 0.5..1.0
    "bagging_fraction": 1.0,  # tune: float 0.5..1.0
    "bagging_freq": 1,
    "lambda_l2": 1e-8,  # tune: float 1e-8..10.0 log
    "verbose": -1,
}
NUM_ROUNDS = 200  # tune: int 50..1000 log
REGRESSION_OBJECTIVE = "regression"
REFIT_ON_TRAIN_VAL = True
TRAIN_HALF_LIFE_DAYS = None  # recency weighting of training rows; None = equal weights
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
    """Aggregates of every table pointing at the entity table, strictly before each as-of time."""
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
    drop = [c for c in entity.columns if c in (spec.get("time_col"), TARGET)]  # autocomplete
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
    """Mean, count and last of the entity's earlier labels whose window ended by the as-of time."""
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


def as_of(seed, anchor):
    """The time each row sees the database as of: the start of its block of eval windows.

    ``anchor`` is the split's cutoff (val_timestamp for train and val, test_timestamp for
    test). Seed times at or after it belong to the block that starts there; earlier ones
    (train) to blocks of num_eval_timestamps windows stepping back from it.
    """
    if TASK.get("kind") == "autocomplete":  # the database is not truncated: rows see up to now
        return seed
    span = pd.Timedelta(TASK["timedelta"]) * int(TASK["num_eval_timestamps"])
    anchor = pd.Timestamp(anchor)
    blocks = np.ceil((anchor - seed) / span).clip(lower=0)
    return anchor - span * blocks


def features(labels, history, anchor):
    """Features of each label row as of its block start (see ``as_of``)."""
    labels = labels.reset_index(drop=True).copy()
    labels["__row"] = np.arange(len(labels))
    labels["__asof"] = as_of(pd.to_datetime(labels[TIME]), anchor)
    parts = [entity_features(labels), *related_features(labels)]
    if LABEL_HISTORY:
        parts.append(label_history(labels, history))
    X = pd.concat(parts, axis=1).sort_index()
    # derived features (one line each)
    return X


def fit(X, y, when):
    params = {
        **PARAMS,
        "objective": "binary" if BINARY else REGRESSION_OBJECTIVE,
        "num_threads": THREADS,
        "seed": SEED,
    }
    weight = None
    if TRAIN_HALF_LIFE_DAYS:
        age = (when.max() - when).dt.total_seconds().to_numpy() / 86400
        weight = 0.5 ** (age / TRAIN_HALF_LIFE_DAYS)
    data = lgb.Dataset(X, y, weight=weight)
    return lgb.train(params, data, num_boost_round=NUM_ROUNDS if not DEBUG else 20)


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
    X_train = features(train, train, TASK["val_timestamp"])
    X_val = features(val, train, TASK["val_timestamp"])
    y_train = train[TARGET].astype(float).to_numpy()
    global TRAIN_Q
    TRAIN_Q = tuple(np.quantile(y_train, [0.02, 0.98]))
    model = fit(X_train, y_train, pd.to_datetime(train[TIME]))
    val_pred = predict(model, X_val)
    both = pd.concat([train, val], ignore_index=True)
    X_test = features(test, both, TASK["test_timestamp"])
    if REFIT_ON_TRAIN_VAL:
        X_both = pd.concat([X_train, X_val], ignore_index=True)
        model = fit(X_both, both[TARGET].astype(float).to_numpy(), pd.to_datetime(both[TIME]))
    test_pred = predict(model, X_test)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", np.asarray(val_pred, dtype=np.float64))
    np.save(OUT / "test_predictions.npy", np.asarray(test_pred, dtype=np.float64))
    print(f"train rows {len(train)}, features {X_train.shape[1]}, {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
