"""Hand-computed cases of the organizers' GAUC and nDCG@5, and a property test vs sklearn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rlab_kuairand.metrics import evaluate, gauc, ndcg_at_5


def _dcg(gains: list[int]) -> float:
    return sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains[:5]))


def test_gauc_weighted_by_positives_not_impressions() -> None:
    # user 1: 2 pos, 1 neg; pos 0.9 > neg 0.5, pos 0.3 < neg -> auc 1/2, weight 2
    # user 2: 1 pos, 3 neg; pos above all -> auc 1, weight 1
    users = np.array([1, 1, 1, 2, 2, 2, 2])
    labels = np.array([1, 1, 0, 0, 1, 0, 0])
    scores = np.array([0.9, 0.3, 0.5, 0.1, 0.8, 0.2, 0.3])
    assert gauc(users, labels, scores) == pytest.approx((2 * 0.5 + 1 * 1.0) / 3)


def test_gauc_ties_count_one_half_and_single_class_users_are_skipped() -> None:
    users = np.array([7, 7, 7, 7, 8, 8, 9, 9])
    labels = np.array([1, 0, 0, 1, 0, 0, 1, 1])  # user 8 all negative, user 9 all positive
    scores = np.array([0.5, 0.5, 0.1, 0.9, 0.3, 0.2, 0.0, 1.0])
    # user 7 pairs: (0.5 vs 0.5) half, (0.5 vs 0.1) win, (0.9 vs *) two wins -> 3.5 / 4
    assert gauc(users, labels, scores) == pytest.approx(0.875)


def test_gauc_without_a_mixed_user_is_one_half() -> None:
    assert gauc(np.array([1, 1, 2]), np.array([0, 0, 1]), np.array([0.3, 0.2, 0.1])) == 0.5
    assert gauc(np.array([]), np.array([]), np.array([])) == 0.5


def test_ndcg_stable_sort_keeps_row_order_on_ties() -> None:
    # all scores tie: the ranking is the row order, positive at rank 3
    users = np.array([4, 4, 4, 4])
    labels = np.array([0, 0, 1, 0])
    scores = np.zeros(4)
    assert ndcg_at_5(users, labels, scores) == pytest.approx(_dcg([0, 0, 1]) / _dcg([1]))
    # same rows, positive first: perfect
    assert ndcg_at_5(users, np.array([1, 0, 0, 0]), scores) == pytest.approx(1.0)


def test_ndcg_users_without_positive_count_as_zero() -> None:
    users = np.array([1, 1, 2, 2])
    labels = np.array([1, 0, 0, 0])
    scores = np.array([0.9, 0.1, 0.5, 0.4])
    assert ndcg_at_5(users, labels, scores) == pytest.approx(0.5)


def test_ndcg_cuts_at_five_and_handles_interleaved_rows_and_repeated_pairs() -> None:
    # one user, 7 rows (rows of another user interleaved); the repeated video 3 is just a row
    users = np.array([1, 2, 1, 1, 1, 2, 1, 1, 1])
    videos = np.array([3, 9, 3, 4, 5, 8, 6, 7, 8])
    labels = np.array([0, 1, 1, 0, 0, 0, 0, 0, 1])
    scores = np.array([0.9, 0.2, 0.8, 0.7, 0.6, 0.1, 0.5, 0.4, 0.3])
    # user 1 order: rows 0,2,3,4,6,7,8 -> gains 0,1,0,0,0,0,1 -> top5 [0,1,0,0,0]
    expected_u1 = _dcg([0, 1, 0, 0, 0]) / _dcg([1, 1])
    expected_u2 = 1.0
    assert len(set(zip(users.tolist(), videos.tolist(), strict=True))) == 8  # a repeated pair
    assert ndcg_at_5(users, labels, scores) == pytest.approx((expected_u1 + expected_u2) / 2)


def test_evaluate_reports_the_five_fields() -> None:
    users = np.array([1, 1, 2, 2, 2])
    labels = np.array([1, 0, 0, 1, 1])
    scores = np.array([0.2, 0.1, 0.3, 0.9, 0.8])
    result = evaluate(users, labels, scores)
    assert set(result) == {"GAUC", "nDCG@5", "primary", "users", "rows"}
    assert result["GAUC"] == pytest.approx(1.0)
    assert result["nDCG@5"] == pytest.approx(1.0)
    assert result["primary"] == pytest.approx(1.0)
    assert (result["users"], result["rows"]) == (2.0, 5.0)


def test_oracle_ndcg_is_below_one_only_through_users_without_positives() -> None:
    users = np.array([1, 1, 2, 2, 3])
    labels = np.array([1, 0, 0, 0, 1])
    result = evaluate(users, labels, labels.astype(float))
    assert result["GAUC"] == 1.0
    assert result["nDCG@5"] == pytest.approx(2 / 3)


def test_gauc_matches_per_user_sklearn_on_random_data() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    n = 3000
    users = rng.integers(0, 60, n)
    labels = (rng.random(n) < rng.random(60)[users]).astype(int)
    scores = rng.integers(0, 8, n) / 8.0  # many ties
    total = weight = 0.0
    for u in np.unique(users):
        y, s = labels[users == u], scores[users == u]
        if 0 < y.sum() < len(y):
            total += y.sum() * metrics.roc_auc_score(y, s)
            weight += y.sum()
    assert gauc(users, labels, scores) == pytest.approx(total / weight, abs=1e-12)


def test_ndcg_matches_a_plain_loop_on_random_data() -> None:
    rng = np.random.default_rng(5)
    n = 2000
    users = rng.integers(0, 80, n)
    labels = (rng.random(n) < 0.3).astype(int)
    scores = rng.integers(0, 5, n).astype(float)
    values = []
    for u in np.unique(users):
        rows = np.flatnonzero(users == u)
        ranked = sorted(rows, key=lambda r: -scores[r])  # Python's sort is stable
        ideal = sorted(labels[rows], reverse=True)
        best = _dcg(list(ideal))
        values.append(_dcg([labels[r] for r in ranked]) / best if best > 0 else 0.0)
    assert ndcg_at_5(users, labels, scores) == pytest.approx(float(np.mean(values)), abs=1e-12)
