"""One grader per metric name (the competition config's ``grader.name``), with mle-bench's
input checks; :mod:`rlab_mle.competition_grading` grades a whole submission with them.

A grader takes ``(submission, answers)`` frames, refuses a malformed submission with
:class:`InvalidSubmission` (one sentence per problem: columns, length, duplicate or unknown
ids, missing values, non-numeric values, probabilities outside [0, 1]), aligns rows by id
and applies the metric of :mod:`rlab_mle.metrics`. The id column is the sample
submission's first column and the target columns are the rest, as in mle-bench.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from rlab_core.api import ConfigError
from rlab_mle import metrics
from rlab_mle.targets import find_label_column

Prediction = Literal["probability", "label", "value", "ranking"]
MLEBENCH_INSTALL = "pip install git+https://github.com/openai/mle-bench"


class InvalidSubmission(ValueError):
    """A submission the grader cannot score; the message says why."""


class UnknownGrader(ConfigError):
    """A grader name rlab-mle does not implement (and mlebench is not there to grade it)."""


@dataclass(frozen=True)
class Grader:
    """One metric: how predictions look, its direction and how to score aligned frames."""

    name: str
    metric: str
    prediction: Prediction
    higher_is_better: bool
    k: int | None = None

    def grade(
        self, submission: pd.DataFrame, answers: pd.DataFrame, id_column: str, targets: list[str]
    ) -> float:
        """Score ``submission`` against ``answers``; raise :class:`InvalidSubmission` if malformed."""
        problems = submission_problems(
            submission, answers[id_column], id_column, targets, self.prediction
        )
        if problems:
            raise InvalidSubmission("; ".join(problems))
        sub, ans = align(submission, answers, id_column)
        return self.score_aligned(sub, ans, targets)

    def score_aligned(self, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
        """The metric of frames already checked and aligned row by row (no checks here)."""
        return SCORERS[self.metric](self, sub, ans, targets)


def canonical_name(name: str) -> str:
    """Lower case, '-' for spaces and underscores: 'Column-wise ROC AUC' -> 'column-wise-roc-auc'."""
    return re.sub(r"[\s_]+", "-", name.strip().lower())


_ALIASES: dict[str, tuple[str, Prediction, bool]] = {}
for _metric, _prediction, _higher, _names in [
    ("accuracy", "label", True, ["accuracy", "multi-class-classification-accuracy", "categorization-accuracy"]),
    ("auc", "probability", True, ["auc-roc", "roc-auc", "auroc", "auc", "area-under-roc-curve"]),
    ("columnwise-auc", "probability", True, ["mean-column-wise-roc-auc", "column-wise-roc-auc", "auroc-multi-label", "mean-columnwise-roc-auc"]),
    ("log-loss", "probability", False, ["log-loss", "logloss", "binary-log-loss"]),
    ("multi-class-log-loss", "probability", False, ["multi-class-log-loss", "multiclass-log-loss", "mlogloss"]),
    ("rmse", "value", False, ["root-mean-squared-error", "rmse"]),
    ("rmsle", "value", False, ["root-mean-squared-log-error", "root-mean-squared-logarithmic-error", "rmsle"]),
    ("columnwise-rmsle", "value", False, ["mean-column-wise-rmsle", "mcrmsle"]),
    ("mae", "value", False, ["mean-absolute-error", "mae"]),
    ("qwk", "label", True, ["quadratic-weighted-kappa", "qwk"]),
]:  # fmt: skip
    for _name in _names:
        _ALIASES[_name] = (_metric, _prediction, _higher)
_MAP_AT_K = re.compile(r"^(?:map|mean-average-precision)(?:@|-at-)(\d+)$")


def known_names() -> list[str]:
    """Every grader name rlab-mle grades without mlebench."""
    return [*sorted(_ALIASES), "map@K (e.g. map@5, MAP@12, map-at-5)"]


def grader_for(name: str) -> Grader:
    """The grader named by a competition config; :class:`UnknownGrader` when there is none."""
    key = canonical_name(name)
    if key in _ALIASES:
        metric, prediction, higher = _ALIASES[key]
        return Grader(name=name, metric=metric, prediction=prediction, higher_is_better=higher)
    match = _MAP_AT_K.match(key)
    if match:
        k = int(match.group(1))
        return Grader(name=name, metric="map", prediction="ranking", higher_is_better=True, k=k)
    raise UnknownGrader(
        f"rlab-mle has no grader named '{name}' and mlebench is not installed to grade it; "
        f"install mlebench ({MLEBENCH_INSTALL}) or name one of: {', '.join(known_names())}."
    )


# --------------------------------------------------------------------------- checks


def submission_problems(
    frame: pd.DataFrame,
    expected_ids: pd.Series,
    id_column: str,
    targets: list[str],
    prediction: Prediction,
    what: str = "the submission",
) -> list[str]:
    """The problems of a submission frame, one sentence each; empty when it is well-formed."""
    expected_columns = [id_column, *targets]
    columns = [str(c) for c in frame.columns]
    if sorted(columns) != sorted(expected_columns):
        missing = [c for c in expected_columns if c not in columns]
        extra = [c for c in columns if c not in expected_columns]
        detail = ", ".join(
            part
            for part in (
                f"missing {missing}" if missing else "",
                f"unexpected {extra}" if extra else "",
            )
            if part
        )
        return [f"{what} has the columns {columns}, expected {expected_columns} ({detail})"]
    problems = []
    if len(frame) != len(expected_ids):
        problems.append(
            f"{what} has {len(frame)} rows, expected {len(expected_ids)} (one per {id_column})"
        )
    ids = frame[id_column].astype(str)
    repeated = ids[ids.duplicated()]
    if len(repeated):
        problems.append(
            f"{what} repeats {repeated.nunique()} {id_column} values (e.g. {repeated.iloc[0]})"
        )
    wanted = set(expected_ids.astype(str))
    unknown = sorted(set(ids) - wanted)
    if unknown:
        problems.append(
            f"{what} has {len(unknown)} {id_column} values that are not expected (e.g. {unknown[0]})"
        )
    absent = sorted(wanted - set(ids))
    if absent:
        problems.append(
            f"{what} lacks {len(absent)} expected {id_column} values (e.g. {absent[0]})"
        )
    for column in targets:
        problems += _column_problems(frame[column], column, prediction)
    return problems


def _column_problems(values: pd.Series, column: str, prediction: Prediction) -> list[str]:
    missing = int(values.isna().sum())
    if missing:
        return [f"column '{column}' has {missing} missing (NaN) values"]
    if prediction not in ("probability", "value"):
        return []
    numeric = pd.to_numeric(values, errors="coerce")
    bad = numeric.isna()
    if bad.any():
        return [
            f"column '{column}' has {int(bad.sum())} non-numeric values (e.g. {values[bad].iloc[0]!r})"
        ]
    array = numeric.to_numpy(dtype=float)
    if not np.all(np.isfinite(array)):
        return [f"column '{column}' has infinite values"]
    if prediction == "probability" and (array.min() < 0 or array.max() > 1):
        return [
            f"column '{column}' has values outside [0, 1] (min {array.min():.4g}, max "
            f"{array.max():.4g}); it holds probabilities"
        ]
    return []


def align(
    submission: pd.DataFrame, answers: pd.DataFrame, id_column: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both frames in the answers' id order (ids compared as text)."""
    ans = answers.reset_index(drop=True)
    order = pd.Index(submission[id_column].astype(str)).get_indexer(ans[id_column].astype(str))
    return submission.iloc[order].reset_index(drop=True), ans


# --------------------------------------------------------------------------- scorers


def numeric_matrix(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The columns as a float matrix (rows x columns)."""
    return frame[columns].apply(pd.to_numeric, errors="raise").to_numpy(dtype=float)


def binary_matrix(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Answers as 0/1, whether written as numbers, booleans or 'True'/'False'."""
    out = []
    for column in columns:
        values = frame[column]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            values = values.astype(str).str.strip().str.lower().map({"true": 1, "false": 0})
        out.append(pd.to_numeric(values, errors="raise").to_numpy(dtype=float))
    return np.column_stack(out)


def one_hot_answers(answers: pd.DataFrame, targets: list[str]) -> np.ndarray:
    """Answers as a one-hot matrix: the target columns, or one label column holding their names."""
    if all(t in answers.columns for t in targets):
        return numeric_matrix(answers, targets)
    label = find_label_column(answers, targets, exclude=set())
    if label is not None:
        labels = answers[label].astype(str).to_numpy()
        return (labels[:, None] == np.asarray(targets)[None, :]).astype(float)
    raise ConfigError(f"The answers have neither the class columns {targets} nor a label column.")


def canonical_labels(values: pd.Series) -> np.ndarray:
    """Labels as comparable text: 1, 1.0 and '1' agree, as do True and 'True'."""

    def one(value: object) -> str:
        if isinstance(value, bool | np.bool_):
            return str(bool(value))
        if isinstance(value, int | float | np.integer | np.floating):
            number = float(value)
            return str(int(number)) if number.is_integer() else repr(number)
        text = str(value).strip()
        try:
            return one(float(text)) if text.lower() not in ("nan", "inf", "-inf") else text
        except ValueError:
            return text

    return np.asarray([one(v) for v in values], dtype=object)


def _auc(grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
    y, p = binary_matrix(ans, targets), numeric_matrix(sub, targets)
    if len(targets) == 1:
        return metrics.roc_auc(y[:, 0], p[:, 0])
    return metrics.mean_columnwise_roc_auc(y, p)


def _log_loss(grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
    if len(targets) == 1 and grader.metric == "log-loss":
        return metrics.binary_log_loss(
            binary_matrix(ans, targets)[:, 0], numeric_matrix(sub, targets)[:, 0]
        )
    return metrics.multiclass_log_loss(one_hot_answers(ans, targets), numeric_matrix(sub, targets))


def _value(grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
    y, p = numeric_matrix(ans, targets), numeric_matrix(sub, targets)
    if grader.metric in ("rmsle", "columnwise-rmsle") and (p < 0).any():
        raise InvalidSubmission(
            f"{grader.name} needs predictions of at least 0; the submission has negative values"
        )
    function = {
        "rmse": metrics.rmse,
        "rmsle": metrics.rmsle,
        "columnwise-rmsle": metrics.mean_columnwise_rmsle,
        "mae": metrics.mae,
    }[grader.metric]
    return function(y, p)


def _accuracy(grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
    y = np.concatenate([canonical_labels(ans[t]) for t in targets])
    p = np.concatenate([canonical_labels(sub[t]) for t in targets])
    return metrics.accuracy(y, p)


def _qwk(grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
    column = targets[0]
    ratings = pd.to_numeric(sub[column], errors="coerce")
    if ratings.isna().any() or not np.all(np.mod(ratings, 1) == 0):
        raise InvalidSubmission(f"{grader.name} needs integer ratings in column '{column}'")
    truth = pd.to_numeric(ans[column], errors="raise").to_numpy(dtype=int)
    return metrics.quadratic_weighted_kappa(truth, ratings.to_numpy(dtype=int))


def _map(grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]) -> float:
    column = targets[0]
    actual = [str(v).split() for v in ans[column]]
    predicted = [str(v).split() for v in sub[column]]
    return metrics.mean_average_precision_at_k(actual, predicted, int(grader.k or 1))


SCORERS = {
    "accuracy": _accuracy,
    "auc": _auc,
    "columnwise-auc": _auc,
    "log-loss": _log_loss,
    "multi-class-log-loss": _log_loss,
    "rmse": _value,
    "rmsle": _value,
    "columnwise-rmsle": _value,
    "mae": _value,
    "qwk": _qwk,
    "map": _map,
}
