"""MLE_CONFIGS, the MLE-bench preset this plugin ships, used through the real path."""

from __future__ import annotations

import pytest
import rlab_mle.plugin as plugin
from rlab_mle.options import MleOptions

from rlab_core.config import available_modes, build_run_config
from rlab_core.evaluation import CandidateSettings
from rlab_core.plugins import PluginHost
from rlab_core.run_plan import plan_run
from rlab_core.runner import prepare_task
from rlab_core.testing.toy import plugin as toy_plugin


@pytest.fixture
def host() -> PluginHost:
    """The core's built-ins, this plugin, and the testing kit's scripted agent."""
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(plugin, name="mle")
    host.register(toy_plugin, name="toy")
    return host


def test_mle_configs_is_listed_as_this_plugins_mode(host) -> None:
    mode = available_modes(host)["MLE_CONFIGS"]
    assert mode.source == "plugin mle" and "mle competitions" in mode.summary
    assert mode.values["time_budget_s"] == 24 * 3600  # MLE-bench's 24 hours per competition


def test_mle_configs_runs_an_mle_competition_with_its_limits(host, rlab_cache_home) -> None:
    config = build_run_config(host, cli={"agent": "scripted"}, mode="mle_configs")
    assert (config.strategy, config.iterations, config.time_budget_s) == ("tree", 100, 86400)
    assert (config.window, config.min_iterations, config.debug_tries) == (6, 10, 3)

    plan = plan_run(host, config)  # the mode's task is a real, offline competition
    assert plan.task == "mle:wdbc-breast-cancer"
    task = prepare_task(host, plan.task, plan.benchmark_options)
    settings = CandidateSettings.for_task(config, task)
    # the mode's limits replace the competition's own (15 minutes, 8 GiB)
    assert task.limits.timeout_s == MleOptions().candidate_timeout_s == 900
    assert (settings.timeout_s, settings.memory_mb, settings.smoke) == (3600, 16384, True)


def test_a_named_task_and_the_command_line_win_over_mle_configs(host) -> None:
    config = build_run_config(
        host, cli={"task": "mle:spaceship-titanic", "iterations": 5}, mode="MLE_CONFIGS"
    )
    assert (config.task, config.iterations, config.timeout_s) == ("mle:spaceship-titanic", 5, 3600)
