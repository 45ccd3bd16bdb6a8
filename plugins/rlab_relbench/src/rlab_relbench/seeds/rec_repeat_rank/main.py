# ruff: noqa: E402
"""Seed for recommendation: repeat behaviour backfilled with popularity, re-ranked by LightGBM.

Works on any RelBench recommendation task. It finds the table that links the source and
destination tables (with a time column) and, for each label row, builds candidates: the
source's past destinations strictly before the seed time (time-decayed frequency over two
half-lives, count, recency) plus the destinations most popular in the last POP_DAYS days.
A LightGBM lambdarank model trained on train rows re-ranks them; rows are filled up to K
with popular destinations. Validation features are censored at the validation cutoff as
test features are at the test cutoff (the database ends there).
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

# a trailing "tune:" comment declares a value that tuning may set, and its range
HALF_LIVES_DAYS = [7, 60]
POP_DAYS = 30  # tune: int 3..90 log
POP_CANDIDATES = 20  # tune: int 5..100 log
MAX_TRAIN_ROWS = 12_000
RERANK = True
PARAMS = {
    "objective": "lambdarank",
    "learning_rate": 0.05,  # tune: float 0.01..0.3 log
    "num_leaves": 31,  # tune: int 8..255 log
    "min_data_in_leaf": 50,  # tune: int 5..500 log
    "verbose": -1,
}
NUM_ROUNDS = 150  # tune: int 50..1000 log
# settings (one line each)

SCHEMA = yaml.safe_load((DATA / "dataset.yaml").read_text())
TASK = yaml.safe_load((DATA / "task.yaml").read_text())
SRC, DST = TASK["src_entity_col"], TASK["dst_entity_col"]
TIME, K = TASK["time_col"], int(TASK["eval_k"])
con = duckdb.connect()
con.execute(f"SET threads={THREADS}")


def link_table():
    """The table with a time column and foreign keys to both the source and destination tables."""
    best = None
    for name, spec in SCHEMA["tables"].items():
        fkeys = spec.get("fkeys") or {}
        srcs = [c for c, t in fkeys.items() if t == TASK["src_entity_table"]]
        dsts = [c for c, t in fkeys.items() if t == TASK["dst_entity_table"]]
        if spec.get("time_col") and srcs and dsts:
            src = SRC if SRC in srcs else srcs[0]
            dst = DST if DST in dsts else dsts[-1]
            best = best or (name, src, dst, spec["time_col"])
    return best


TABLE, SRC_FK, DST_FK, LINK_TIME = link_table()
con.execute(
    f"""CREATE TABLE events AS SELECT "{SRC_FK}" AS src, "{DST_FK}" AS dst, "{LINK_TIME}" AS t
    FROM read_parquet('{DATA / "db" / TABLE}.parquet') WHERE "{SRC_FK}" IS NOT NULL AND "{DST_FK}" IS NOT NULL"""
)


def candidates(labels):
    """Candidate (row, dst) pairs with repeat and popularity features."""
    con.register("labels", labels[["__row", SRC, "__asof"]])
    decays = ", ".join(
        f"SUM(exp(-date_diff('hour', e.t, l.__asof) / (24.0 * {h}))) AS dec_{h}"
        for h in HALF_LIVES_DAYS
    )
    hist = con.execute(f"""SELECT l.__row, e.dst, COUNT(*) AS cnt, {decays},
            MIN(date_diff('hour', e.t, l.__asof)) / 24.0 AS days_since
        FROM labels l JOIN events e ON e.src = l."{SRC}" AND e.t < l.__asof
        GROUP BY l.__row, e.dst""").df()
    pop = con.execute(f"""SELECT a.__asof, e.dst, COUNT(*) AS pop
        FROM (SELECT DISTINCT __asof FROM labels) a JOIN events e
          ON e.t < a.__asof AND e.t >= a.__asof - INTERVAL {POP_DAYS} DAY
        GROUP BY a.__asof, e.dst""").df()
    pop["pop_rank"] = pop.groupby("__asof")["pop"].rank(ascending=False, method="first")
    top = pop[pop["pop_rank"] <= POP_CANDIDATES]
    backfill = labels[["__row", "__asof"]].merge(top[["__asof", "dst"]], on="__asof")[
        ["__row", "dst"]
    ]
    pairs = pd.concat([hist[["__row", "dst"]], backfill]).drop_duplicates()
    pairs = pairs.merge(hist, on=["__row", "dst"], how="left")
    pairs = pairs.merge(labels[["__row", "__asof"]], on="__row").merge(
        pop, on=["__asof", "dst"], how="left"
    )
    pairs = pairs.fillna(
        {
            "cnt": 0,
            "pop": 0,
            "pop_rank": 1e4,
            "days_since": 1e4,
            **{f"dec_{h}": 0 for h in HALF_LIVES_DAYS},
        }
    )
    pairs["share"] = pairs["cnt"] / pairs.groupby("__row")["cnt"].transform("sum").clip(lower=1)
    # extra features (one line each)
    pairs["heuristic"] = pairs[f"dec_{HALF_LIVES_DAYS[0]}"] + 1e-3 * pairs["pop"] / max(
        1.0, pairs["pop"].max()
    )
    return pairs.sort_values(["__row", "dst"]).reset_index(drop=True)


def prepare(labels, cutoff=None):
    labels = labels.reset_index(drop=True).copy()
    labels["__row"] = np.arange(len(labels))
    seed = pd.to_datetime(labels[TIME])
    labels["__asof"] = seed if cutoff is None else seed.clip(upper=pd.Timestamp(cutoff))
    return labels, candidates(labels)


FEATURES = ["cnt", "days_since", "pop", "pop_rank", "share", "heuristic"]


def top_k(pairs, score, rows):
    pairs = pairs.assign(score=score).sort_values(["__row", "score"], ascending=[True, False])
    ranked = pairs.groupby("__row")["dst"].apply(list).to_dict()
    fill = pairs.groupby("dst")["pop"].max().sort_values(ascending=False).index.tolist()
    out = np.zeros((rows, K), dtype=np.int64)
    for row in range(rows):
        chosen = list(dict.fromkeys(ranked.get(row, [])))[:K]
        for dst in fill:
            if len(chosen) == K:
                break
            if dst not in chosen:
                chosen.append(dst)
        extra = 0
        while len(chosen) < K:  # tiny catalogues: any unused id
            if extra not in chosen:
                chosen.append(extra)
            extra += 1
        out[row] = chosen
    return out


def main():
    train = pd.read_parquet(DATA / "train.parquet")
    val = pd.read_parquet(DATA / "val.parquet")
    test = pd.read_parquet(DATA / "test.parquet")
    limit = 2000 if DEBUG else MAX_TRAIN_ROWS
    if len(train) > limit:
        train = train.sort_values(TIME, kind="stable").iloc[-limit:]
    val_l, val_c = prepare(val, TASK["val_timestamp"])
    test_l, test_c = prepare(test, TASK["test_timestamp"])
    feats = FEATURES + [f"dec_{h}" for h in HALF_LIVES_DAYS]  # after candidates() added any
    if RERANK:
        train_l, train_c = prepare(train)
        truth = train_l[["__row", DST]].explode(DST).rename(columns={DST: "dst"}).dropna()
        truth = truth.assign(y=1).astype({"dst": "int64"})
        train_c = train_c.merge(truth, on=["__row", "dst"], how="left").fillna({"y": 0})
        groups = train_c.groupby("__row").size().to_numpy()
        params = {**PARAMS, "num_threads": THREADS, "seed": SEED, "eval_at": [K]}
        model = lgb.train(
            params,
            lgb.Dataset(train_c[feats], train_c["y"], group=groups),
            num_boost_round=20 if DEBUG else NUM_ROUNDS,
        )
        val_score, test_score = model.predict(val_c[feats]), model.predict(test_c[feats])
    else:
        val_score, test_score = val_c["heuristic"].to_numpy(), test_c["heuristic"].to_numpy()
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", top_k(val_c, val_score, len(val_l)))
    np.save(OUT / "test_predictions.npy", top_k(test_c, test_score, len(test_l)))
    print(f"candidates per row: val {len(val_c) / max(1, len(val_l)):.1f}")


if __name__ == "__main__":
    main()
