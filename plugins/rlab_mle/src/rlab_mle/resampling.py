"""A competition's score on bootstrap resamples of its graded rows (the paired bootstrap).

Units: each answer row is a unit, stratified by its true class for a classification metric
(every resample keeps each class's count, as the stratified split did); when the split was
grouped (``facts["split"]["group_column"]``: one plane's flights, one patient's images) the
group is the unit, since rows of a group are correlated and a row bootstrap would report
intervals too narrow to trust.

Statistics: for the metrics rlab-mle knows by name a weighted form of the formula (one pass
over the rows per resample), used only when it gives the grader's value on every row (the
grader may be mlebench's own ``grade_fn``); otherwise (a metric rlab-mle does not know, one
with no weighted form such as quadratic weighted kappa) the grader itself on each
resample's rows: one grader call per resample, slower. Every value is rounded as mle-bench
rounds a score, so with every unit drawn once the statistic equals the score.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from rlab_core.api import (
    ConfigError,
    Resampling,
    WeightedAuroc,
    fingerprint,
    row_weights,
    unit_index,
    weighted_mean,
)
from rlab_mle import metrics
from rlab_mle.competition_grading import DECIMALS, header, raw_grade
from rlab_mle.definitions import Competition
from rlab_mle.metric_graders import (
    Grader,
    align,
    binary_matrix,
    canonical_labels,
    grader_for,
    numeric_matrix,
    one_hot_answers,
)
from rlab_mle.targets import find_label_column

#: Weights ``(resamples, rows)`` -> the metric of each resample.
WeightedMetric = Callable[[np.ndarray], np.ndarray]
#: Rows per class, on average, below which classes are no strata (free-text labels would
#: make most rows a stratum of one, which a draw could never vary).
MIN_STRATUM = 10
#: Cells of a weights matrix built at once: bounds memory on a large test set.
CELLS = 2**22
#: How closely a weighted form must give the grader's value on every row to be used.
AGREEMENT = 1e-9


def competition_resampling(
    competition: Competition,
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    sample: Path,
    groups: pd.Series | None = None,
) -> Resampling | None:
    """The score of ``submission`` (already graded valid) on resamples of the answer rows.

    ``groups`` maps an id (as text) to its group when the split was grouped (the series is
    named by the group column). ``None`` when the answers cannot be matched to the
    submission row by row (an answers file keyed otherwise) or when the grader does not give
    the score back on every row.
    """
    id_column, targets = header(sample)
    if id_column not in answers.columns or answers[id_column].astype(str).duplicated().any():
        return None
    sub, ans = align(submission, answers, id_column)
    ids = ans[id_column].astype(str).to_numpy(dtype=str)
    if len(ans) == 0 or not np.array_equal(sub[id_column].astype(str).to_numpy(dtype=str), ids):
        return None  # not one prediction per answer row
    exact = raw_grade(competition, submission, answers, sample)
    grader = _known(competition.grader_name)
    if groups is None:
        unit, unit_of_row, units = "rows", np.arange(len(ans)), len(ans)
        strata = class_strata(grader, ans, id_column, targets) if grader else None
    else:
        group = groups.reindex(ids).astype(object).to_numpy()
        group = np.where(pd.isna(group), "row:" + ids.astype(object), group).astype(str)
        unit = f"{groups.name} groups" if groups.name else "groups"  # "tailnum groups"
        (unit_of_row, units), strata = unit_index(group), None
    form = _checked_form(grader, sub, ans, targets, exact) if grader else None
    if form is not None:
        statistic = weighted_statistic(unit_of_row, form)
    else:
        grade_rows = row_grader(competition, grader, sub, ans, id_column, targets)
        if not _agrees(grade_rows(np.arange(len(ans))), exact):
            return None  # the grader reads something a row selection changes: no resampling
        statistic = indexed_statistic(unit_of_row, grade_rows)
    return Resampling(
        unit=unit,
        units=units,
        statistic=rounded(statistic),
        strata=strata,
        key=fingerprint(ids, unit_of_row, np.empty(0) if strata is None else strata),
    )


def _known(name: str) -> Grader | None:
    try:
        return grader_for(name)
    except ConfigError:
        return None


def _agrees(value: float, exact: float) -> bool:
    return math.isclose(value, exact, rel_tol=AGREEMENT, abs_tol=1e-12)


def _checked_form(
    grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str], exact: float
) -> WeightedMetric | None:
    """The weighted form, if it gives the grade on every row (mlebench's ``grade_fn`` may
    read the answers otherwise than rlab-mle's grader of the same name)."""
    try:
        form = weighted_form(grader, sub, ans, targets)
        ok = form is not None and _agrees(float(form(np.ones((1, len(ans))))[0]), exact)
    except (KeyError, ValueError, TypeError, ConfigError):  # answers laid out otherwise
        return None
    return form if ok else None


# --------------------------------------------------------------------------- strata


def class_strata(
    grader: Grader, answers: pd.DataFrame, id_column: str, targets: list[str]
) -> np.ndarray | None:
    """Each row's true class (its label pattern, for several targets) for a classification
    metric; ``None`` for values, rankings or labels too many to be classes."""
    if grader.prediction not in ("probability", "label"):
        return None
    if all(t in answers.columns for t in targets):
        columns = list(targets)
    else:  # multi-class answers as one label column
        label = find_label_column(answers, targets, exclude={id_column})
        if label is None:
            return None
        columns = [label]
    truth = pd.DataFrame({c: canonical_labels(answers[c]) for c in columns})
    codes = truth.groupby(columns, sort=True).ngroup().to_numpy()
    classes = int(codes.max()) + 1
    if classes < 2 or classes * MIN_STRATUM > len(codes):
        return None
    return codes


# --------------------------------------------------------------------------- weighted forms


def weighted_form(
    grader: Grader, sub: pd.DataFrame, ans: pd.DataFrame, targets: list[str]
) -> WeightedMetric | None:
    """The grader's metric under row weights (Kaggle's formula, clipping included);
    ``None`` for a metric with no weighted form."""
    metric = grader.metric
    if metric in ("auc", "columnwise-auc"):
        return _auc(binary_matrix(ans, targets), numeric_matrix(sub, targets))
    if metric in ("log-loss", "multi-class-log-loss"):
        if len(targets) == 1 and metric == "log-loss":
            y, p = binary_matrix(ans, targets)[:, 0], numeric_matrix(sub, targets)[:, 0]
            return _mean_of(_binary_log_losses(y, p))
        y_onehot, p = one_hot_answers(ans, targets), numeric_matrix(sub, targets)
        return _mean_of(_multiclass_log_losses(y_onehot, p))
    if metric in ("rmse", "rmsle", "columnwise-rmsle", "mae"):
        y, p = numeric_matrix(ans, targets), numeric_matrix(sub, targets)
        if metric == "mae":
            return _mean_of(np.abs(y - p).mean(axis=1))
        if metric in ("rmsle", "columnwise-rmsle"):
            y, p = np.log1p(y), np.log1p(p)
        if metric == "columnwise-rmsle":
            return _columnwise_root_mean((y - p) ** 2)
        # over every value: rows hold as many values each, so the mean of row means
        return _root_mean_of(((y - p) ** 2).mean(axis=1))
    if metric == "accuracy":
        hits = [canonical_labels(ans[t]) == canonical_labels(sub[t]) for t in targets]
        return _mean_of(np.column_stack(hits).astype(float).mean(axis=1))
    if metric == "map":
        column, k = targets[0], int(grader.k or 1)
        actual = [str(v).split() for v in ans[column]]
        predicted = [str(v).split() for v in sub[column]]
        pairs = zip(actual, predicted, strict=True)
        return _mean_of(np.array([metrics.average_precision_at_k(a, p, k) for a, p in pairs]))
    return None  # quadratic weighted kappa: its rating scale depends on the rows drawn


def _auc(y: np.ndarray, p: np.ndarray) -> WeightedMetric:
    """ROC AUC (the mean over columns for several): ties count half, as ``metrics.roc_auc``."""
    curves = [WeightedAuroc(y[:, j] == 1, p[:, j]) for j in range(y.shape[1])]
    return lambda w: np.mean([curve(w) for curve in curves], axis=0)


def _binary_log_losses(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each row's log-loss, clipped as :func:`metrics.binary_log_loss` clips."""
    p = np.clip(p, metrics.EPS, 1 - metrics.EPS)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def _multiclass_log_losses(y_onehot: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each row's log-loss as :func:`metrics.multiclass_log_loss`: clip, rescale, -log p."""
    p = np.clip(p, metrics.EPS, 1 - metrics.EPS)
    p = p / p.sum(axis=1, keepdims=True)
    return -np.sum(y_onehot * np.log(p), axis=1)


def _mean_of(per_row: np.ndarray) -> WeightedMetric:
    return lambda w: weighted_mean(per_row, w)


def _root_mean_of(per_row: np.ndarray) -> WeightedMetric:
    # the root of the weighted mean, not a mean of roots: RMSE of the resample's rows
    return lambda w: np.sqrt(weighted_mean(per_row, w))


def _columnwise_root_mean(squares: np.ndarray) -> WeightedMetric:
    """The mean over columns of each column's root weighted mean (``mean_columnwise_rmsle``)."""
    return lambda w: np.mean(
        [np.sqrt(weighted_mean(squares[:, j], w)) for j in range(squares.shape[1])], axis=0
    )


# --------------------------------------------------------------------------- statistics


def weighted_statistic(unit_of_row: np.ndarray, form: WeightedMetric) -> WeightedMetric:
    """Unit counts -> the metric, building the per-row weights a few resamples at a time."""
    block = max(1, CELLS // max(len(unit_of_row), 1))
    # rows as units: the counts are the weights already, no gather to copy them
    by_row = np.array_equal(unit_of_row, np.arange(len(unit_of_row)))

    def weights(counts: np.ndarray) -> np.ndarray:
        # float once here, so each weighted mean is a plain float matrix product
        return (counts if by_row else row_weights(counts, unit_of_row)).astype(float)

    def statistic(counts: np.ndarray) -> np.ndarray:
        parts = [
            form(weights(counts[start : start + block])) for start in range(0, len(counts), block)
        ]
        return np.concatenate(parts) if parts else np.empty(0)

    return statistic


def row_grader(
    competition: Competition,
    grader: Grader | None,
    sub: pd.DataFrame,
    ans: pd.DataFrame,
    id_column: str,
    targets: list[str],
) -> Callable[[np.ndarray], float]:
    """Row positions (repeats allowed) -> the unrounded grade of those rows.

    rlab-mle's own graders score the aligned rows directly. mlebench's ``grade_fn`` checks
    ids, so the selection gets fresh distinct ids (the same in both frames, which keeps the
    rows paired however the grader sorts them).
    """
    if competition.grade_fn is None and grader is not None:
        sub = sub[[id_column, *targets]]  # all the grader reads of the predictions
        return lambda rows: grader.score_aligned(
            sub.iloc[rows].reset_index(drop=True), ans.iloc[rows].reset_index(drop=True), targets
        )
    grade_fn = competition.grade_fn
    numeric = pd.api.types.is_integer_dtype(ans[id_column])

    def grade(rows: np.ndarray) -> float:
        fresh = np.arange(len(rows)) if numeric else np.arange(len(rows)).astype(str)
        picked_sub = sub.iloc[rows].reset_index(drop=True).assign(**{id_column: fresh})
        picked_ans = ans.iloc[rows].reset_index(drop=True).assign(**{id_column: fresh})
        return float(grade_fn(picked_sub, picked_ans))

    return grade


def indexed_statistic(
    unit_of_row: np.ndarray, grade_rows: Callable[[np.ndarray], float]
) -> WeightedMetric:
    """Unit counts -> the grader on each resample's rows (one grader call per resample).

    Like the core's ``indexed_statistic``, but a resample's rows come from one
    ``np.repeat`` rather than a loop over units: with every row a unit, that loop would
    cost a Python step per row of a large test set.
    """
    positions = np.arange(len(unit_of_row))

    def statistic(counts: np.ndarray) -> np.ndarray:
        out = np.empty(len(counts))
        for i, row in enumerate(counts):
            try:
                out[i] = grade_rows(np.repeat(positions, row[unit_of_row]))
            except Exception:  # a grader refusing a resample (one class drawn, say): left out
                out[i] = math.nan
        return out

    return statistic


def rounded(statistic: WeightedMetric) -> WeightedMetric:
    """Each value rounded as mle-bench rounds a score (Python's ``round``, like the grade)."""
    return lambda counts: np.array(
        [round(float(v), DECIMALS) for v in statistic(counts)], dtype=float
    )
