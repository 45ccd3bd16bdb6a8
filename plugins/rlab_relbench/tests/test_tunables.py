"""The seeds' tunable parameters, the settings at their corners, and the moves that set them."""

from __future__ import annotations

import pytest
from rlab_relbench.benchmark import SEEDS
from rlab_relbench.gnn_playbook import gnn_moves
from rlab_relbench.playbook import moves

from rlab_core.api import declared_params, read_source
from rlab_core.testing.tunables import check_corner_settings, check_setting_moves, described

LGBM = {
    "learning_rate": ("float", 0.01, 0.3, True, 0.05),
    "num_leaves": ("int", 8, 255, True, 31),
    "min_data_in_leaf": ("int", 5, 500, True, 50),
    "NUM_ROUNDS": ("int", 50, 1000, True, 200),
}
EXPECTED: dict[str, dict[str, tuple]] = {
    "entity_sql_lgbm": {
        **LGBM,
        "feature_fraction": ("float", 0.5, 1.0, False, 0.9),
        "bagging_fraction": ("float", 0.5, 1.0, False, 1.0),
        "lambda_l2": ("float", 1e-8, 10.0, True, 1e-8),
    },
    "entity_only_lgbm": LGBM,
    "rec_repeat_rank": {
        **LGBM,
        "NUM_ROUNDS": ("int", 50, 1000, True, 150),
        "POP_DAYS": ("int", 3, 90, True, 30),
        "POP_CANDIDATES": ("int", 5, 100, True, 20),
    },
    "gnn": {
        "LR": ("float", 0.0005, 0.05, True, 0.005),
        "CHANNELS": ("choice", [32, 64, 128], 64),
        "FANOUT": ("int", 32, 256, True, 128),
        "AGGR": ("choice", ["sum", "mean", "max"], "sum"),
        "HEAD_LAYERS": ("int", 1, 3, False, 1),
        "DROPOUT": ("float", 0.0, 0.5, False, 0.0),
        "WEIGHT_DECAY": ("choice", [0.0, 1e-6, 1e-5, 1e-4], 0.0),
        "EPOCHS": ("int", 2, 6, False, 3),
        "LR_DECAY": ("choice", [None, 0.9, 0.8, 0.7, 0.5], None),
    },
}


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_each_seed_declares_its_parameters_around_its_values(seed) -> None:
    params = declared_params(read_source(SEEDS / seed))
    assert {p.name: described(p) for p in params} == EXPECTED[seed]


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_corner_settings_are_valid_candidates(seed) -> None:
    assert check_corner_settings(read_source(SEEDS / seed)) >= 2


PLAYBOOKS = {
    "entity_sql_lgbm": moves("binary_classification") + moves("regression"),
    "rec_repeat_rank": moves("recommendation"),
    "gnn": [m for kind in ("binary_classification", "recommendation") for m in gnn_moves(kind)],
}


@pytest.mark.parametrize("seed", list(PLAYBOOKS))
def test_moves_set_declared_values_on_their_lines_and_never_override_a_tuned_one(seed) -> None:
    set_by = check_setting_moves(read_source(SEEDS / seed), PLAYBOOKS[seed])
    assert set_by, "no move sets a declared value"


def test_the_entity_only_seed_takes_only_the_moves_that_set_its_lines() -> None:
    source = read_source(SEEDS / "entity_only_lgbm")
    applied = set()
    for move in moves("binary_classification"):
        if all(source["main.py"].count(e.anchor) == 1 for e in move.edits):
            check_setting_moves(source, [move])
            applied.add(move.id)
    assert applied == {"min-leaf-200", "slow-lr", "leaves-63"}
