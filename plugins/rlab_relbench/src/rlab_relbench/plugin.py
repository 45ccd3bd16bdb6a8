"""Entry point of the relbench plugin: the ``relbench`` benchmark, its mode and knowledge pages.

Only this module is imported when rlab discovers plugins, so it imports nothing heavy:
``load`` imports the implementation (pandas, relbench, duckdb) when a run needs it.
"""

from __future__ import annotations

from pathlib import Path

from rlab_core.api import BenchmarkInfo, ModeInfo, hookimpl

DEFAULT_TASK = "relbench:rel-flights/plane-delay"


def _load():
    from rlab_relbench.benchmark import RelBenchBenchmark

    return RelBenchBenchmark


@hookimpl
def rlab_register_benchmarks():
    from rlab_relbench.options import RelBenchOptions

    return [
        BenchmarkInfo(
            name="relbench",
            summary="RelBench relational tasks via the official relbench library; built-in rel-flights (NYC 2013, offline), official datasets by name, your own RelBench folder by path.",
            load=_load,
            config=RelBenchOptions,
            default_task=DEFAULT_TASK,
            default_priority=100,
        )
    ]


@hookimpl
def rlab_register_modes():
    # Top-level RunConfig keys only (no benchmark_options): the limits then also apply, and
    # validate, when the mode is used with another benchmark's task.
    return [
        ModeInfo(
            "RELBENCH_CONFIGS",
            "RelBench preset, for relbench tasks (default: rel-flights/plane-delay): tree "
            "search, 30 iterations or 4 hours, 30-minute candidates with 16 GiB (room for "
            "multi-table features and a GNN), 2 repairs.",
            {
                "task": DEFAULT_TASK,
                "strategy": "tree",
                "iterations": 30,
                "time_budget_s": 14400,
                "timeout_s": 1800,
                "memory_mb": 16384,
                "debug_tries": 2,
                "window": 5,
                "min_iterations": 8,
            },
        )
    ]


@hookimpl
def rlab_knowledge_pages():
    # curated pages for the relbench family (markdown files shipped in the package); the
    # loader is imported here so that discovering plugins stays cheap
    from rlab_core.api import load_pages

    return load_pages(Path(__file__).parent / "knowledge", family="relbench")
