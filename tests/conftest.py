"""Shared fixtures: the toy benchmark and scripted agent, run for real through the loop."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from toy import plugin as toy_plugin  # noqa: E402

from rlab_core.config import RunConfig  # noqa: E402
from rlab_core.plugins import PluginHost  # noqa: E402
from rlab_core.runner import RunOutcome, start_run  # noqa: E402

pytest_plugins = ["rlab_core.testing.fixtures"]

REPO = TESTS.parent


def edit(anchor: str, replacement: str, file: str = "main.py") -> dict[str, str]:
    return {"file": file, "anchor": anchor, "replacement": replacement}


def extra(code: str) -> dict[str, str]:
    """An edit that inserts candidate code at the toy seed's '# extra behaviour' marker."""
    return edit("# extra behaviour\n", code.rstrip("\n") + "\n# extra behaviour\n")


@pytest.fixture
def toy_host() -> PluginHost:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    return host


@pytest.fixture
def run_toy(toy_host: PluginHost, tmp_path: Path, rlab_cache: Path):
    """Run the toy task with a script; returns the outcome."""

    def run(script: list[dict[str, Any]], **overrides: Any) -> RunOutcome:
        benchmark_options = overrides.pop("benchmark_options", {})
        agent_options = {"script": script, **overrides.pop("agent_options", {})}
        config = RunConfig(
            task="toy:line",
            agent="scripted",
            agent_options=agent_options,
            benchmark_options=benchmark_options,
            out=tmp_path / "runs",
            **{"iterations": len(script) + 4, "min_iterations": 100, **overrides},
        )
        return start_run(toy_host, config)

    return run


def cli_env(tmp_path: Path, **extra_env: str) -> dict[str, str]:
    """Environment for running the real `rlab` executable with the toy plugin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    env.update(
        {
            "RLAB_PLUGIN_MODULES": "toy.plugin",
            "PYTHONPATH": str(TESTS),
            "RLAB_CACHE_HOME": str(tmp_path / "rlab-cache"),
            "COLUMNS": "200",
            **extra_env,
        }
    )
    return env


RLAB = str(Path(sys.executable).parent / "rlab")
