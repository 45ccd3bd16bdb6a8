"""The seed's tunable parameters, runs at the corners of their ranges, and the moves that set them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rlab_example.benchmark import ExampleBenchmark, FlightsDelayTask
from rlab_example.options import ExampleOptions
from rlab_example.playbook import MOVES

from rlab_core.api import (
    EditError,
    LocalSandbox,
    LocalSandboxConfig,
    apply_edits,
    cache_home,
    copy_source,
    read_source,
    write_source,
)
from rlab_core.testing import run_candidate
from rlab_core.tuning.space import TunableParam, declared_params, setting_edits

EXPECTED = {
    "NEWTON_STEPS": ("int", 2, 20, False, 6),
    "L2": ("float", 1e-8, 100.0, True, 1e-6),
    "MIN_LEVEL_COUNT": ("int", 1, 100, True, 1),
}


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlightsDelayTask]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(tmp_path_factory.mktemp("rlab-cache")))
        bench = ExampleBenchmark(ExampleOptions(train_rows=2000, eval_rows=1000))
        prepared = bench.prepare("flights-delay", cache_home() / "example")
        assert isinstance(prepared, FlightsDelayTask)
        yield prepared


def seed_source(task: FlightsDelayTask) -> dict[str, str]:
    return read_source(task.seed_candidates()[0].path)


def end(param: TunableParam, at: str) -> int | float:
    value = param.low if at == "low" else param.high
    return int(value) if param.kind == "int" else value


def test_the_seed_declares_its_parameters_around_its_values(task) -> None:
    params = declared_params(seed_source(task))
    assert {p.name: (p.kind, p.low, p.high, p.log, p.current) for p in params} == EXPECTED


@pytest.mark.parametrize("at", ["low", "high"])
def test_a_corner_setting_runs_and_meets_the_contract(task, tmp_path: Path, at) -> None:
    source = seed_source(task)
    params = declared_params(source)
    values = {p.name: end(p, at) for p in params}
    assert values.keys() == EXPECTED.keys()
    changed = apply_edits(source, setting_edits(params, values), task.editable_files)
    assert {p.name: p.current for p in declared_params(changed)} == values
    folder = tmp_path / "candidate"
    copy_source(task.seed_candidates()[0].path, folder)
    write_source(folder, changed, ["main.py"])
    execution, out = run_candidate(
        task, folder, LocalSandbox(LocalSandboxConfig()), tmp_path / "run", timeout_s=120
    )
    assert execution.ok, execution.log_tail
    assert task.validate_outputs(out, "val") == [] and task.validate_outputs(out, "test") == []
    assert 0.55 < task.score(out, "val").primary <= 1.0


def test_setting_moves_rewrite_declarations_and_never_override_a_tuned_value(task) -> None:
    source = seed_source(task)
    params = {p.name: p for p in declared_params(source)}
    lines = {p.line for p in params.values()}
    set_by = {}
    for move in MOVES:
        changed = apply_edits(source, move.edits, task.editable_files)
        now = {p.name: p.current for p in declared_params(changed)}  # still in range
        for name in [n for n, value in now.items() if value != params[n].current]:
            set_by[name] = move.id
            other = end(params[name], "high")
            tuned = apply_edits(source, setting_edits([params[name]], {name: other}), ("*.py",))
            with pytest.raises(EditError):  # a tuned parent keeps its value: the move skips it
                apply_edits(tuned, move.edits, task.editable_files)
        for edit in (e for e in move.edits if e.anchor not in lines):
            added = edit.replacement.replace(edit.anchor, "")
            assert not any(re.search(rf"\b{name}\s*=", added) for name in params), move.id
    assert set_by == {
        "L2": "l2",
        "MIN_LEVEL_COUNT": "min-level-count",
        "NEWTON_STEPS": "newton-steps",
    }
