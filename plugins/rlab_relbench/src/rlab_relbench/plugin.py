"""Entry point of the relbench plugin: registers the ``relbench`` benchmark.

Only this module is imported when rlab discovers plugins, so it imports nothing heavy:
``load`` imports the implementation (pandas, relbench, duckdb) when a run needs it.
"""

from __future__ import annotations

from rlab_core.api import BenchmarkInfo, hookimpl


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
            default_task="relbench:rel-flights/plane-delay",
            default_priority=100,
        )
    ]
