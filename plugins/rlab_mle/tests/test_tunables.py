"""The tabular seed's tunable parameters, the settings at their corners, and the setting moves."""

from __future__ import annotations

import pytest
from rlab_mle.playbook import MOVES
from rlab_mle.task import MINI_ROWS, SEEDS

from rlab_core.api import (
    BudgetProgress,
    EditError,
    LocalSandbox,
    LocalSandboxConfig,
    apply_edits,
    read_source,
    write_source,
)
from rlab_core.testing import run_candidate
from rlab_core.tuning.space import TunableParam, declared_params, setting_edits

SEED = SEEDS / "tabular_lgbm"
EXPECTED = {
    "n_estimators": ("int", 50, 1000, True, 250),
    "learning_rate": ("float", 0.01, 0.3, True, 0.05),
    "num_leaves": ("int", 4, 255, True, 31),
    "min_child_samples": ("int", 5, 200, True, 20),
    "subsample": ("float", 0.5, 1.0, False, 1.0),
    "colsample_bytree": ("float", 0.5, 1.0, False, 1.0),
    "reg_alpha": ("float", 1e-8, 10.0, True, 1e-8),
    "reg_lambda": ("float", 1e-8, 10.0, True, 1e-8),
}


def corner(params: list[TunableParam], end: str) -> dict:
    """Every parameter at the low (or high) end of its range."""
    out = {}
    for p in params:
        value = p.low if end == "low" else p.high
        out[p.name] = int(value) if p.kind == "int" else value
    return out


def test_the_seed_declares_lightgbms_parameters_around_its_values() -> None:
    params = declared_params(read_source(SEED))
    found = {p.name: (p.kind, p.low, p.high, p.log, p.current) for p in params}
    assert found == EXPECTED
    assert all(p.low <= p.current <= p.high for p in params)
    text = read_source(SEED)["main.py"]
    assert "subsample_freq=1," in text  # so a tuned subsample below 1 really bags rows


@pytest.mark.parametrize("end", ["low", "high"])
def test_a_corner_setting_is_a_valid_candidate_that_runs(prepare, tmp_path, end) -> None:
    source = read_source(SEED)
    params = declared_params(source)
    values = corner(params, end)
    assert values.keys() == EXPECTED.keys()
    edits = setting_edits(params, values)
    changed = apply_edits(source, edits, ("*.py",))
    compile(changed["main.py"], "main.py", "exec")
    # the trial changed values only: the same declarations, now holding the corner
    assert {p.name: p.current for p in declared_params(changed)} == values
    diff = set(changed["main.py"].splitlines()) ^ set(source["main.py"].splitlines())
    assert all("# tune:" in line for line in diff)
    task = prepare("wdbc-breast-cancer")
    write_source(tmp_path / "src", changed, changed)
    execution, out = run_candidate(
        task, tmp_path / "src", LocalSandbox(LocalSandboxConfig()), tmp_path / "run"
    )
    assert execution.ok, execution.log_tail[-3000:]
    assert task.validate_outputs(out, "val") == [] and task.validate_outputs(out, "test") == []
    # a valid score; at the high corner leaves of 200 rows (of 364) leave a near-constant model
    assert 0.5 <= task.score(out, "val").primary <= 1


def test_setting_moves_rewrite_declarations_and_never_override_a_tuned_value() -> None:
    source = read_source(SEED)
    params = declared_params(source)
    set_by: dict[str, str] = {}
    for move in MOVES.values():
        changed = apply_edits(source, move.edits, ("*.py",))
        moved = {p.name: p.current for p in declared_params(changed)}  # still in range
        for name in [n for n, v in moved.items() if v != EXPECTED[n][4]]:
            assert name not in set_by, f"{move.id} and {set_by[name]} both set {name}"
            set_by[name] = move.id
            # on a parent whose value a trial tuned, the move no longer applies
            param = next(p for p in params if p.name == name)
            tuned = apply_edits(source, setting_edits(params, {name: other(param)}), ("*.py",))
            with pytest.raises(EditError):
                apply_edits(tuned, move.edits, ("*.py",))
        # a move sets a declared value on its own line, never by a later assignment
        assert "PARAMS[" not in changed["main.py"] and "PARAMS.update" not in changed["main.py"]
    assert set(set_by.values()) == {"regularise", "seed-bagging", "more-capacity"}


def other(param: TunableParam) -> int | float:
    """A value of ``param``'s range other than its current one (an end of the range)."""
    value = param.high if param.current != param.high else param.low
    return int(value) if param.kind == "int" else value


def test_mini_only_when_the_train_file_is_large(prepare) -> None:
    task = prepare("wdbc-breast-cancer")  # 364 train rows: a mini run would keep them all
    early, late = (BudgetProgress(iterations_used=u, iterations_max=10) for u in (0, 9))
    assert task.stage_for(early) == "full" and task.stage_for(late) == "ensemble"
    rows = task.facts["rows"]
    try:
        task.facts["rows"] = {**rows, "train": 40_000}
        assert task.stage_for(early) == "full"  # twice MINI_ROWS: still not worth a screen
        task.facts["rows"] = {**rows, "train": 40_001}
        assert task.stage_for(early) == "mini" and task.stage_for(late) == "ensemble"
    finally:
        task.facts["rows"] = rows


def test_the_seed_keeps_the_mini_rows_the_task_assumes() -> None:
    assert f"MINI_ROWS = {MINI_ROWS:_}" in (SEED / "main.py").read_text()
