"""Shared fixtures: the testing kit's toy benchmark and scripted agent, run for real."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rlab_core.config import RunConfig
from rlab_core.plugins import PluginHost
from rlab_core.runner import RunOutcome, start_run
from rlab_core.testing.toy import edit, extra

pytest_plugins = ["rlab_core.testing.fixtures"]

TESTS = Path(__file__).parent
REPO = TESTS.parent
# test modules import helpers from here (`from conftest import cli_env`); pytest's importlib
# mode puts no folder on sys.path
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

__all__ = ["REPO", "RLAB", "TESTS", "cli_env", "edit", "extra", "toy_config"]


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
            # seed replicates (the finalists', the noise measurement's) only where a test asks
            **{
                "iterations": len(script) + 4,
                "min_iterations": 100,
                "finalists": 0,
                "noise_seeds": 0,
                **overrides,
            },
        )
        return start_run(toy_host, config)

    return run


def cli_env(tmp_path: Path, **extra_env: str) -> dict[str, str]:
    """Environment for running the real `rlab` executable with the toy plugin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    # the test's own knowledge base (isolated_knowledge_base), never the user's
    env["RLAB_KNOWLEDGE"] = os.environ["RLAB_KNOWLEDGE"]
    env.update(
        {
            "RLAB_PLUGIN_MODULES": "rlab_core.testing.toy.plugin",
            "RLAB_CACHE_HOME": str(tmp_path / "rlab-cache"),
            "COLUMNS": "200",
            **extra_env,
        }
    )
    return env


RLAB = str(Path(sys.executable).parent / "rlab")


def toy_config(folder: Path, script: list[dict[str, Any]], **values: Any) -> Path:
    """``folder/toy.yaml``: a run of ``toy:line`` by the scripted agent, for the real CLI."""
    import yaml

    path = folder / "toy.yaml"
    settings = {"task": "toy:line", "agent": "scripted", "agent_options": {"script": script}}
    path.write_text(yaml.safe_dump({**settings, **values}))
    return path
