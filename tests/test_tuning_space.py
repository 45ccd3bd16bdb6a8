"""Declared tunable parameters: every form, every refusal, values and edits that round-trip."""

from __future__ import annotations

import pytest

from rlab_core.edits import apply_edits
from rlab_core.tuning.space import (
    TunableParam,
    TunableSpecError,
    declared_params,
    format_value,
    setting_edits,
)

TRAIN = '''"""A candidate with one parameter of each form."""

LEARNING_RATE = 0.05  # tune: float 0.005..0.3 log
NUM_LEAVES = 31  # tune: int 8..255 log
AGG = "sum"  # tune: choice "sum"|"mean"|"max"
PARAMS = dict(
    min_child_samples=20,  # tune: int 5..100 log
    subsample=0.8,  # tune: float 0.5..1.0
    verbose=-1,
)
LAYERS = {
    "dropout": 0.1,  # tune: float 0.0..0.5
    'use_bias': True,  # tune: choice True|False
}
# a plain comment mentioning tuning is ignored
'''


def test_every_form_is_read_with_its_range_and_value() -> None:
    params = declared_params({"train.py": TRAIN, "notes.md": "X = 1  # tune: bogus\n"})
    by_name = {p.name: p for p in params}
    assert [p.name for p in params] == [
        "LEARNING_RATE",
        "NUM_LEAVES",
        "AGG",
        "min_child_samples",
        "subsample",
        "dropout",
        "use_bias",
    ]
    lr = by_name["LEARNING_RATE"]
    assert (lr.kind, lr.low, lr.high, lr.log, lr.current) == ("float", 0.005, 0.3, True, 0.05)
    assert lr.file == "train.py" and lr.line == "LEARNING_RATE = 0.05  # tune: float 0.005..0.3 log"
    leaves = by_name["NUM_LEAVES"]
    assert (leaves.kind, leaves.low, leaves.high, leaves.log, leaves.current) == (
        "int",
        8,
        255,
        True,
        31,
    )
    assert by_name["AGG"].choices == ["sum", "mean", "max"] and by_name["AGG"].current == "sum"
    assert by_name["min_child_samples"].line == "    min_child_samples=20,  # tune: int 5..100 log"
    assert by_name["subsample"].log is False and by_name["subsample"].current == 0.8
    assert by_name["dropout"].current == 0.1 and by_name["dropout"].low == 0.0
    assert by_name["use_bias"].choices == [True, False] and by_name["use_bias"].current is True
    assert lr.describe() == "float 0.005..0.3 log"
    assert by_name["AGG"].describe() == "choice 'sum'|'mean'|'max'"


def test_files_are_read_in_path_order_and_only_python() -> None:
    source = {
        "b.py": "B = 1  # tune: int 0..3\n",
        "a.py": "A = 2  # tune: int 0..3\n",
        "config.yaml": "C: 1  # tune: int 0..3\n",
    }
    assert [p.name for p in declared_params(source)] == ["A", "B"]
    assert declared_params({"main.py": "X = 1\n"}) == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("X = foo  # tune: int 1..3", r"m\.py:2: 'foo' is not a Python literal"),
        ("X = (1, 2)  # tune: int 1..3", r"m\.py:2: '\(1, 2\)' is not a number, string or bool"),
        ("print(X)  # tune: int 1..3", r"m\.py:2: a '# tune:' comment must follow 'NAME = value'"),
        ('X = "a"  # tune: choice "a"', r"X = 'a' must be one of at least two choices"),
        ('X = "c"  # tune: choice "a"|"b"', r"X = 'c' must be one of at least two choices"),
        ("X = 1  # tune: float 1-3", r"cannot read '# tune: float 1-3'; write 'float LOW..HIGH"),
        ("X = 1  # tune: integer 1..3", r"cannot read '# tune: integer 1..3'"),
        ('X = "a"  # tune: int 1..3', r"X = 'a' is not a number \(int 1..3\)"),
        ("X = True  # tune: int 0..3", r"X = True is not a number"),
        ("X = 1.5  # tune: int 1..3", r"an int parameter needs an int value and int bounds"),
        ("X = 2  # tune: int 1..3.5", r"an int parameter needs an int value and int bounds"),
        ("X = 2  # tune: float 3..1", r"X = 2 needs LOW < HIGH"),
        ("X = 0.5  # tune: float 0..1 log", r"LOW > 0 on a log scale"),
        ("X = 5  # tune: int 1..3", r"X = 5 needs LOW < HIGH, LOW <= value <= HIGH"),
        ("X = 1  # tune: float a..3", r"'a' is not a Python literal"),
    ],
)
def test_a_bad_declaration_is_one_sentence_naming_file_line_and_problem(
    line: str, message: str
) -> None:
    with pytest.raises(TunableSpecError, match=message):
        declared_params({"m.py": f"import os\n{line}\n"})


def test_a_name_declared_twice_is_refused_with_both_places() -> None:
    source = {
        "a.py": "LR = 0.1  # tune: float 0.01..1\n",
        "b.py": "X = 1\nLR = 0.2  # tune: float 0.01..1\n",
    }
    with pytest.raises(
        TunableSpecError, match=r"b\.py:2: .* LR is declared twice \(also at a\.py:1\)"
    ):
        declared_params(source)


def test_a_declaring_line_that_occurs_twice_is_refused() -> None:
    same = "    rate=0.1,  # tune: float 0.01..1\n"
    with pytest.raises(TunableSpecError, match=r"m\.py:2: the line declaring rate occurs twice"):
        declared_params({"m.py": f"A = dict(\n{same})\nB = dict(\n{same})\n"})
    # the anchor of its edit would occur twice even inside a longer line: refused too
    inside = "OLD_LR = 0.1  # tune: float 0.01..1\nLR = 0.1  # tune: float 0.01..1\n"
    with pytest.raises(TunableSpecError, match=r"m\.py:2: the line declaring LR occurs twice"):
        declared_params({"m.py": inside})


def _param(kind: str, **values: object) -> TunableParam:
    return TunableParam(name="P", file="m.py", line="P = 0  # tune:", kind=kind, **values)  # type: ignore[arg-type]


def test_format_value_writes_source_literals() -> None:
    rate = _param("float", low=1e-6, high=10.0, log=True, current=0.05)
    assert format_value(rate, 0.021345678) == "0.02135"  # 4 significant digits
    assert format_value(rate, 3.0) == "3.0"  # stays a float literal
    assert format_value(rate, 2) == "2.0"
    assert format_value(rate, 1.234e-5) == "1.234e-05"
    assert format_value(_param("float", low=0.0, high=1.0, current=0.5), 0.0) == "0.0"
    count = _param("int", low=1.0, high=500.0, current=3)
    assert format_value(count, 63.4) == "63" and format_value(count, 63.6) == "64"
    choice = _param("choice", choices=["a", True, None, 2], current="a")
    assert [format_value(choice, c) for c in ["a", True, None, 2]] == ["'a'", "True", "None", "2"]


def test_format_value_never_rounds_out_of_the_declared_range() -> None:
    """Bounds with more than 4 digits: the rounded value would make the child's declaration
    unreadable (value outside its range)."""
    (param,) = declared_params({"m.py": "A = 0.2  # tune: float 0.12344..0.45678\n"})
    low, high = format_value(param, 0.12344), format_value(param, 0.456779)
    assert (low, high) == ("0.12344", "0.45678")
    for text in (low, high):
        source = {"m.py": f"A = {text}  # tune: float 0.12344..0.45678\n"}
        assert declared_params(source)[0].current == float(text)


def test_setting_edits_change_only_values_and_round_trip() -> None:
    source = {"train.py": TRAIN}
    params = declared_params(source)
    values = {
        "LEARNING_RATE": 0.0213456,
        "NUM_LEAVES": 63,
        "AGG": "max",
        "min_child_samples": 20,  # unchanged: no edit
        "subsample": 0.95,
        "dropout": 0.1,  # unchanged
        "use_bias": False,
    }
    edits = setting_edits(params, values)
    assert [e.anchor.split()[0].strip("\",'=:") for e in edits] == [
        "LEARNING_RATE",
        "NUM_LEAVES",
        "AGG",
        "subsample=0.8",
        "use_bias",
    ]
    after = apply_edits(source, edits, ["*.py"])["train.py"]
    assert "LEARNING_RATE = 0.02135  # tune: float 0.005..0.3 log\n" in after
    assert "NUM_LEAVES = 63  # tune: int 8..255 log\n" in after
    assert 'AGG = \'max\'  # tune: choice "sum"|"mean"|"max"\n' in after
    assert "    subsample=0.95,  # tune: float 0.5..1.0\n" in after
    assert "    'use_bias': False,  # tune: choice True|False\n" in after
    assert "    verbose=-1,\n" in after  # lines without a declaration are untouched
    reread = {p.name: p.current for p in declared_params({"train.py": after})}
    assert reread == {**values, "LEARNING_RATE": 0.02135}
    # writing the values now in the source changes nothing
    assert setting_edits(params, {p.name: p.current for p in params}) == []
    # a parameter the setting does not name keeps its value
    assert [e.anchor for e in setting_edits(params, {"NUM_LEAVES": 9})] == [params[1].line]


def test_an_int_literal_under_a_float_range_is_rewritten_as_a_float() -> None:
    source = {"m.py": "REG = 0  # tune: float 0..1\n"}
    (param,) = declared_params(source)
    (edit,) = setting_edits([param], {"REG": 0})
    assert edit.replacement == "REG = 0.0  # tune: float 0..1"


def test_a_comment_line_that_mentions_the_marker_declares_nothing() -> None:
    source = {
        "main.py": "# hyperparameters carry a trailing '# tune: float 0.1..1.0' comment\n"
        "    # tune: int 1..9 (a note, not a declaration)\n"
        "RATE = 0.5  # tune: float 0.1..1.0\n"
    }
    assert [p.name for p in declared_params(source)] == ["RATE"]


def test_the_testing_kit_refuses_a_move_that_would_override_a_tuned_value() -> None:
    from rlab_core.task_records import PlaybookMove
    from rlab_core.testing.tunables import check_corner_settings, check_setting_moves

    source = {"main.py": "RATE = 0.5  # tune: float 0.1..1.0\n# settings\n"}
    assert check_corner_settings(source) == 2
    good = PlaybookMove(
        id="slow", hypothesis="slower", edits=setting_edits(declared_params(source), {"RATE": 0.2})
    )
    assert check_setting_moves(source, [good]) == {"RATE": "slow"}
    # a line added under a marker that sets the declared name again wins over any tuning
    bad = PlaybookMove.adding_line("override", "# settings\n", "RATE = 0.2", "slower")
    with pytest.raises(AssertionError, match="override assigns RATE"):
        check_setting_moves(source, [bad])
    twice = PlaybookMove(
        id="slower", hypothesis="x", edits=setting_edits(declared_params(source), {"RATE": 0.3})
    )
    with pytest.raises(AssertionError, match="RATE: slow, slower"):
        check_setting_moves(source, [good, twice])
