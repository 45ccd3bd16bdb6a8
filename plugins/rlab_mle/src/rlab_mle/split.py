"""The framework-held validation split of public train: fixed, seeded, stratified or grouped.

Classification is stratified on the label (every class with two or more rows lands on both
sides); rows that share a group value stay together; anything else is a plain seeded
shuffle. The same options give the same rows on every machine.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def validation_mask(
    n_rows: int,
    fraction: float,
    seed: int,
    *,
    strata: pd.Series | None = None,
    groups: pd.Series | None = None,
) -> np.ndarray:
    """Boolean mask of the validation rows among ``n_rows``."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(n_rows, dtype=bool)
    if groups is not None:
        codes, uniques = pd.factorize(groups.astype(str), sort=True)
        sizes = np.bincount(codes, minlength=len(uniques))
        chosen, total = [], 0
        for group in rng.permutation(len(uniques)):
            if total >= fraction * n_rows or len(chosen) == len(uniques) - 1:
                break
            chosen.append(group)
            total += sizes[group]
        mask[np.isin(codes, chosen)] = True
        return mask
    if strata is not None:
        codes, _ = pd.factorize(strata.astype(str), sort=True)
        for label in np.unique(codes):
            rows = rng.permutation(np.flatnonzero(codes == label))
            if len(rows) < 2:
                continue
            take = min(len(rows) - 1, max(1, round(fraction * len(rows))))
            mask[rows[:take]] = True
        return mask
    take = min(n_rows - 1, max(1, round(fraction * n_rows)))
    mask[rng.permutation(n_rows)[:take]] = True
    return mask


def find_group_column(
    train: pd.DataFrame, test: pd.DataFrame | None, exclude: set[str]
) -> str | None:
    """A column whose values repeat in train but whose test values are mostly new there.

    That is how Kaggle splits by patient, user or session: the validation split must then
    keep each value on one side, or validation would be easier than the test.
    """
    if test is None:
        return None
    for column in train.columns:
        if column in exclude or column not in test.columns:
            continue
        values = train[column]
        if pd.api.types.is_float_dtype(values):
            continue
        unique = values.nunique()
        if unique < 10 or len(values) < 1.5 * unique:
            continue
        seen = test[column].astype(str).isin(set(values.astype(str)))
        if seen.mean() < 0.1:
            return str(column)
    return None
