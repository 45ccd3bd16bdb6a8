"""Medal thresholds: every tier of Kaggle's table, direction, exclusivity, the median."""

from __future__ import annotations

import numpy as np
import pytest
from rlab_mle import leaderboard

from rlab_core.api import ConfigError


@pytest.mark.parametrize(
    ("teams", "positions"),
    [
        (1, (1, 1, 1)),
        (9, (1, 1, 3)),
        (10, (1, 2, 4)),
        (99, (9, 19, 39)),  # < 100: 10 %, 20 %, 40 %
        (100, (10, 20, 40)),  # 100-249: 10, 20 %, 40 %
        (249, (10, 49, 99)),
        (250, (10, 50, 100)),  # 250-999: 10 + 0.2 %, 50, 100
        (999, (11, 50, 100)),
        (1000, (12, 50, 100)),  # >= 1000: 10 + 0.2 %, 5 %, 10 %
        (4321, (18, 216, 432)),
    ],
)
def test_medal_positions_per_tier(teams: int, positions: tuple[int, int, int]) -> None:
    assert leaderboard.medal_positions(teams) == positions


@pytest.mark.parametrize("teams", [50, 150, 500, 2000])
def test_thresholds_are_the_scores_at_those_positions(teams: int) -> None:
    scores = np.linspace(0.99, 0.5, teams)  # best first, higher is better
    bar = leaderboard.thresholds(scores)
    gold, silver, bronze = leaderboard.medal_positions(teams)
    assert (bar.gold, bar.silver, bar.bronze) == (
        scores[gold - 1],
        scores[silver - 1],
        scores[bronze - 1],
    )
    assert bar.median == pytest.approx(np.median(scores))
    assert not bar.is_lower_better and bar.teams == teams


def test_medals_are_exclusive_and_direction_follows_the_board() -> None:
    higher = leaderboard.thresholds([round(1 - 0.1 * i, 1) for i in range(11)])  # 1, 2, 4
    assert (higher.gold, higher.silver, higher.bronze, higher.median) == (1.0, 0.9, 0.7, 0.5)
    assert leaderboard.rank(1.0, higher) == {
        "gold_medal": True, "silver_medal": False, "bronze_medal": False, "above_median": True,
    }  # fmt: skip
    assert leaderboard.rank(0.95, higher)["silver_medal"]
    assert leaderboard.rank(0.7, higher)["bronze_medal"]  # reaching the threshold is enough
    assert leaderboard.rank(0.5, higher) == dict.fromkeys(
        ("gold_medal", "silver_medal", "bronze_medal", "above_median"), False
    )  # the median itself is not above it
    lower = leaderboard.thresholds([round(0.1 * i, 1) for i in range(11)])  # an error metric
    assert lower.is_lower_better and lower.gold == 0.0
    assert leaderboard.rank(0.25, lower) == {
        "gold_medal": False, "silver_medal": False, "bronze_medal": True, "above_median": True,
    }  # fmt: skip
    assert not any(leaderboard.rank(None, lower).values())


def test_bad_leaderboards_are_clear(tmp_path) -> None:
    path = tmp_path / "leaderboard.csv"
    path.write_text("teamId,points\n1,3\n")
    with pytest.raises(ConfigError, match="no 'score' column"):
        leaderboard.read_scores(path)
    path.write_text("teamId,score\n")
    with pytest.raises(ConfigError, match="has no scores"):
        leaderboard.read_scores(path)
