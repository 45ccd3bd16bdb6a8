"""Paired bootstrap over a task's natural units: the resampler and the interval arithmetic.

A benchmark says how sure a difference of two nodes' validation scores is by offering its
metric on resamples (:meth:`~rlab_core.interfaces.PreparedTask.resampling`): the rows of
the split grouped into the units that are drawn (users, entities, rows — stratified by
class where that matters) and a statistic that turns a matrix of draw counts into one
metric value per resample. The core draws the counts — the same counts for every node of
a run, so any two nodes' replicate scores are paired — and does the arithmetic: standard
errors, one-sided intervals and verdicts.

Drawing units, not rows, keeps correlated rows together (a user's impressions, a plane's
weekly rows): a row bootstrap would report intervals too narrow to trust.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

#: Resamples drawn per node unless the run says otherwise.
DEFAULT_RESAMPLES = 1000
#: Resamples handed to a statistic at once (bounds the counts matrix in memory): at most
#: this many, and at most :data:`CHUNK_CELLS` counts per chunk for tasks with many units.
CHUNK = 64
CHUNK_CELLS = 2**22
#: Verdicts of a paired comparison.
Verdict = Literal["better", "within noise", "worse"]


@dataclass(frozen=True)
class Resampling:
    """A node's metric on bootstrap resamples of the task's natural units.

    ``statistic`` receives an integer matrix of draw counts, one row per resample and one
    column per unit (how often the unit was drawn), and returns the metric of each
    resample, shape ``(resamples,)``. A resample on which the metric is undefined (one
    class only, say) gives ``nan``; such resamples are left out.
    """

    #: What is drawn, in words (plural): ``users``, ``planes``, ``rows``.
    unit: str
    #: How many units there are.
    units: int
    statistic: Callable[[np.ndarray], np.ndarray]
    #: The stratum of each unit (e.g. its class); a draw keeps each stratum's size.
    strata: np.ndarray | None = None
    #: A fingerprint of the units; two nodes are paired only when theirs are equal.
    key: str = ""


def fingerprint(*arrays: Any) -> str:
    """A short fingerprint of the arrays that define the units (ids, strata)."""
    digest = hashlib.sha1()
    for array in arrays:
        values = np.asarray(array)
        if values.dtype == object:
            # every element, in full (repr would elide the middle of a long array)
            values = values.astype(str)
        values = np.ascontiguousarray(values)
        digest.update(f"{values.dtype}{values.shape}".encode())
        digest.update(values.tobytes())
    return digest.hexdigest()[:16]


def unit_index(ids: Any) -> tuple[np.ndarray, int]:
    """Each row's unit as an index ``0..units-1`` (units in sorted order), and the count."""
    uniques, inverse = np.unique(np.asarray(ids), return_inverse=True)
    return inverse.astype(np.int64).ravel(), len(uniques)


def draw_counts(
    units: int, resamples: int, seed: int, strata: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Draw counts for ``resamples`` bootstrap resamples, in chunks of at most :data:`CHUNK`.

    Each resample draws ``units`` units with replacement (within each stratum, as many as
    the stratum holds). The same arguments give the same counts on every call: that is
    what pairs two nodes' replicate scores.
    """
    rng = np.random.default_rng(seed)
    if strata is None:
        groups = [np.arange(units)]
    else:
        labels = np.asarray(strata)
        if labels.shape != (units,):
            raise ValueError(f"strata has shape {labels.shape}, expected ({units},)")
        groups = [np.flatnonzero(labels == value) for value in np.unique(labels)]
    done = 0
    chunk = max(1, min(CHUNK, CHUNK_CELLS // max(1, units)))
    while done < resamples:
        size = min(chunk, resamples - done)
        offsets = (np.arange(size) * units)[:, None]
        flat = np.concatenate(
            [
                (offsets + members[rng.integers(0, len(members), (size, len(members)))]).ravel()
                for members in groups
                if len(members)
            ]
        )
        yield np.bincount(flat, minlength=size * units).astype(np.int32).reshape(size, units)
        done += size


def replicate_scores(resampling: Resampling, resamples: int, seed: int) -> np.ndarray:
    """The metric on ``resamples`` bootstrap resamples (``nan`` where undefined)."""
    parts = [
        np.asarray(resampling.statistic(counts), dtype=float).reshape(-1)
        for counts in draw_counts(resampling.units, resamples, seed, resampling.strata)
    ]
    values = np.concatenate(parts) if parts else np.empty(0)
    if values.shape != (resamples,):
        raise ValueError(
            f"the resampling statistic returned {values.shape[0]} values for {resamples} resamples"
        )
    return values


def standard_error(replicates: np.ndarray) -> float | None:
    """The bootstrap standard error (``None`` with fewer than two defined resamples)."""
    values = replicates[np.isfinite(replicates)]
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float] | None:
    """The two-sided percentile interval holding ``level`` of the resamples."""
    values = replicates[np.isfinite(replicates)]
    if len(values) < 2:
        return None
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedDifference:
    """``a`` against ``b``: the point gain and its one-sided bounds, positive meaning better."""

    delta: float
    #: With probability ``level`` the gain is above ``low`` (one-sided percentile bound).
    low: float
    #: With probability ``level`` the gain is below ``high``.
    high: float
    level: float
    resamples: int

    @property
    def verdict(self) -> Verdict:
        if self.low > 0:
            return "better"
        if self.high < 0:
            return "worse"
        return "within noise"


#: The generator's seed for :func:`paired_difference`'s added noise.
EXTRA_NOISE_SEED = 7_919


def paired_difference(
    a_point: float,
    b_point: float,
    a_replicates: np.ndarray,
    b_replicates: np.ndarray,
    *,
    higher_is_better: bool,
    level: float,
    extra_sd: float = 0.0,
) -> PairedDifference | None:
    """The paired bootstrap of ``a - b`` (sign turned so that positive is better).

    Both replicate vectors must come from the same draws (:func:`replicate_scores` with the
    same units, resamples and seed). ``None`` when too few resamples are defined for both.
    ``extra_sd`` is noise the rows' bootstrap cannot see (training seeds): each bootstrap
    difference gets an independent normal draw of that spread (a fixed generator, so the
    same comparison always gives the same bounds) before the percentiles are read.
    """
    if a_replicates.shape != b_replicates.shape:
        return None
    sign = 1.0 if higher_is_better else -1.0
    deltas = sign * (a_replicates - b_replicates)
    deltas = deltas[np.isfinite(deltas)]
    if len(deltas) < 10:
        return None
    if extra_sd > 0:
        deltas = deltas + np.random.default_rng(EXTRA_NOISE_SEED).normal(0.0, extra_sd, len(deltas))
    low, high = np.quantile(deltas, [1.0 - level, level])
    delta = sign * (a_point - b_point)
    return PairedDifference(
        delta=float(delta),
        low=float(low),
        high=float(high),
        level=level,
        resamples=len(deltas),
    )


# --------------------------------------------------------------------------- statistics
# Weighted forms of common metrics: a resample is a weight per row (how often the row's
# unit was drawn), so one sort or one pass serves every resample of a chunk.


def row_weights(counts: np.ndarray, unit_of_row: np.ndarray) -> np.ndarray:
    """Per-row weights of each resample: the draw count of the row's unit."""
    return counts[:, unit_of_row]


def weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean of ``values`` under each row of ``weights`` (``nan`` if all zero)."""
    total = weights.sum(axis=1, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ np.asarray(values, dtype=float)) / total


class WeightedAuroc:
    """Area under the ROC curve under row weights, ties counted half (as scikit-learn does).

    Built once per node (one sort); each call is one pass over the rows per resample.
    """

    def __init__(self, labels: Any, scores: Any) -> None:
        scores = np.asarray(scores, dtype=float).ravel()
        self.order = np.argsort(scores, kind="mergesort")
        ordered = scores[self.order]
        self.positive = np.asarray(labels).ravel()[self.order].astype(bool)
        # first position of each run of equal scores
        self.starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        w = weights[:, self.order].astype(float)
        pos = np.add.reduceat(w * self.positive, self.starts, axis=1)
        neg = np.add.reduceat(w * ~self.positive, self.starts, axis=1)
        below = np.cumsum(neg, axis=1) - neg
        with np.errstate(invalid="ignore", divide="ignore"):
            return (pos * (below + 0.5 * neg)).sum(axis=1) / (pos.sum(axis=1) * neg.sum(axis=1))


def rows_statistic(
    unit_of_row: np.ndarray, metric: Callable[[np.ndarray], np.ndarray]
) -> Callable[[np.ndarray], np.ndarray]:
    """A statistic over unit counts from a weighted row metric (``weights -> values``)."""
    return lambda counts: metric(row_weights(counts, unit_of_row))


def indexed_statistic(
    unit_of_row: np.ndarray, metric: Callable[[np.ndarray], float]
) -> Callable[[np.ndarray], np.ndarray]:
    """A statistic from any metric of a row selection (slow: one metric call per resample).

    ``metric`` receives the positions of the resample's rows (repeats included); for
    metrics with no weighted form, such as a grader of an arbitrary competition.
    """
    # rows ordered by unit, so that a resample's rows are one np.repeat of unit counts
    order = np.argsort(unit_of_row, kind="stable")
    sizes = np.bincount(unit_of_row)

    def statistic(counts: np.ndarray) -> np.ndarray:
        out = np.empty(len(counts))
        for i, row in enumerate(counts):
            rows = np.repeat(order, np.repeat(row[: len(sizes)], sizes))
            try:
                out[i] = float(metric(rows))
            except (ValueError, ZeroDivisionError):
                out[i] = math.nan
        return out

    return statistic
