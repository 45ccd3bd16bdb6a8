"""The seeds' tunable parameters, the settings at their corners, and the moves that set them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rlab_relbench.benchmark import SEEDS
from rlab_relbench.gnn_playbook import gnn_moves
from rlab_relbench.playbook import moves

from rlab_core.api import EditError, PlaybookMove, apply_edits, read_source
from rlab_core.tuning.space import TunableParam, declared_params, setting_edits

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


PLAYBOOKS = {
    "entity_sql_lgbm": moves("binary_classification") + moves("regression"),
    "rec_repeat_rank": moves("recommendation"),
    "gnn": [m for kind in ("binary_classification", "recommendation") for m in gnn_moves(kind)],
}


def set_values(source: dict[str, str], move: PlaybookMove) -> dict[str, Any]:
    """The declared values ``move`` changes on ``source`` (its ranges still hold them)."""
    before = {p.name: p.current for p in declared_params(source)}
    after = {p.name: p.current for p in declared_params(apply_edits(source, move.edits, ("*.py",)))}
    assert after.keys() == before.keys(), move.id
    return {name: value for name, value in after.items() if value != before[name]}


@pytest.mark.parametrize("seed", list(PLAYBOOKS))
def test_moves_set_declared_values_on_their_lines_and_never_override_a_tuned_one(seed) -> None:
    source = read_source(SEEDS / seed)
    params = {p.name: p for p in declared_params(source)}
    assert params.keys() == EXPECTED[seed].keys()
    set_by: dict[str, str] = {}
    for move in {m.id: m for m in PLAYBOOKS[seed]}.values():
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
    assert set_by, "no move sets a declared value"


def ends(param: TunableParam) -> list[Any]:
    if param.kind == "choice":
        return list(param.choices or [])
    low, high = (int(v) if param.kind == "int" else v for v in (param.low, param.high))
    return [low, high]


def test_the_entity_only_seed_takes_only_the_moves_that_set_its_lines() -> None:
    source = read_source(SEEDS / "entity_only_lgbm")
    applied = set()
    for move in moves("binary_classification"):
        if all(source["main.py"].count(e.anchor) == 1 for e in move.edits):
            set_values(source, move)
            applied.add(move.id)
    assert applied == {"min-leaf-200", "slow-lr", "leaves-63"}
