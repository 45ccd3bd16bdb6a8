"""Write the leaderboards of the built-in competitions from a ladder of real simple models.

    uv run python plugins/rlab_mle/bench/make_leaderboards.py [--only ID,...]

The built-ins are not Kaggle competitions, so no human board exists. Each "team" here is
one scikit-learn or LightGBM model with fixed settings (prior-only dummies, single-feature
fits, naive Bayes, linear models over a grid of penalties, k-nearest neighbours, trees of
several depths, forests, boosting, boosting on native categoricals where the data has text
columns, kernel machines on small data), trained on the competition's public
train.csv and scored on its private answers with the competition's own grader. The board
lists them best first in mle-bench's leaderboard columns plus ``teamName`` (the model), so
its medal thresholds (Kaggle's rule on the board size) are those of this ladder.
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import warnings
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
from rlab_mle import competition_grading, registry
from rlab_mle.options import MleOptions
from sklearn.base import clone
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

BUILTINS = registry.BUILTIN_DIR


def scaled(model):
    return make_pipeline(SimpleImputer(), StandardScaler(), model)


def imputed(model):
    return make_pipeline(SimpleImputer(), model)


def classifiers(n_rows: int) -> dict[str, object]:
    """The classification ladder."""
    ladder: dict[str, object] = {"prior (dummy)": DummyClassifier(strategy="prior")}
    ladder["gaussian naive Bayes"] = imputed(GaussianNB())
    for c in (0.0003, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0):
        ladder[f"logistic regression C={c:g}"] = scaled(LogisticRegression(C=c, max_iter=2000))
    for k in (1, 3, 5, 10, 20, 50):
        ladder[f"k-nearest neighbours k={k}"] = scaled(KNeighborsClassifier(k))
    for depth in (1, 2, 3, 5, 8, None):
        ladder[f"decision tree depth={depth}"] = imputed(
            DecisionTreeClassifier(max_depth=depth, random_state=0)
        )
    for trees, depth in ((10, None), (100, 3), (100, None), (300, None)):
        ladder[f"random forest {trees} trees depth={depth}"] = imputed(
            RandomForestClassifier(trees, max_depth=depth, random_state=0, n_jobs=1)
        )
    ladder["extra trees 300"] = imputed(ExtraTreesClassifier(300, random_state=0, n_jobs=1))
    for rate, iters in ((0.1, 100), (0.05, 300)):
        ladder[f"hist gradient boosting lr={rate} {iters}"] = HistGradientBoostingClassifier(
            learning_rate=rate, max_iter=iters, random_state=0
        )
    for trees, leaves in ((100, 7), (300, 31), (1000, 15)):
        ladder[f"lightgbm {trees} trees {leaves} leaves"] = lgb.LGBMClassifier(
            n_estimators=trees, num_leaves=leaves, learning_rate=0.05, verbose=-1, n_jobs=1
        )
    if n_rows <= 5000:
        for c in (0.1, 1.0, 10.0):
            ladder[f"RBF SVM C={c:g}"] = scaled(SVC(C=c, probability=True, random_state=0))
    return ladder


def regressors(n_rows: int) -> dict[str, object]:
    """The regression ladder."""
    ladder: dict[str, object] = {
        "mean (dummy)": DummyRegressor(strategy="mean"),
        "median (dummy)": DummyRegressor(strategy="median"),
    }
    for alpha in (0.1, 1.0, 10.0, 100.0, 1000.0):
        ladder[f"ridge alpha={alpha:g}"] = scaled(Ridge(alpha=alpha))
    for alpha in (0.1, 1.0, 10.0):
        ladder[f"lasso alpha={alpha:g}"] = scaled(Lasso(alpha=alpha, max_iter=10000))
    for k in (1, 3, 5, 10, 20, 50):
        ladder[f"k-nearest neighbours k={k}"] = scaled(KNeighborsRegressor(k))
    for depth in (1, 2, 3, 5, 8, None):
        ladder[f"decision tree depth={depth}"] = imputed(
            DecisionTreeRegressor(max_depth=depth, random_state=0)
        )
    for trees, depth in ((10, None), (100, 3), (100, None), (300, None)):
        ladder[f"random forest {trees} trees depth={depth}"] = imputed(
            RandomForestRegressor(trees, max_depth=depth, random_state=0, n_jobs=1)
        )
    ladder["extra trees 300"] = imputed(ExtraTreesRegressor(300, random_state=0, n_jobs=1))
    for rate, iters in ((0.1, 100), (0.05, 300)):
        ladder[f"hist gradient boosting lr={rate} {iters}"] = HistGradientBoostingRegressor(
            learning_rate=rate, max_iter=iters, random_state=0
        )
    for trees, leaves in ((100, 7), (300, 31), (1000, 15)):
        ladder[f"lightgbm {trees} trees {leaves} leaves"] = lgb.LGBMRegressor(
            n_estimators=trees, num_leaves=leaves, learning_rate=0.05, verbose=-1, n_jobs=1
        )
    if n_rows <= 5000:
        for c in (1.0, 10.0, 100.0):
            ladder[f"RBF SVR C={c:g}"] = scaled(SVR(C=c))
    return ladder


def encode(
    train: pd.DataFrame, test: pd.DataFrame, drop: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Numbers as they are; other columns as integer codes shared by train and test."""
    columns = [c for c in train.columns if c not in drop and c in test.columns]
    both = pd.concat([train[columns], test[columns]], ignore_index=True)
    for column in columns:
        if not pd.api.types.is_numeric_dtype(both[column]):
            both[column] = pd.factorize(both[column].astype(str))[0].astype(float)
    return both.iloc[: len(train)].reset_index(drop=True), both.iloc[len(train) :].reset_index(
        drop=True
    )


def native_rungs(regression: bool) -> dict[str, object]:
    """Stronger rungs for data with text columns: boosting on native categoricals."""
    kind = lgb.LGBMRegressor if regression else lgb.LGBMClassifier
    boosting = HistGradientBoostingRegressor if regression else HistGradientBoostingClassifier
    return {
        "lightgbm native categoricals 300 trees": kind(
            n_estimators=300, learning_rate=0.05, verbose=-1, n_jobs=1
        ),
        "lightgbm native categoricals 1000 trees 63 leaves": kind(
            n_estimators=1000, num_leaves=63, learning_rate=0.03, verbose=-1, n_jobs=1
        ),
        "hist gradient boosting native categoricals": boosting(
            categorical_features="from_dtype", max_iter=300, random_state=0
        ),
    }


def categorical(
    train: pd.DataFrame, test: pd.DataFrame, drop: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Numbers as they are; other columns as pandas categories (up to 255 levels, else counts)."""
    columns = [c for c in train.columns if c not in drop and c in test.columns]
    both = pd.concat([train[columns], test[columns]], ignore_index=True)
    for column in columns:
        if not pd.api.types.is_numeric_dtype(both[column]):
            values = both[column].astype(str)
            if values.nunique() <= 255:
                both[column] = values.astype("category")
            else:
                both[column] = values.map(values.value_counts()).astype(float)
    split = len(train)
    return both.iloc[:split].reset_index(drop=True), both.iloc[split:].reset_index(drop=True)


def ladder_scores(competition) -> list[tuple[str, float]]:
    """(model, test score) for every rung of the ladder."""
    sample = pd.read_csv(competition.sample_submission)
    id_column, targets = sample.columns[0], list(sample.columns[1:])
    train = pd.read_csv(competition.public_dir / "train.csv")
    test = pd.read_csv(competition.public_dir / "test.csv")
    answers = competition_grading.read_frame(competition.answers)
    label = "label" if "label" in train.columns and targets[0] not in train.columns else None
    truth = label or targets[0]
    x_train, x_test = encode(train, test, [id_column, truth])
    y = train[truth].to_numpy()
    regression = competition.grader_name in ("root-mean-squared-error", "mean-column-wise-rmsle")
    ladder = (regressors if regression else classifiers)(len(train))
    rungs = [(name, model, x_train, x_test) for name, model in ladder.items()]
    if any(not pd.api.types.is_numeric_dtype(train[c]) for c in x_train.columns):
        cat_train, cat_test = categorical(train, test, [id_column, truth])
        rungs += [(n, m, cat_train, cat_test) for n, m in native_rungs(regression).items()]
    # a weak rung: a model of the first feature only
    first = x_train.columns[0]
    rungs.append((f"single feature '{first}'", None, x_train[[first]], x_test[[first]]))
    scores = []
    for name, model, fit_x, pred_x in rungs:
        estimator = (
            clone(model)
            if model is not None
            else (scaled(Ridge(1.0)) if regression else scaled(LogisticRegression(max_iter=2000)))
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(fit_x, y)
            if regression:
                pred = estimator.predict(pred_x)
                if "rmsle" in competition.grader_name:
                    pred = np.clip(pred, 0, None)
                values = {targets[0]: pred}
            else:
                proba = estimator.predict_proba(pred_x)
                classes = [str(c) for c in estimator.classes_]
                if label:
                    values = {
                        t: proba[:, classes.index(t)] if t in classes else 0.0 for t in targets
                    }
                else:
                    values = {targets[0]: proba[:, classes.index("1")]}
        submission = pd.DataFrame({id_column: test[id_column], **values})
        score = competition_grading.grade(
            competition, submission, answers, competition.sample_submission
        )
        scores.append((name, score))
        print(f"  {name:<45} {score:.5f}", flush=True)
    return scores


def write_board(path: Path, scores: list[tuple[str, float]], higher_is_better: bool) -> None:
    """mle-bench's leaderboard columns (plus teamName), best first."""
    ranked = sorted(scores, key=lambda item: -item[1] if higher_is_better else item[1])
    day = dt.date.today().isoformat() + " 00:00:00"
    frame = pd.DataFrame(
        {
            "scoreNullable": [f"{s:.5f}" for _, s in ranked],
            "teamId": range(1, len(ranked) + 1),
            "hasTeamName": True,
            "submissionDate": day,
            "score": [s for _, s in ranked],
            "hasScore": True,
            "teamName": [name for name, _ in ranked],
        }
    )
    frame.to_csv(path, index=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]
    with tempfile.TemporaryDirectory() as cache:
        found = registry.Registry(MleOptions(), Path(cache))
        for cid in found.builtin_ids():
            if wanted and cid not in wanted:
                continue
            competition = found.get(cid)
            registry.ensure_builtin(competition)
            print(f"{cid} ({competition.grader_name})", flush=True)
            scores = ladder_scores(competition)
            higher = competition_grading.higher_is_better(competition)
            write_board(BUILTINS / cid / "leaderboard.csv", scores, higher)


if __name__ == "__main__":
    main()
