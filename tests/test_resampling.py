"""The paired bootstrap: draws, weighted metrics, intervals and verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from rlab_core.resampling import (
    Resampling,
    WeightedAuroc,
    draw_counts,
    fingerprint,
    indexed_statistic,
    paired_difference,
    percentile_interval,
    replicate_scores,
    rows_statistic,
    standard_error,
    unit_index,
    weighted_mean,
)


def pairwise_auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """AUROC by counting every positive-negative pair, ties half (the definition)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (len(pos) * len(neg))


def test_draws_are_the_same_for_the_same_seed_and_keep_every_resample_full_size():
    first = np.concatenate(list(draw_counts(37, 150, seed=3)))
    again = np.concatenate(list(draw_counts(37, 150, seed=3)))
    other = np.concatenate(list(draw_counts(37, 150, seed=4)))
    assert first.shape == (150, 37) and (first == again).all() and not (first == other).all()
    assert (first.sum(axis=1) == 37).all()
    # about 1 - 1/e of the units appear in a resample
    assert 0.55 < (first > 0).mean() < 0.70


def test_stratified_draws_keep_each_stratum_size():
    strata = np.array([0] * 30 + [1] * 5 + [2] * 2)
    for counts in draw_counts(37, 100, seed=0, strata=strata):
        assert (counts[:, strata == 0].sum(axis=1) == 30).all()
        assert (counts[:, strata == 1].sum(axis=1) == 5).all()
        assert (counts[:, strata == 2].sum(axis=1) == 2).all()


def test_weighted_auroc_is_the_pairwise_definition_with_ties_and_repeats():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 300)
    scores = np.round(rng.normal(labels * 0.5, 1.0), 1)  # many ties
    auroc = WeightedAuroc(labels, scores)
    assert auroc(np.ones((1, 300)))[0] == pytest.approx(pairwise_auroc(labels, scores), abs=1e-12)
    weights = rng.integers(0, 3, (4, 300))
    for row, value in zip(weights, auroc(weights), strict=True):
        rows = np.repeat(np.arange(300), row)  # a weight is a repeat of the row
        assert value == pytest.approx(pairwise_auroc(labels[rows], scores[rows]), abs=1e-12)


def test_indexed_and_weighted_statistics_agree_on_units_of_several_rows():
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 40, 500)
    errors = rng.exponential(1.0, 500)
    unit_of_row, units = unit_index(ids)
    fast = rows_statistic(unit_of_row, lambda w: weighted_mean(errors, w))
    slow = indexed_statistic(unit_of_row, lambda rows: float(errors[rows].mean()))
    counts = next(draw_counts(units, 20, seed=0))
    assert np.allclose(fast(counts), slow(counts))
    assert fast(np.ones((1, units)))[0] == pytest.approx(errors.mean())


def test_a_mean_has_the_textbook_standard_error():
    values = np.random.default_rng(2).normal(0, 1, 2000)
    resampling = Resampling(
        unit="rows", units=2000, statistic=lambda counts: weighted_mean(values, counts)
    )
    se = standard_error(replicate_scores(resampling, 1000, seed=0))
    assert se == pytest.approx(values.std(ddof=1) / np.sqrt(2000), rel=0.1)


def test_paired_verdicts():
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 1, 1000)
    labels = (noise + rng.normal(0, 1, 1000) > 0).astype(int)

    def replicates(scores: np.ndarray) -> tuple[float, np.ndarray]:
        auroc = WeightedAuroc(labels, scores)
        resampling = Resampling(unit="rows", units=1000, statistic=auroc)
        return float(auroc(np.ones((1, 1000)))[0]), replicate_scores(resampling, 500, seed=7)

    base = replicates(noise)
    same = paired_difference(
        *base[:1], *base[:1], base[1], base[1], higher_is_better=True, level=0.9
    )
    assert same is not None and same.delta == same.low == same.high == 0
    assert same.verdict == "within noise"
    sharper = replicates(noise + 0.5 * (labels - 0.5))  # uses the label: clearly better
    better = paired_difference(
        sharper[0], base[0], sharper[1], base[1], higher_is_better=True, level=0.9
    )
    assert better is not None and better.verdict == "better" and better.low > 0
    worse = paired_difference(
        base[0], sharper[0], base[1], sharper[1], higher_is_better=True, level=0.9
    )
    assert worse is not None and worse.verdict == "worse" and worse.high < 0
    # two equally good programs that differ by chance
    one, other = (replicates(noise + rng.normal(0, 0.2, 1000)) for _ in range(2))
    unsure = paired_difference(one[0], other[0], one[1], other[1], higher_is_better=True, level=0.9)
    assert unsure is not None and unsure.verdict == "within noise" and unsure.low < 0 < unsure.high
    # lower is better turns the sign: the same pair is a loss
    flipped = paired_difference(
        sharper[0], base[0], sharper[1], base[1], higher_is_better=False, level=0.9
    )
    assert flipped is not None and flipped.verdict == "worse" and flipped.delta < 0


def test_intervals_and_fingerprints():
    values = np.arange(1001, dtype=float)
    assert percentile_interval(values, 0.9) == pytest.approx((50.0, 950.0))
    assert standard_error(np.array([1.0, np.nan])) is None
    assert fingerprint(np.arange(5)) == fingerprint(np.arange(5))
    assert fingerprint(np.arange(5)) != fingerprint(np.arange(6))
