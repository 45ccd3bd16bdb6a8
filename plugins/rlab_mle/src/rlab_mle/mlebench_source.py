"""Competitions from the ``mlebench`` package, when it is importable.

mlebench is installed from its git repository, not from PyPI, so every use here is
guarded: when it is missing or fails to import, this source lists nothing and says why,
and rlab-mle grades by the config's grader name instead of mlebench's ``grade_fn``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlab_mle.definitions import LITE_IDS, Competition


@functools.cache
def status() -> tuple[bool, str]:
    """(importable, its version or why not)."""
    try:
        importlib.import_module("mlebench.registry")
    except Exception as exc:  # ImportError, or a broken install of an optional package
        return False, f"mlebench is not importable ({type(exc).__name__}: {exc})"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return True, f"mlebench {version('mlebench')}"
    except PackageNotFoundError:
        return True, "mlebench (version unknown)"


def available() -> bool:
    """True when the mlebench package imports."""
    return status()[0]


def _registry(data_dir: Path) -> Any:
    from mlebench.registry import registry

    return registry.set_data_dir(Path(data_dir))


def competition_ids(data_dir: Path, lite: bool = False) -> list[str]:
    """Every competition id mlebench knows (or its Lite split); empty when it is missing."""
    if not available():
        return []
    registry = _registry(data_dir)
    if lite:
        lister = getattr(registry, "get_lite_competition_ids", None)
        return list(lister()) if lister else list(LITE_IDS)
    return list(registry.list_competition_ids())


def load(competition_id: str, data_dir: Path) -> Competition | None:
    """The competition as mlebench defines it, with its own ``grade_fn``; None if unknown."""
    if not available() or competition_id not in competition_ids(data_dir):
        return None
    found = _registry(data_dir).get_competition(competition_id)
    leaderboard = Path(found.leaderboard)
    return Competition(
        id=found.id,
        name=found.name,
        source="mlebench",
        grader_name=found.grader.name,
        description=found.description,
        data_dir=Path(data_dir),
        answers=Path(found.answers),
        sample_submission=Path(found.sample_submission),
        leaderboard=leaderboard if leaderboard.is_file() else None,
        competition_type=found.competition_type,
        definition_dir=leaderboard.parent,
        grade_fn=found.grader.grade_fn,
    )


def import_grade_fn(spec: str) -> Callable[..., Any] | None:
    """``module:function`` as mlebench imports it; None when mlebench or the module is missing."""
    if not spec or not available():
        return None
    try:
        from mlebench.utils import import_fn

        return import_fn(spec)
    except Exception:
        return None
