"""LightGBM lambdarank over lagged history: user, video, author and user-video aggregates.

Every aggregate of a row on day d uses only labelled rows of days strictly before d, so
train, val and test rows see history built the same way. Queries are users; a user with
more than QUERY_LIMIT rows in a split is cut into consecutive chunks (LightGBM refuses
queries over 10,000 rows). Writes val_predictions.npy and test_predictions.npy in row order.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

# lightgbm imports scikit-learn (and scipy.stats) for its optional sklearn API whenever it is
# installed: ~2 s of every run even from compiled bytecode. This seed uses only the core API;
# delete this line to use scikit-learn here.
sys.modules.setdefault("sklearn", None)  # type: ignore[arg-type]
import lightgbm as lgb  # noqa: E402

DATA = Path(os.environ.get("RLAB_DATA_DIR", "."))
OUT = Path(os.environ.get("RLAB_OUTPUT_DIR", "."))
DEBUG = "--debug" in sys.argv
THREADS = int(os.environ.get("RLAB_THREADS", "2"))
SEED = int(os.environ.get("RLAB_SEED", "0"))

# a trailing "tune:" comment declares a value that tuning may set, and its range
# pseudo-rows at the training rate that shrink every history rate
PRIOR = 20.0  # tune: float 1.0..200.0 log
QUERY_LIMIT = 10_000
# history: (name, key columns, window in days or None for all earlier days)
HISTORY = [
    ("user", ["user_id"], None),
    ("video", ["video_id"], None),
    ("author", ["author_id"], None),
    ("user_video", ["user_id", "video_id"], None),
]
# recency-decayed history: (name, key columns, half-life in days); each earlier day counts
# 0.5 ** (age / half-life)
DECAYED: list[tuple[str, list[str], float]] = []
# history additions (one line each)
EXTRA_FEATURES = ["tab", "hour", "duration_s", "video_age_days"]
# feature additions (one line each)
PARAMS = {
    "objective": "lambdarank",
    "lambdarank_truncation_level": 20,  # tune: int 5..50 log
    "lambdarank_norm": True,
    "eval_at": [5],
    "learning_rate": 0.08,  # tune: float 0.01..0.3 log
    "num_leaves": 31,  # tune: int 8..255 log
    "min_data_in_leaf": 50,  # tune: int 5..500 log
    "feature_fraction": 0.9,  # tune: float 0.5..1.0
    "lambda_l2": 1e-8,  # tune: float 1e-8..10.0 log
    "verbose": -1,
}
ROUNDS = 250
EARLY_STOPPING = 20
REFIT_ON_VAL_FOR_TEST = False


def load() -> tuple[pd.DataFrame, pd.DataFrame]:
    """All rows of the three splits in one frame (split, row_id kept) and the video table."""
    limit = 20_000 if DEBUG else None
    parts = []
    for split in ("train", "val", "test"):
        frame = pd.read_csv(DATA / f"{split}.csv", nrows=limit)
        frame["split"] = split
        parts.append(frame)
    rows = pd.concat(parts, ignore_index=True)
    videos = pd.read_csv(DATA / "video_features_basic.csv")
    return rows, videos


def derive(rows: pd.DataFrame, videos: pd.DataFrame) -> pd.DataFrame:
    """Columns known at impression time, for every split alike."""
    rows["day"] = (pd.to_datetime(rows["date"].astype(str)) - pd.Timestamp("2022-04-08")).dt.days
    rows["hour"] = rows["hourmin"] // 100
    video = videos.set_index("video_id")
    rows["author_id"] = rows["video_id"].map(video["author_id"]).fillna(-1).astype(np.int64)
    duration = rows["duration_ms"].fillna(rows["video_id"].map(video["video_duration"]))
    rows["duration_s"] = duration / 1000.0
    upload = pd.to_datetime(rows["video_id"].map(video["upload_dt"]), errors="coerce")
    rows["video_age_days"] = (pd.to_datetime(rows["date"].astype(str)) - upload).dt.days
    rows["labelled"] = rows["long_view"].notna().astype(float)
    rows["positive"] = rows["long_view"].fillna(0.0)
    for column in ("day", "hour"):
        rows[column] = rows[column].astype(np.int64)
    stats = pd.read_csv(DATA / "video_features_statistic.csv").set_index("video_id")
    rows["video_play_progress"] = rows["video_id"].map(stats["play_progress"])
    rows["video_complete_rate"] = rows["video_id"].map(
        stats["complete_play_cnt"] / stats["show_cnt"].clip(lower=1)
    )
    users = pd.read_csv(DATA / "user_features.csv").set_index("user_id")
    for column in ("register_days", "follow_user_num", "is_video_author"):
        rows[column] = rows["user_id"].map(users[column])
    pass  # derived columns
    return rows


def lagged(rows: pd.DataFrame, name: str, keys: list[str], window: int | None) -> None:
    """Add ``{name}_shows``, ``{name}_n`` and ``{name}_rate`` from days strictly before each row's."""
    values = ["shows", "n", "pos"]
    daily = rows.groupby([*keys, "day"]).agg(
        shows=("day", "size"), n=("labelled", "sum"), pos=("positive", "sum")
    )
    daily = daily.reset_index()
    inclusive = daily.groupby(keys)[values].cumsum()
    before = inclusive - daily[values]
    if window is not None:
        # subtract what was already there on day d - window - 1 (the last day outside the window)
        table = daily[[*keys, "day"]].assign(**{v: inclusive[v] for v in values})
        table = table.rename(columns={"day": "cut"}).sort_values("cut")
        probe = daily[[*keys]].assign(cut=daily["day"] - window - 1).reset_index()
        old = pd.merge_asof(
            probe.sort_values("cut"), table, on="cut", by=keys, direction="backward"
        )
        old = old.set_index("index").sort_index()
        before = before - old[values].fillna(0.0).to_numpy()
    daily[values] = before
    merged = rows[[*keys, "day"]].merge(daily, on=[*keys, "day"], how="left")
    overall = rows.loc[rows["split"] == "train", "positive"].mean()
    rows[f"{name}_shows"] = merged["shows"].to_numpy()
    rows[f"{name}_n"] = merged["n"].to_numpy()
    rows[f"{name}_rate"] = ((merged["pos"] + PRIOR * overall) / (merged["n"] + PRIOR)).to_numpy()


def decayed(rows: pd.DataFrame, name: str, keys: list[str], half_life: float) -> None:
    """Add ``{name}_n`` and ``{name}_rate`` from earlier days, weighted by 0.5 ** (age / half-life)."""
    daily = rows.groupby([*keys, "day"]).agg(n=("labelled", "sum"), pos=("positive", "sum"))
    daily = daily.reset_index()
    # sum_{t<d} x_t 2^(-(d-t)/h) = 2^(-d/h) * sum_{t<d} x_t 2^(t/h); days < 40, no overflow
    grow = np.exp2(daily["day"].to_numpy() / half_life)[:, None]
    weighted = daily[["n", "pos"]] * grow
    inclusive = weighted.groupby([daily[k] for k in keys]).cumsum()
    daily[["n", "pos"]] = (inclusive - weighted) / grow
    merged = rows[[*keys, "day"]].merge(daily, on=[*keys, "day"], how="left")
    overall = rows.loc[rows["split"] == "train", "positive"].mean()
    rows[f"{name}_n"] = merged["n"].to_numpy()
    rows[f"{name}_rate"] = ((merged["pos"] + PRIOR * overall) / (merged["n"] + PRIOR)).to_numpy()


def query_sizes(users: np.ndarray) -> list[int]:
    """Sizes of consecutive user queries, each cut to at most QUERY_LIMIT rows."""
    _, counts = np.unique(users, return_counts=True)  # users are sorted
    sizes = []
    for count in counts:
        full, rest = divmod(int(count), QUERY_LIMIT)
        sizes += [QUERY_LIMIT] * full + ([rest] if rest else [])
    return sizes


def dataset(frame: pd.DataFrame, features: list[str]) -> lgb.Dataset:
    ordered = frame.sort_values("user_id", kind="stable")
    return lgb.Dataset(
        ordered[features],
        ordered["long_view"],
        group=query_sizes(ordered["user_id"].to_numpy()),
        free_raw_data=False,
    )


def main() -> None:
    rows = derive(*load())
    features = list(EXTRA_FEATURES)
    for name, keys, window in HISTORY:
        lagged(rows, name, keys, window)
        features += [f"{name}_shows", f"{name}_n", f"{name}_rate"]
    for name, keys, half_life in DECAYED:
        decayed(rows, name, keys, half_life)
        features += [f"{name}_n", f"{name}_rate"]
    train, val, test = (rows[rows["split"] == s] for s in ("train", "val", "test"))
    params = {**PARAMS, "num_threads": THREADS, "seed": SEED}
    model = lgb.train(
        params,
        dataset(train, features),
        ROUNDS,
        valid_sets=[dataset(val, features)],
        callbacks=[lgb.early_stopping(EARLY_STOPPING, verbose=False)],
    )
    rounds = model.best_iteration or ROUNDS
    print(
        f"history_lgbm: {len(features)} features, best round {rounds}, val ndcg@5 {model.best_score}"
    )
    val_scores = model.predict(val[features], num_iteration=rounds)
    if REFIT_ON_VAL_FOR_TEST:
        model = lgb.train(params, dataset(pd.concat([train, val]), features), rounds)
    test_scores = model.predict(test[features], num_iteration=model.best_iteration or rounds)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "val_predictions.npy", np.asarray(val_scores, float))
    np.save(OUT / "test_predictions.npy", np.asarray(test_scores, float))


if __name__ == "__main__":
    main()
