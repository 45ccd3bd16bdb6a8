"""Real moves for the offline playbook agent, written as anchored edits on the seeds.

Most moves add one line under a marker comment that every move keeps, so moves compose in
any order along a lineage. A move that sets a tunable value (a ``# tune:`` declaration)
rewrites its declaration line, as a tuning trial does (:func:`declared_edits`): it applies
only while the line holds the seed's value, so it never overrides a tuned one, and no two
moves set the same value. Entity moves edit ``main.py`` of the SQL-aggregates seed; the
entity-table-only seed declares the same LightGBM lines, so the moves that only set
``learning_rate``, ``num_leaves``, ``min_data_in_leaf`` or ``NUM_ROUNDS`` apply there too
(the others do not, and the agent skips them there). Recommendation moves edit the
repeat-rank seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlab_core.api import Edit, PlaybookMove, seed_setting

SEEDS = Path(__file__).parent / "seeds"
SWITCHES = "# feature switches (one line each)\n"
MODEL = "# model settings (one line each)\n"
AGGS = "            # extra aggregates (one line each)\n"
POST = "    # prediction post-processing (one line each)\n"
DERIVED = "    # derived features (one line each)\n"


def declared_edits(seed: str, values: dict[str, Any]) -> list[Edit]:
    """Edits that set ``values`` on the declaration lines of ``seeds/<seed>/main.py``."""
    return seed_setting(SEEDS / seed, values)


def _move(
    move_id: str, marker: str, line: str, hypothesis: str, family: str, rank: int
) -> PlaybookMove:
    return PlaybookMove.adding_line(move_id, marker, line, hypothesis, rank=rank, family=family)


RANKS = {  # order of trial: what gained on rel-flights validation first
    "more-rows": 20,
    "distinct-links": 30,
    "bagging": 40,
    "min-leaf-200": 50,
    "window-3d": 60,
    "slow-lr": 70,
    "stddev-min": 80,
    "recency-weight": 90,
    "label-history": 100,
    "cat-smooth": 105,
    "window-90d": 110,
    "leaves-63": 120,
}


def _entity(family: str) -> list[PlaybookMove]:
    def add(move_id: str, marker: str, line: str, hypothesis: str) -> PlaybookMove:
        return _move(move_id, marker, line, hypothesis, family, RANKS[move_id])

    def tuned(move_id: str, values: dict[str, Any], hypothesis: str) -> PlaybookMove:
        edits = declared_edits("entity_sql_lgbm", values)
        return PlaybookMove(
            id=move_id, hypothesis=hypothesis, edits=edits, family=family, rank=RANKS[move_id]
        )

    out = [
        add(
            "recency-weight",
            MODEL,
            "TRAIN_HALF_LIFE_DAYS = 60",
            "Weight training rows by recency (half-life 60 days): the newest rows are closest to the evaluation period.",
        ),
        add(
            "label-history",
            SWITCHES,
            "LABEL_HISTORY = True",
            "Add the entity's own earlier labels (mean, count, last): an entity's past outcomes are its strongest predictor.",
        ),
        add(
            "distinct-links",
            AGGS,
            '            exprs += [f\'COUNT(DISTINCT c."{k}") FILTER (WHERE c."{tcol}" >= l.__asof - INTERVAL 28 DAY) AS "{p}_distinct28_{k}"\' for k in spec["fkeys"] if k != fkey]',
            "Count distinct linked entities (e.g. destinations, carriers) in the last 28 days: breadth of activity signals exposure to trouble.",
        ),
        add(
            "window-3d",
            SWITCHES,
            "WINDOWS_DAYS = [3, *WINDOWS_DAYS]",
            "Add a 3-day window: the most recent activity carries momentum the 7-day window dilutes.",
        ),
        add(
            "stddev-min",
            SWITCHES,
            'NUMERIC_AGGS = [*NUMERIC_AGGS, "stddev", "min"]',
            "Add standard deviation and minimum of numeric columns: volatility, not just level, predicts extremes.",
        ),
        add(
            "cat-smooth",
            MODEL,
            "PARAMS.update(cat_smooth=50, min_data_per_group=200)",
            "Smooth categorical splits (plane model, manufacturer): rare levels otherwise get extreme leaf values.",
        ),
        tuned(
            "bagging",
            {"feature_fraction": 0.7, "bagging_fraction": 0.8},
            "Subsample features and rows per tree: many correlated aggregates overfit without it.",
        ),
        tuned(
            "min-leaf-200",
            {"min_data_in_leaf": 200},
            "Require 200 rows per leaf: labels are noisy weekly outcomes, small leaves memorise noise.",
        ),
        tuned(
            "slow-lr",
            {"learning_rate": 0.03, "NUM_ROUNDS": 350},
            "Lower the learning rate with more rounds: a smoother ensemble generalises better.",
        ),
        add(
            "more-rows",
            SWITCHES,
            "MAX_TRAIN_ROWS = 60_000",
            "Train on up to 60,000 rows instead of 30,000: more history of rarer entities.",
        ),
        add(
            "window-90d",
            SWITCHES,
            "WINDOWS_DAYS = [*WINDOWS_DAYS[:-1], 90, None]",
            "Add a 90-day window: a quarter of history separates chronic from occasional behaviour.",
        ),
        tuned(
            "leaves-63",
            {"num_leaves": 63},
            "Use 63 leaves: interactions between activity and entity attributes need deeper trees.",
        ),
    ]
    if family == "regression":
        out += [
            _move(
                "l1-objective",
                MODEL,
                'REGRESSION_OBJECTIVE = "l1"',
                "Fit an L1 objective: the metric is MAE (normalised), and the median is MAE-optimal under heavy tails.",
                "regression",
                5,
            ),
            _move(
                "clip-quantiles",
                POST,
                "    out = out if BINARY else np.clip(out, *TRAIN_Q)",
                "Clip predictions to the train target's 2nd-98th percentiles: extreme guesses cost MAE.",
                "regression",
                15,
            ),
            _move(
                "huber-objective",
                MODEL,
                'REGRESSION_OBJECTIVE = "huber"',
                "Fit a Huber objective: robust to the long delay tail while keeping squared loss near the centre.",
                "regression",
                130,
            ),
        ]
    return out


def moves(task_type: str) -> list[PlaybookMove]:
    """The moves for a task type (binary classification, regression, recommendation)."""
    if task_type == "recommendation":
        from rlab_relbench.rec_playbook import MOVES

        return list(MOVES)
    family = "regression" if task_type == "regression" else "classification"
    return _entity(family)
