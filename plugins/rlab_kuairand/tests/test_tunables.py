"""The seeds' tunable parameters, the settings at their corners, and the moves that set them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rlab_kuairand.playbook import MOVES
from rlab_kuairand.task import SEEDS

from rlab_core.api import EditError, PlaybookMove, apply_edits, read_source
from rlab_core.tuning.space import TunableParam, declared_params, setting_edits

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


def described(p: TunableParam) -> tuple:
    if p.kind == "choice":
        return (p.kind, p.choices, p.current)
    return (p.kind, p.low, p.high, p.log, p.current)


def corners(params: list[TunableParam]) -> list[dict[str, Any]]:
    """All parameters low, all high, and each choice of every choice parameter."""

    def end(p: TunableParam, at: str) -> Any:
        if p.kind == "choice":
            return p.choices[0 if at == "low" else -1]
        value = p.low if at == "low" else p.high
        return int(value) if p.kind == "int" else value

    settings = [{p.name: end(p, at) for p in params} for at in ("low", "high")]
    for p in params:
        settings += [{p.name: choice} for choice in p.choices or []]
    return settings


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_each_seed_declares_its_parameters_around_its_values(seed) -> None:
    params = declared_params(read_source(SEEDS / seed))
    assert {p.name: described(p) for p in params} == EXPECTED[seed]


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_corner_settings_are_valid_candidates(seed) -> None:
    source = read_source(SEEDS / seed)
    params = declared_params(source)
    assert {p.name for p in params} == EXPECTED[seed].keys()
    for values in corners(params):
        changed = apply_edits(source, setting_edits(params, values), ("*.py",))
        compile(changed["main.py"], "main.py", "exec")
        now = {p.name: p.current for p in declared_params(changed)}
        assert {name: now[name] for name in values} == values


def set_values(source: dict[str, str], move: PlaybookMove) -> dict[str, Any]:
    """The declared values ``move`` changes on ``source`` (its ranges still hold them)."""
    before = {p.name: p.current for p in declared_params(source)}
    after = {p.name: p.current for p in declared_params(apply_edits(source, move.edits, ("*.py",)))}
    assert after.keys() == before.keys(), move.id
    return {name: value for name, value in after.items() if value != before[name]}


def ends(param: TunableParam) -> list[Any]:
    if param.kind == "choice":
        return list(param.choices or [])
    low, high = (int(v) if param.kind == "int" else v for v in (param.low, param.high))
    return [low, high]


@pytest.mark.parametrize("seed", list(EXPECTED))
def test_moves_set_declared_values_on_their_lines_and_never_override_a_tuned_one(seed) -> None:
    source = read_source(SEEDS / seed)
    params = {p.name: p for p in declared_params(source)}
    assert params.keys() == EXPECTED[seed].keys()
    set_by: dict[str, str] = {}
    for move in MOVES:
        try:
            values = set_values(source, move)
        except EditError:
            continue  # a move of another seed
        for name in values:
            assert set_by.setdefault(name, move.id) == move.id, f"{name}: {set_by[name]}, {move.id}"
            param = params[name]
            other = next(v for v in ends(param) if v != param.current)
            tuned = apply_edits(source, setting_edits([param], {name: other}), ("*.py",))
            with pytest.raises(EditError):  # a tuned parent keeps its value: the move skips it
                apply_edits(tuned, move.edits, ("*.py",))
        # a line a move adds never assigns a declared name: it would override a tuned value
        lines = {p.line for p in params.values()}
        for edit in (e for e in move.edits if e.anchor not in lines):
            added = edit.replacement.replace(edit.anchor, "")
            for name in params:
                assert not re.search(rf"\b{name}\s*=|[\"']{name}[\"']\s*[\]:]", added), move.id
    expected = {
        "history_lgbm": {
            "lambdarank_truncation_level": "truncation-5",
            "learning_rate": "slower-learning",
        },
        "fm": {"LEARNING_RATE": "fm-learning-rate"},
        "popularity": {},
    }
    assert set_by == expected[seed]
