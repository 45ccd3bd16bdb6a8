"""The toy benchmark, a scripted agent and its seed: the whole loop, for real, in seconds.

The ``toy`` benchmark has one task, ``toy:line`` (fit y = 3x + 1 on a handful of points;
RMSE, lower is better), and the ``scripted`` agent proposes the entries of a script in
order. Core tests, plugin tests and third-party authors use them to drive a real research
loop without a model or a dataset: register :mod:`rlab_core.testing.toy.plugin` on a plugin
host (or name it in ``RLAB_PLUGIN_MODULES``) and run ``toy:line``.
"""

from __future__ import annotations

from pathlib import Path

#: The toy seed: a program that predicts ``SLOPE * x + INTERCEPT``.
SEED_DIR = Path(__file__).parent / "seed"
#: A line of the toy seed that every edit may keep: code inserted above it runs in ``main.py``.
EXTRA_MARKER = "# extra behaviour\n"


def edit(anchor: str, replacement: str, file: str = "main.py") -> dict[str, str]:
    """An anchored edit as the scripted agent and the toy's ``playbook`` option take it."""
    return {"file": file, "anchor": anchor, "replacement": replacement}


def extra(code: str) -> dict[str, str]:
    """An edit that inserts ``code`` into the toy seed at its ``# extra behaviour`` line."""
    return edit(EXTRA_MARKER, code.rstrip("\n") + "\n" + EXTRA_MARKER)


__all__ = ["EXTRA_MARKER", "SEED_DIR", "edit", "extra"]
