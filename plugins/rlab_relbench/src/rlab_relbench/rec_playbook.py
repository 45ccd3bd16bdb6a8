"""Recommendation moves for the offline playbook agent: anchored edits on the repeat-rank seed.

A move that sets a tunable value rewrites its declaration line (see :mod:`rlab_relbench.playbook`).
"""

from __future__ import annotations

from typing import Any

from rlab_core.api import PlaybookMove
from rlab_relbench.playbook import declared_edits

SETTINGS = "# settings (one line each)\n"
FEATS = "    # extra features (one line each)\n"


def _move(move_id: str, marker: str, line: str, hypothesis: str, rank: int) -> PlaybookMove:
    return PlaybookMove.adding_line(
        move_id, marker, line, hypothesis, rank=rank, family="recommendation"
    )


def _tuned(move_id: str, values: dict[str, Any], hypothesis: str, rank: int) -> PlaybookMove:
    edits = declared_edits("rec_repeat_rank", values)
    return PlaybookMove(
        id=move_id, hypothesis=hypothesis, edits=edits, rank=rank, family="recommendation"
    )


def _feature(name: str, expr: str) -> str:
    return f'    pairs["{name}"] = {expr}; FEATURES.count("{name}") or FEATURES.append("{name}")'


MOVES: list[PlaybookMove] = [
    _move(
        "half-life-2d",
        SETTINGS,
        "HALF_LIVES_DAYS = [2, *HALF_LIVES_DAYS]",
        "Add a 2-day half-life and lead the heuristic with it: the latest destinations repeat most.",
        10,
    ),
    _move(
        "dec-rank",
        FEATS,
        _feature(
            "dec_rank", 'pairs.groupby("__row")[f"dec_{HALF_LIVES_DAYS[0]}"].rank(ascending=False)'
        ),
        "Give the ranker each candidate's rank within its source by decayed frequency: relative order matters more than level.",
        20,
    ),
    _move(
        "recency-rank",
        FEATS,
        _feature("recency_rank", 'pairs.groupby("__row")["days_since"].rank()'),
        "Give the ranker each candidate's recency rank within its source.",
        30,
    ),
    _tuned(
        "more-popular",
        {"POP_CANDIDATES": 40},
        "Backfill with the 40 most popular destinations instead of 20: sources with thin history need more candidates.",
        40,
    ),
    _tuned(
        "recent-popularity",
        {"POP_DAYS": 7},
        "Measure popularity over the last 7 days instead of 30: schedules change by season.",
        50,
    ),
    _move(
        "more-rows",
        SETTINGS,
        "MAX_TRAIN_ROWS = 24_000",
        "Train the ranker on 24,000 label rows instead of 12,000.",
        60,
    ),
    _tuned(
        "more-rounds",
        {"learning_rate": 0.03, "NUM_ROUNDS": 300},
        "Lower the learning rate with more rounds for a smoother ranker.",
        70,
    ),
    _tuned(
        "small-leaves",
        {"min_data_in_leaf": 20},
        "Allow leaves of 20 candidates: rare high-frequency repeaters are informative.",
        80,
    ),
    _tuned(
        "num-leaves-63",
        {"num_leaves": 63},
        "Use 63 leaves so frequency, recency and popularity can interact.",
        90,
    ),
    _move(
        "dst-degree",
        FEATS,
        _feature(
            "dst_sources",
            'pairs.groupby("dst")["__row"].transform("count") / pairs["__row"].nunique()',
        ),
        "Add the share of sources that have the destination as a candidate: a breadth-of-appeal signal (a share, so train and evaluation splits of different sizes agree).",
        100,
    ),
    _move(
        "heuristic-only",
        SETTINGS,
        "RERANK = False",
        "Rank by time-decayed frequency alone: checks whether the re-ranker earns its keep.",
        200,
    ),
]
