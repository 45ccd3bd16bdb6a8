"""Real moves for the offline playbook agent: anchored edits of the seeds' ``main.py``.

History and feature moves add one line under a marker comment that every move keeps, so
they compose in any order on a lineage; parameter moves replace one exact line. A move that
sets a tunable value (a ``# tune:`` declaration) rewrites its declaration line, as a tuning
trial does: it applies only while the line holds the seed's value, so it never overrides a
tuned one. Moves for ``history_lgbm`` come first (``valid-refit`` also fits
``popularity``); the last ones edit the ``fm`` seed (the agent skips a move whose anchor is
absent from the parent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlab_core.api import Edit, PlaybookMove, seed_setting

_HISTORY = "# history additions (one line each)\n"
_FEATURES = "# feature additions (one line each)\n"
_DERIVED = "    pass  # derived columns\n"
_FIELDS = "# field additions (one line each)\n"


def _add(move_id: str, marker: str, line: str, hypothesis: str, rank: int) -> PlaybookMove:
    return PlaybookMove.adding_line(move_id, marker, line, hypothesis, rank=rank, family="ranking")


def _set(move_id: str, old: str, new: str, hypothesis: str, rank: int) -> PlaybookMove:
    return PlaybookMove.replacing(move_id, old, new, hypothesis, rank=rank, family="ranking")


def _tuned(
    move_id: str, seed: str, values: dict[str, Any], hypothesis: str, rank: int
) -> PlaybookMove:
    """A move that sets ``seed``'s declared ``values`` on their declaration lines."""
    edits = seed_setting(Path(__file__).parent / "seeds" / seed, values)
    return PlaybookMove(id=move_id, hypothesis=hypothesis, edits=edits, rank=rank, family="ranking")


MOVES: list[PlaybookMove] = [
    _add(
        "recent-windows",
        _HISTORY,
        'HISTORY += [("video_3d", ["video_id"], 3), ("user_3d", ["user_id"], 3), ("author_7d", ["author_id"], 7)]',
        "Add 3- and 7-day lag windows: video appeal drifts over the month, so recent rates "
        "should rank better than all-history rates.",
        10,
    ),
    _add(
        "recency-decay",
        _HISTORY,
        'DECAYED += [("video_decay", ["video_id"], 2.0), ("user_decay", ["user_id"], 4.0), ("author_decay", ["author_id"], 4.0)]',
        "Add exponentially time-decayed video, user and author long-view rates (half-life 2-4 "
        "days): fresh uploads fade and appeal drifts, so yesterday should count more than two "
        "weeks ago without the hard cut of a fixed window.",
        15,
    ),
    _add(
        "user-author",
        _HISTORY,
        'HISTORY += [("user_author", ["user_id", "author_id"], None)]',
        "Add the user's earlier long-view rate on the same author: people come back to "
        "authors they like, which no single-entity rate sees.",
        20,
    ),
    _tuned(
        "truncation-5",
        "history_lgbm",
        {"lambdarank_truncation_level": 5},
        "Truncate lambdarank at 5: the metric only looks at each user's top 5, so pairs below "
        "it waste gradient.",
        30,
    ),
    _add(
        "scenario-interactions",
        _HISTORY,
        'HISTORY += [("user_tab", ["user_id", "tab"], None), ("video_tab", ["video_id", "tab"], None)]',
        "Add user x tab and video x tab history: the same video is watched differently in "
        "different scenarios.",
        40,
    ),
    _set(
        "rank-xendcg",
        '    "objective": "lambdarank",\n',
        '    "objective": "rank_xendcg",\n',
        "Switch to the rank_xendcg objective: it is a smoother listwise loss that often beats "
        "lambdarank on noisy binary labels.",
        50,
    ),
    PlaybookMove(
        id="user-duration-patience",
        hypothesis="Add the user's earlier long-view rate within the video's duration range: "
        "patience differs by user and long_view depends on duration.",
        edits=[
            Edit(
                file="main.py",
                anchor=_DERIVED,
                replacement='    rows["dur_bucket"] = np.log2(rows["duration_s"].fillna(20.0).clip(lower=1.0)).round().astype(np.int64)\n'
                + _DERIVED,
            ),
            Edit(
                file="main.py",
                anchor=_HISTORY,
                replacement=_HISTORY
                + 'HISTORY += [("user_duration", ["user_id", "dur_bucket"], None)]\n',
            ),
        ],
        family="ranking",
        rank=60,
    ),
    _add(
        "video-statistics",
        _FEATURES,
        'EXTRA_FEATURES += ["video_play_progress", "video_complete_rate"]',
        "Add the video's pre-period statistics (play progress, complete plays per show): a "
        "prior for new videos without history.",
        70,
    ),
    _set(
        "no-query-norm",
        '    "lambdarank_norm": True,\n',
        '    "lambdarank_norm": False,\n',
        "Turn per-query normalisation off: GAUC weights users by positives, so heavy users "
        "should weigh more in the loss too.",
        80,
    ),
    _tuned(
        "slower-learning",
        "history_lgbm",
        {"learning_rate": 0.04},
        "Halve the learning rate (early stopping finds the rounds): a smoother ensemble "
        "generalises better to the next week.",
        90,
    ),
    _set(
        "valid-refit",
        "REFIT_ON_VAL_FOR_TEST = False\n",
        "REFIT_ON_VAL_FOR_TEST = True\n",
        "Refit on train + valid for test scores with the validated number of rounds: the test "
        "week is closer to the valid week than to the training weeks.",
        100,
    ),
    _add(
        "user-features",
        _FEATURES,
        'EXTRA_FEATURES += ["register_days", "follow_user_num", "is_video_author"]',
        "Add user profile features: within-user order cannot change from a user-only term, "
        "but trees can interact them with video features.",
        110,
    ),
    _tuned(
        "fm-learning-rate",
        "fm",
        {"LEARNING_RATE": 0.005},
        "Raise the FM learning rate to 0.005: on few batches per epoch the official 0.001 is "
        "still improving when the 40 epochs end.",
        120,
    ),
    _add(
        "fm-hour-field",
        _FIELDS,
        'FIELDS += ["hour"]',
        "Add the hour of day as an FM field: viewing patience changes through the day.",
        130,
    ),
]
