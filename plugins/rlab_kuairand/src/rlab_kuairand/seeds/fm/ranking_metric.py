"""The organizers' primary metric, (GAUC + nDCG@5) / 2, for early stopping inside the seed."""

from __future__ import annotations

import numpy as np


def primary(users: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> float:
    """GAUC weighted by positives and nDCG@5 with a stable sort, averaged."""
    position = np.arange(len(users))
    order = np.lexsort((scores, users))
    u, y, s = users[order], labels[order] > 0, scores[order]
    new_user = np.r_[True, u[1:] != u[:-1]]
    starts, index = np.flatnonzero(new_user), np.cumsum(new_user) - 1
    tie = np.r_[True, (u[1:] != u[:-1]) | (s[1:] != s[:-1])]
    tie_starts, tie_index = np.flatnonzero(tie), np.cumsum(tie) - 1
    tie_ends = np.r_[tie_starts[1:], len(u)] - 1
    rank = (tie_starts + tie_ends)[tie_index] / 2.0 - starts[index] + 1
    npos = np.bincount(index, weights=y)
    nneg = np.bincount(index) - npos
    mixed = (npos > 0) & (nneg > 0)
    rank_sum = np.bincount(index, weights=rank * y)
    auc = (rank_sum - npos * (npos + 1) / 2)[mixed] / (npos * nneg)[mixed]
    gauc = float((npos[mixed] * auc).sum() / npos[mixed].sum()) if mixed.any() else 0.5

    def dcg(sorted_labels: np.ndarray) -> np.ndarray:
        within = position - starts[index]
        top = within < 5
        gain = (np.exp2(sorted_labels) - 1) / np.log2(within + 2.0)
        return np.bincount(index[top], weights=gain[top], minlength=len(starts))

    labels = labels.astype(float)
    got = dcg(labels[np.lexsort((position, -scores, users))])
    ideal = dcg(labels[np.lexsort((-labels, users))])
    ndcg = np.divide(got, ideal, out=np.zeros_like(got), where=ideal > 0).mean()
    return (gauc + float(ndcg)) / 2.0
