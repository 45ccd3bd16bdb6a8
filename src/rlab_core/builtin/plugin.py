"""Registers the core's built-in strategies, sandboxes, modes and the dashboard observer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rlab_core.hookspecs import ModeInfo, SandboxInfo, StrategyInfo, hookimpl

#: Journal events after which ``report.html`` is rewritten: the run stopped (also on an
#: error or Ctrl-C), its winner was exported, its test split was scored.
DASHBOARD_EVENTS = frozenset({"run_stopped", "best_exported", "final"})


def _best_first():
    from rlab_core.builtin.strategies import BestFirst

    return BestFirst


def _tree():
    from rlab_core.builtin.strategies import TreeSearch

    return TreeSearch


def _local():
    from rlab_core.builtin.local_sandbox import LocalSandbox

    return LocalSandbox


def _docker():
    from rlab_core.builtin.docker_sandbox import DockerSandbox

    return DockerSandbox


@hookimpl
def rlab_register_strategies():
    from rlab_core.builtin.strategies import BestFirstConfig, TreeConfig

    return [
        StrategyInfo(
            "best-first",
            "Expand the best validated node; one hypothesis per step.",
            _best_first,
            BestFirstConfig,
        ),
        StrategyInfo(
            "tree",
            "Draft from the seeds, debug, improve the best, explore a little.",
            _tree,
            TreeConfig,
        ),
    ]


@hookimpl
def rlab_register_sandboxes():
    from rlab_core.builtin.docker_sandbox import DockerSandboxConfig
    from rlab_core.builtin.local_sandbox import LocalSandboxConfig

    return [
        SandboxInfo(
            "local",
            "Local process group in the strongest jail that hides private paths (bubblewrap, "
            "else unshare); refuses without one.",
            _local,
            LocalSandboxConfig,
        ),
        SandboxInfo(
            "docker",
            "A fresh container per candidate: no network, read-only root, limits, non-root.",
            _docker,
            DockerSandboxConfig,
        ),
    ]


#: Most candidates HEAVY_EXPERIMENTATION evaluates at once; fewer where the machine has fewer
#: CPUs (each worker gets its share of the cores, and one candidate per core is the floor).
HEAVY_WORKERS = 4


def heavy_workers() -> int:
    """HEAVY_EXPERIMENTATION's ``workers``: :data:`HEAVY_WORKERS`, capped at this machine's CPUs."""
    return max(1, min(HEAVY_WORKERS, os.cpu_count() or 1))


@hookimpl
def rlab_register_modes():
    # The family presets (RELBENCH_CONFIGS, MLE_CONFIGS) ship with their benchmark plugins.
    return [
        ModeInfo(
            "MINIMAL",
            "Smallest useful run: 3 iterations, stop on the first stall.",
            {"iterations": 3, "window": 1, "min_iterations": 1, "debug_tries": 1},
        ),
        ModeInfo(
            "THOROUGH",
            "Long search with the tree strategy and patient convergence.",
            {
                "iterations": 40,
                "strategy": "tree",
                "window": 5,
                "min_iterations": 10,
                "debug_tries": 2,
            },
        ),
        ModeInfo(
            "FAST_DEBUG",
            "Quickest end-to-end check of a setup: 2 iterations after a smoke run, no repair, "
            "no seed replicates, 2-minute candidates, 10-minute cap.",
            {
                "iterations": 2,
                "time_budget_s": 600,
                "window": 1,
                "min_iterations": 1,
                "debug_tries": 0,
                "smoke_run": True,
                "timeout_s": 120,
                "finalists": 0,
                "finalist_seeds": 0,
                "noise_seeds": 0,
                "resamples": 200,
            },
        ),
        ModeInfo(
            "HEAVY_EXPERIMENTATION",
            "Long, wide search: tree strategy, 200 iterations or 12 hours, "
            f"{HEAVY_WORKERS} workers (fewer on a machine with fewer CPUs), 5 finalists "
            "with 3 seeds each, 4 noise seeds, very patient convergence.",
            {
                "iterations": 200,
                "time_budget_s": 43200,
                "strategy": "tree",
                "workers": heavy_workers(),
                "window": 8,
                "min_iterations": 20,
                "debug_tries": 3,
                "finalists": 5,
                "finalist_seeds": 3,
                "noise_seeds": 4,
            },
        ),
    ]


@hookimpl
def rlab_observe_event(event: dict[str, Any], run_dir: Path) -> None:
    """The dashboard: rewrite ``report.html`` after the events in :data:`DASHBOARD_EVENTS`.

    A failure to write it is a logged warning; the report never fails a run.
    """
    if event.get("type") not in DASHBOARD_EVENTS:
        return
    # imported here: every plugin host loads this module, most never write a report
    from rlab_core.report.html import write_report_quietly
    from rlab_core.run_folder import RunFolder

    write_report_quietly(RunFolder(run_dir))
