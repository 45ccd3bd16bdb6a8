"""Real moves for the offline playbook agent, written as anchored edits on the seed.

Feature moves add one line under a marker comment that every move keeps, so they compose
in any order on a lineage. A move that sets a tunable value (a ``# tune:`` declaration)
rewrites its declaration line, as a tuning trial does: it applies only while the line holds
the seed's value, so it never overrides a tuned one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlab_core.api import Edit, PlaybookMove, seed_setting

_MARKER = "# feature additions (one line each)\n"
_DERIVED = "        pass  # derived columns\n"
_FAMILY = "classification"


def _feature(move_id: str, line: str, hypothesis: str, rank: int) -> PlaybookMove:
    return PlaybookMove.adding_line(move_id, _MARKER, line, hypothesis, rank=rank, family=_FAMILY)


#: The seed whose declared parameters setting moves rewrite, line by line
SEED_DIR = Path(__file__).parent / "seeds" / "flights_delay"


def _set(move_id: str, values: dict[str, Any], hypothesis: str, rank: int) -> PlaybookMove:
    """A move that sets the seed's declared ``values`` on their declaration lines."""
    edits = seed_setting(SEED_DIR, values)
    return PlaybookMove(id=move_id, hypothesis=hypothesis, edits=edits, rank=rank, family=_FAMILY)


MOVES: list[PlaybookMove] = [
    _feature(
        "hour-categorical",
        'CATEGORICAL += ["hour"]',
        "One-hot departure hour: delays build up through the day non-linearly, which a single slope misses.",
        10,
    ),
    _feature(
        "carrier",
        'CATEGORICAL += ["carrier"]',
        "One-hot carrier: airlines differ systematically in punctuality.",
        20,
    ),
    _feature(
        "weather",
        'NUMERIC += ["precip", "visib", "wind_speed", "humid", "temp", "pressure"]',
        "Add origin weather at the scheduled hour: rain, low visibility and wind delay departures.",
        30,
    ),
    _feature(
        "weekday",
        'CATEGORICAL += ["weekday"]',
        "One-hot weekday: traffic and delays follow a weekly cycle (months are disjoint across splits, weekdays are not).",
        40,
    ),
    _feature(
        "origin",
        'CATEGORICAL += ["origin"]',
        "One-hot origin airport: EWR, JFK and LGA have different congestion.",
        50,
    ),
    _feature(
        "dest",
        'CATEGORICAL += ["dest"]',
        "One-hot destination: some destination airports are congested; rare levels are dropped by the level filter.",
        60,
    ),
    PlaybookMove(
        id="origin-hour",
        hypothesis="Add an origin x hour interaction: each airport's evening peak differs.",
        edits=[
            Edit(
                file="main.py",
                anchor=_DERIVED,
                replacement='        r["origin_hour"] = r["origin"] + "-" + r["hour"]\n' + _DERIVED,
            ),
            Edit(
                file="main.py",
                anchor=_MARKER,
                replacement=_MARKER + 'CATEGORICAL += ["origin_hour"]\n',
            ),
        ],
        family=_FAMILY,
        rank=70,
    ),
    _set(
        "l2",
        {"L2": 1.0},
        "Raise the L2 penalty to 1.0: many one-hot columns overfit rare levels.",
        80,
    ),
    _set(
        "min-level-count",
        {"MIN_LEVEL_COUNT": 30},
        "Drop categorical levels seen fewer than 30 times in training: their weights are noise.",
        90,
    ),
    _set(
        "newton-steps",
        {"NEWTON_STEPS": 10},
        "Take 10 Newton steps instead of 6 so the fit converges with many features.",
        100,
    ),
]
