"""Checks of a seed's tunable parameters (``# tune:`` lines) for a benchmark plugin's tests.

- :func:`described`: a declaration as a comparable tuple, for asserting what a seed declares;
- :func:`check_corner_settings`: every setting at the corners of the ranges (all low, all
  high, each choice) applies, compiles and reads back;
- :func:`check_setting_moves`: a playbook move that sets a declared value rewrites its
  declaration line (so it never applies to, and never overrides, a tuned parent), no two
  moves set the same parameter, and no line a move adds assigns a declared name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rlab_core.edits import SourceFiles, apply_edits
from rlab_core.errors import EditError
from rlab_core.task_records import PlaybookMove
from rlab_core.tuning.space import TunableParam, declared_params, setting_edits

__all__ = ["check_corner_settings", "check_setting_moves", "corner_settings", "described"]

_PY = ("*.py",)


def described(param: TunableParam) -> tuple[Any, ...]:
    """``(kind, low, high, log, current)``, or ``(kind, choices, current)`` for a choice."""
    if param.kind == "choice":
        return (param.kind, param.choices, param.current)
    return (param.kind, param.low, param.high, param.log, param.current)


def ends(param: TunableParam) -> list[Any]:
    """The values at the ends of a range (as the kind writes them), or every choice."""
    if param.kind == "choice":
        return list(param.choices or [])
    return [int(v) if param.kind == "int" else v for v in (param.low, param.high)]


def corner_settings(params: list[TunableParam]) -> list[dict[str, Any]]:
    """All parameters low, all high, and each choice of every choice parameter alone."""
    settings = [
        {p.name: ends(p)[0 if at == "low" else -1] for p in params} for at in ("low", "high")
    ]
    for param in params:
        settings += [{param.name: choice} for choice in param.choices or []]
    return settings


def check_corner_settings(source: SourceFiles) -> int:
    """Apply each corner setting to ``source``: it must compile and read back; the count."""
    params = declared_params(source)
    settings = corner_settings(params)
    for values in settings:
        changed = apply_edits(source, setting_edits(params, values), _PY)
        for name, text in changed.items():
            if name.endswith(".py"):
                compile(text, name, "exec")
        now = {p.name: p.current for p in declared_params(changed)}
        assert {name: now[name] for name in values} == values, values
    return len(settings)


def check_setting_moves(source: SourceFiles, moves: Iterable[PlaybookMove]) -> dict[str, str]:
    """Check how ``moves`` set ``source``'s declared values; return parameter -> move id.

    Moves whose anchors are not in ``source`` (another seed's) are skipped.
    """
    params = {p.name: p for p in declared_params(source)}
    lines = {p.line for p in params.values()}
    set_by: dict[str, str] = {}
    for move in {m.id: m for m in moves}.values():
        try:
            moved = apply_edits(source, move.edits, _PY)
        except EditError:
            continue  # a move of another seed
        after = {p.name: p.current for p in declared_params(moved)}
        assert after.keys() == params.keys(), f"{move.id} changes which parameters are declared"
        for name in (n for n, value in after.items() if value != params[n].current):
            assert set_by.setdefault(name, move.id) == move.id, f"{name}: {set_by[name]}, {move.id}"
            param = params[name]
            other = next(v for v in ends(param) if v != param.current)
            tuned = apply_edits(source, setting_edits([param], {name: other}), _PY)
            try:
                apply_edits(tuned, move.edits, _PY)
            except EditError:
                pass  # a tuned parent keeps its value: the move does not apply to it
            else:
                raise AssertionError(f"{move.id} would override a tuned {name}")
        # a line a move adds never assigns a declared name: it would override a tuned value
        for edit in (e for e in move.edits if e.anchor not in lines):
            added = edit.replacement.replace(edit.anchor, "")
            for name in params:
                pattern = rf"\b{name}\s*=|[\"']{name}[\"']\s*[\]:]"
                assert not re.search(pattern, added), f"{move.id} assigns {name}"
    return set_by
