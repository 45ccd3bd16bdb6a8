"""RELBENCH_CONFIGS, the RelBench preset this plugin ships, used through the real path."""

from __future__ import annotations

import pytest
import rlab_relbench.plugin as plugin
from rlab_relbench.options import RelBenchOptions

from rlab_core.config import available_modes, build_run_config
from rlab_core.plugins import PluginHost
from rlab_core.run_plan import plan_run
from rlab_core.testing.toy import plugin as toy_plugin


@pytest.fixture
def host() -> PluginHost:
    """The core's built-ins, this plugin, and the testing kit's scripted agent."""
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(plugin, name="relbench")
    host.register(toy_plugin, name="toy")
    return host


def test_relbench_configs_is_listed_as_this_plugins_mode(host) -> None:
    mode = available_modes(host)["RELBENCH_CONFIGS"]
    assert mode.source == "plugin relbench" and "relbench tasks" in mode.summary


def test_relbench_configs_plans_a_relbench_run_with_roomier_candidates(host) -> None:
    config = build_run_config(host, cli={"agent": "scripted"}, mode="relbench_configs")
    plan = plan_run(host, config)  # names resolved, every plugin's options validated
    assert plan.task == "relbench:rel-flights/plane-delay" == plugin.DEFAULT_TASK
    assert (config.strategy, config.iterations, config.time_budget_s) == ("tree", 30, 14400)
    assert (config.window, config.min_iterations, config.debug_tries) == (5, 8, 2)
    # more time and memory than a relbench candidate gets by default (5 minutes, 8 GiB)
    own = RelBenchOptions()
    assert (own.candidate_timeout_s, own.candidate_memory_mb) == (300, 8192)
    assert (config.timeout_s, config.memory_mb) == (1800, 16384)


def test_a_named_task_and_the_command_line_win_over_relbench_configs(host) -> None:
    config = build_run_config(
        host,
        cli={"task": "relbench:rel-amazon/user-churn", "time_budget_s": 60},
        mode="RELBENCH_CONFIGS",
    )
    assert (config.task, config.time_budget_s, config.timeout_s) == (
        "relbench:rel-amazon/user-churn",
        60,
        1800,
    )
