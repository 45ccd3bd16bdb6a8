"""Kaggle medal thresholds on a competition's leaderboard, as mle-bench computes them.

``leaderboard.csv`` is Kaggle's final board, row 0 the winner; only its ``score`` column
and row order are used. Lower is better when the first score is below the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rlab_core.api import ConfigError


@dataclass(frozen=True)
class Thresholds:
    """Scores needed for each medal and the board's median, with the board's direction."""

    gold: float
    silver: float
    bronze: float
    median: float
    is_lower_better: bool
    teams: int


def read_scores(path: Path) -> np.ndarray:
    """The ``score`` column of a leaderboard file, in board order."""
    try:
        frame = pd.read_csv(path)
    except Exception as exc:
        raise ConfigError(f"The leaderboard {path} is not a readable CSV ({exc}).") from None
    if "score" not in frame.columns:
        raise ConfigError(
            f"The leaderboard {path} has no 'score' column (columns: {list(frame.columns)})."
        )
    scores = pd.to_numeric(frame["score"], errors="coerce").dropna().to_numpy(dtype=float)
    if len(scores) == 0:
        raise ConfigError(f"The leaderboard {path} has no scores.")
    return scores


def medal_positions(teams: int) -> tuple[int, int, int]:
    """1-based board positions of the gold, silver and bronze thresholds for ``teams`` teams."""
    if teams < 1:
        raise ValueError("a leaderboard needs at least one team")
    if teams < 100:
        return max(1, int(teams * 0.1)), max(1, int(teams * 0.2)), max(1, int(teams * 0.4))
    if teams < 250:
        return 10, max(1, int(teams * 0.2)), max(1, int(teams * 0.4))
    if teams < 1000:
        return 10 + int(teams * 0.002), 50, 100
    return 10 + int(teams * 0.002), max(1, int(teams * 0.05)), max(1, int(teams * 0.1))


def thresholds(scores: np.ndarray) -> Thresholds:
    """Medal thresholds and median of a board (``scores`` in board order, winner first)."""
    scores = np.asarray(scores, dtype=float)
    gold, silver, bronze = medal_positions(len(scores))
    return Thresholds(
        gold=float(scores[gold - 1]),
        silver=float(scores[silver - 1]),
        bronze=float(scores[bronze - 1]),
        median=float(np.median(scores)),
        is_lower_better=bool(scores[0] < scores[-1]),
        teams=len(scores),
    )


def rank(score: float | None, bar: Thresholds) -> dict[str, bool]:
    """Which medal ``score`` earns (exclusive, gold first) and whether it beats the median."""
    if score is None:
        return dict.fromkeys(("gold_medal", "silver_medal", "bronze_medal", "above_median"), False)

    def reaches(threshold: float) -> bool:
        return score <= threshold if bar.is_lower_better else score >= threshold

    gold = reaches(bar.gold)
    silver = not gold and reaches(bar.silver)
    bronze = not gold and not silver and reaches(bar.bronze)
    above = score < bar.median if bar.is_lower_better else score > bar.median
    return {
        "gold_medal": gold,
        "silver_medal": silver,
        "bronze_medal": bronze,
        "above_median": bool(above),
    }
