"""Real moves for the offline playbook agent, written as anchored edits on the seed.

Feature moves add one line under a marker comment that every move keeps, so they compose
in any order on a lineage.
"""

from __future__ import annotations

from rlab_core.api import Edit, PlaybookMove

_MARKER = "# feature additions (one line each)\n"
_DERIVED = "        pass  # derived columns\n"


def _feature(move_id: str, line: str, hypothesis: str, rank: int) -> PlaybookMove:
    return PlaybookMove(
        id=move_id,
        hypothesis=hypothesis,
        edits=[Edit(file="main.py", anchor=_MARKER, replacement=_MARKER + line + "\n")],
        family="classification",
        rank=rank,
    )


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
        family="classification",
        rank=70,
    ),
    PlaybookMove(
        id="l2",
        hypothesis="Raise the L2 penalty to 1.0: many one-hot columns overfit rare levels.",
        edits=[Edit(file="main.py", anchor="L2 = 1e-6\n", replacement="L2 = 1.0\n")],
        family="classification",
        rank=80,
    ),
    PlaybookMove(
        id="min-level-count",
        hypothesis="Drop categorical levels seen fewer than 30 times in training: their weights are noise.",
        edits=[
            Edit(
                file="main.py", anchor="MIN_LEVEL_COUNT = 1\n", replacement="MIN_LEVEL_COUNT = 30\n"
            )
        ],
        family="classification",
        rank=90,
    ),
    PlaybookMove(
        id="newton-steps",
        hypothesis="Take 10 Newton steps instead of 6 so the fit converges with many features.",
        edits=[
            Edit(file="main.py", anchor="NEWTON_STEPS = 6\n", replacement="NEWTON_STEPS = 10\n")
        ],
        family="classification",
        rank=100,
    ),
]
