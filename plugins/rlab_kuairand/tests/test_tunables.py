"""The seeds' tunable parameters, the settings at their corners, and the moves that set them."""

from __future__ import annotations

import pytest
from rlab_kuairand.playbook import MOVES
from rlab_kuairand.task import SEEDS

from rlab_core.api import declared_params, read_source
from rlab_core.testing.tunables import check_corner_settings, check_setting_moves, described

EXPECTED: dict[str, dict[str, tuple]] = {
    "history_lgbm": {
        "PRIOR": ("float", 1.0, 200.0, True, 20.0),
        "lambdarank_truncation_level": ("int", 5, 50, True, 20),
        "learning_rate": ("float", 0.01, 0.3, True, 0.08),
        "num_leaves": ("int", 8, 255, True, 31),
        "min_data_in_leaf": ("int", 5, 500, True, 50),
        "feature_fraction": ("float", 0.5, 1.0, False, 0.9),
        "lambda_l2": ("float", 1e-8, 10.0, True, 1e-8),
    },
    "fm": {
        "K": ("int", 4, 64, True, 16),
        "LEARNING_RATE": ("float", 0.0001, 0.02, True, 0.001),
        "BATCH": ("choice", [2048, 4096, 8192, 16384], 8192),
        "L2": ("float", 1e-8, 0.001, True, 1e-6),
        "DUR_BUCKETS": ("int", 4, 40, True, 10),
    },
    "popularity": {"PRIOR": ("float", 1.0, 500.0, True, 20.0)},
}


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_each_seed_declares_its_parameters_around_its_values(seed) -> None:
    params = declared_params(read_source(SEEDS / seed))
    assert {p.name: described(p) for p in params} == EXPECTED[seed]


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_corner_settings_are_valid_candidates(seed) -> None:
    assert check_corner_settings(read_source(SEEDS / seed)) >= 2


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_moves_set_declared_values_on_their_lines_and_never_override_a_tuned_one(seed) -> None:
    expected = {
        "history_lgbm": {
            "lambdarank_truncation_level": "truncation-5",
            "learning_rate": "slower-learning",
        },
        "fm": {"LEARNING_RATE": "fm-learning-rate"},
        "popularity": {},
    }
    assert check_setting_moves(read_source(SEEDS / seed), MOVES) == expected[seed]
