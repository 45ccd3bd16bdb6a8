"""Real moves for the offline playbook agent: anchored edits of the tabular seed's main.py.

Setting moves add one line under ``# setting changes (one line each)``; feature moves add a
builder function under ``# feature builders (one block each)`` and one call under
``# feature steps (one line each)``. Every move keeps the markers, so moves compose in any
order along a lineage. LightGBM's tunable values (``# tune:`` declarations in ``PARAMS``) are
set by rewriting their declaration lines, as a tuning trial does: such a move applies only
while the lines hold the seed's values, so it never overrides a tuned value, and no two
moves set the same value. ``moves_for`` offers only the moves that fit a competition (a log
target only for regression, class weights only for classification, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlab_core.api import Edit, PlaybookMove, seed_setting

#: The seed whose declared parameters setting moves rewrite, line by line
SEED_DIR = Path(__file__).parent / "seeds" / "tabular_lgbm"
SETTINGS = "# setting changes (one line each)\n"
BUILDERS = "# feature builders (one block each)\n"
STEPS = "    # feature steps (one line each)\n"

TARGET_ENCODE = '''

def target_encode(out, both, columns, y, is_train, folds=5, prior=20.0):
    """Out-of-fold smoothed target mean per value of each non-numeric column."""
    y = np.asarray(y, dtype=float)
    mean = float(y.mean())
    fold = np.random.default_rng(SEED).integers(0, folds, int(is_train.sum()))

    def encode(keys, values, lookup):
        stats = pd.DataFrame({"k": keys, "y": values}).groupby("k")["y"].agg(["sum", "count"])
        table = (stats["sum"] + prior * mean) / (stats["count"] + prior)
        return pd.Series(lookup).map(table).fillna(mean).to_numpy(dtype=float)

    for column in columns:
        if is_numeric(both[column]):
            continue
        keys = both[column].astype("string").fillna("<NA>").to_numpy(dtype=object)
        train_keys, encoded = keys[is_train], np.empty(len(both))
        encoded[~is_train] = encode(train_keys, y, keys[~is_train])
        inside = np.empty(len(train_keys))
        for f in range(folds):
            inside[fold == f] = encode(train_keys[fold != f], y[fold != f], train_keys[fold == f])
        encoded[is_train] = inside
        out[column + "__te"] = encoded
    return out
'''

TEXT_SVD = '''

def text_svd(out, both, columns, components=16):
    """TF-IDF of the words (and word pairs) of each text column, cut to a few SVD components."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    for column in text_columns(both, columns):
        docs = both[column].astype("string").fillna("").to_numpy(dtype=str)
        matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(docs)
        k = min(components, matrix.shape[1] - 1)
        if k >= 1:
            reduced = TruncatedSVD(k, random_state=SEED).fit_transform(matrix)
            for i in range(k):
                out[f"{column}__svd{i}"] = reduced[:, i]
    return out
'''

COUNT_ENCODE = '''

def count_encode(out, both, columns):
    """How often each value of a non-numeric column occurs in train, val and test together."""
    for column in columns:
        if not is_numeric(both[column]) and column + "__count" not in out:
            text = both[column].astype("string")
            out[column + "__count"] = text.map(text.value_counts()).astype(float)
    return out
'''

ROW_STATS = '''

def row_stats(out, both, columns):
    """Row-wise summaries of the numeric columns: level, spread, extremes, zeros, gaps."""
    numeric = both[[c for c in columns if is_numeric(both[c])]].astype(float)
    out["row__mean"] = numeric.mean(axis=1)
    out["row__std"] = numeric.std(axis=1)
    out["row__min"] = numeric.min(axis=1)
    out["row__max"] = numeric.max(axis=1)
    out["row__zeros"] = (numeric == 0).sum(axis=1).astype(float)
    out["row__missing"] = numeric.isna().sum(axis=1).astype(float)
    return out
'''


def _setting(move_id: str, line: str, hypothesis: str, rank: int) -> PlaybookMove:
    return PlaybookMove.adding_line(
        move_id, SETTINGS, line, hypothesis, rank=rank, family="tabular"
    )


def _declared(values: dict[str, Any]) -> list[Edit]:
    """Edits that set the seed's declared ``values`` on their declaration lines."""
    return seed_setting(SEED_DIR, values)


def _tuned(
    move_id: str, values: dict[str, Any], hypothesis: str, rank: int, line: str = ""
) -> PlaybookMove:
    """A move that sets declared values (and adds ``line`` under the setting changes)."""
    extra = [Edit(file="main.py", anchor=SETTINGS, replacement=SETTINGS + line + "\n")]
    return PlaybookMove(
        id=move_id,
        hypothesis=hypothesis,
        edits=[*(extra if line else []), *_declared(values)],
        family="tabular",
        rank=rank,
    )


def _feature(move_id: str, builder: str, step: str, hypothesis: str, rank: int) -> PlaybookMove:
    """A builder function under ``BUILDERS`` (a blank line after it) and its call under ``STEPS``."""
    return PlaybookMove(
        id=move_id,
        hypothesis=hypothesis,
        edits=[
            Edit(
                file="main.py", anchor=BUILDERS, replacement=BUILDERS + builder.lstrip("\n") + "\n"
            ),
            Edit(file="main.py", anchor=STEPS, replacement=STEPS + f"    {step}\n"),
        ],
        family="tabular",
        rank=rank,
    )


MOVES: dict[str, PlaybookMove] = {
    move.id: move
    for move in [
        _setting(
            "cv-ensemble",
            "CV_FOLDS = 5",
            "Train five fold models with early stopping on each held-out fold and average "
            "them: the number of trees then fits the data and averaging cuts variance.",
            10,
        ),
        _setting(
            "log-target",
            "LOG_TARGET = True",
            "Fit log1p of the target and predict expm1: a skewed positive target is modelled "
            "on the scale a log-error metric scores and large values stop dominating the fit.",
            15,
        ),
        _tuned(
            "regularise",
            {"min_child_samples": 40, "reg_lambda": 5.0, "colsample_bytree": 0.7},
            "Regularise the trees (bigger leaves, L2 on leaf values, feature subsampling): "
            "the training data is small next to the model's capacity.",
            20,
        ),
        _feature(
            "text-tfidf-svd",
            TEXT_SVD,
            "out = text_svd(out, both, columns)",
            "Add TF-IDF + SVD components of the text columns: the words themselves carry "
            "signal that length and word counts miss.",
            25,
        ),
        _feature(
            "target-encoding",
            TARGET_ENCODE,
            "out = target_encode(out, both, columns, y, is_train)",
            "Add out-of-fold smoothed target means of the categorical columns: high-cardinality "
            "codes become one informative number without leaking a row's own label.",
            30,
        ),
        _feature(
            "row-stats",
            ROW_STATS,
            "out = row_stats(out, both, columns)",
            "Add row-wise mean, spread, extremes, zero and missing counts of the numeric "
            "columns: they summarise a row in ways single-feature splits find late.",
            35,
        ),
        _feature(
            "count-encoding",
            COUNT_ENCODE,
            "out = count_encode(out, both, columns)",
            "Add the frequency of every categorical value: how common a value is often "
            "predicts as much as which value it is.",
            40,
        ),
        _setting(
            "class-weights",
            'CLASS_WEIGHT = "balanced"',
            "Weight classes inversely to their frequency: the minority class then shapes the "
            "trees as much as the majority does.",
            50,
        ),
        _tuned(
            "seed-bagging",
            {"subsample": 0.8},
            "Average three models trained on different row samples: bagging reduces the "
            "variance of one boosted model at little risk.",
            60,
            line="BAGS = 3",
        ),
        _tuned(
            "more-capacity",
            {"num_leaves": 63, "n_estimators": 600, "learning_rate": 0.03},
            "Give the model more capacity (more leaves, more trees at a slower rate): the "
            "default may underfit the interactions in the data.",
            70,
        ),
    ]
}


def moves_for(facts: dict[str, Any]) -> list[PlaybookMove]:
    """The moves that fit a competition, from its task facts."""
    kinds = facts.get("feature_kinds", {})
    prediction = facts.get("prediction")
    non_numeric = bool(kinds.get("categorical") or kinds.get("code"))
    binary = prediction in ("probability", "label") and not facts.get("label_column")
    binary = binary and facts.get("n_classes") == 2
    fits = {
        "log-target": prediction == "value",
        "class-weights": prediction in ("probability", "label", "ranking"),
        "target-encoding": non_numeric and (prediction == "value" or binary),
        "count-encoding": non_numeric,
        "text-tfidf-svd": bool(kinds.get("text")),
        "row-stats": len(kinds.get("numeric", [])) >= 8,
    }
    return [move for move_id, move in MOVES.items() if fits.get(move_id, True)]
