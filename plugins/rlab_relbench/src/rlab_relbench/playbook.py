"""Real moves for the offline playbook agent, written as anchored edits on the seeds.

Each move adds one line under a marker comment that every move keeps, so moves compose
in any order along a lineage. Entity moves edit ``main.py`` of the SQL-aggregates seed
(and apply to the entity-table-only seed only where they say so: they do not, so the
agent skips them there); recommendation moves edit the repeat-rank seed.
"""

from __future__ import annotations

from rlab_core.api import PlaybookMove

SWITCHES = "# feature switches (one line each)\n"
MODEL = "# model settings (one line each)\n"
AGGS = "            # extra aggregates (one line each)\n"
POST = "    # prediction post-processing (one line each)\n"
DERIVED = "    # derived features (one line each)\n"


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
    m = [
        (
            MODEL,
            "TRAIN_HALF_LIFE_DAYS = 60",
            "Weight training rows by recency (half-life 60 days): the newest rows are closest to the evaluation period.",
            10,
        ),
        (
            SWITCHES,
            "LABEL_HISTORY = True",
            "Add the entity's own earlier labels (mean, count, last): an entity's past outcomes are its strongest predictor.",
            20,
        ),
        (
            AGGS,
            '            exprs += [f\'COUNT(DISTINCT c."{k}") FILTER (WHERE c."{tcol}" >= l.__asof - INTERVAL 28 DAY) AS "{p}_distinct28_{k}"\' for k in spec["fkeys"] if k != fkey]',
            "Count distinct linked entities (e.g. destinations, carriers) in the last 28 days: breadth of activity signals exposure to trouble.",
            30,
        ),
        (
            SWITCHES,
            "WINDOWS_DAYS = [3, *WINDOWS_DAYS]",
            "Add a 3-day window: the most recent activity carries momentum the 7-day window dilutes.",
            40,
        ),
        (
            SWITCHES,
            'NUMERIC_AGGS = [*NUMERIC_AGGS, "stddev", "min"]',
            "Add standard deviation and minimum of numeric columns: volatility, not just level, predicts extremes.",
            50,
        ),
        (
            MODEL,
            "PARAMS.update(cat_smooth=50, min_data_per_group=200)",
            "Smooth categorical splits (plane model, manufacturer): rare levels otherwise get extreme leaf values.",
            60,
        ),
        (
            MODEL,
            "PARAMS.update(feature_fraction=0.7, bagging_fraction=0.8, bagging_freq=1)",
            "Subsample features and rows per tree: many correlated aggregates overfit without it.",
            70,
        ),
        (
            MODEL,
            'PARAMS["min_data_in_leaf"] = 200',
            "Require 200 rows per leaf: labels are noisy weekly outcomes, small leaves memorise noise.",
            80,
        ),
        (
            MODEL,
            'PARAMS["learning_rate"] = 0.03; NUM_ROUNDS = 350',
            "Lower the learning rate with more rounds: a smoother ensemble generalises better.",
            90,
        ),
        (
            SWITCHES,
            "MAX_TRAIN_ROWS = 60_000",
            "Train on up to 60,000 rows instead of 30,000: more history of rarer entities.",
            100,
        ),
        (
            SWITCHES,
            "WINDOWS_DAYS = [*WINDOWS_DAYS[:-1], 90, None]",
            "Add a 90-day window: a quarter of history separates chronic from occasional behaviour.",
            110,
        ),
        (
            MODEL,
            'PARAMS["num_leaves"] = 63',
            "Use 63 leaves: interactions between activity and entity attributes need deeper trees.",
            120,
        ),
    ]
    out = [
        _move(f"{family}-{i}", a, line, h, family, rank) for i, (a, line, h, rank) in enumerate(m)
    ]
    names = [
        "recency-weight",
        "label-history",
        "distinct-links",
        "window-3d",
        "stddev-min",
        "cat-smooth",
        "bagging",
        "min-leaf-200",
        "slow-lr",
        "more-rows",
        "window-90d",
        "leaves-63",
    ]
    out = [
        mv.model_copy(update={"id": n, "rank": RANKS[n]}) for mv, n in zip(out, names, strict=True)
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
