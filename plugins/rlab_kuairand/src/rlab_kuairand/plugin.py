"""Entry point of the kuairand plugin: the ``kuairand`` benchmark and its knowledge pages."""

from __future__ import annotations

from pathlib import Path

from rlab_core.api import BenchmarkInfo, hookimpl


def _load():
    from rlab_kuairand.benchmark import KuaiRandBenchmark

    return KuaiRandBenchmark


@hookimpl
def rlab_register_benchmarks():
    from rlab_kuairand.options import KuaiRandOptions

    return [
        BenchmarkInfo(
            name="kuairand",
            summary="KuaiRand-Pure / 1K short-video ranking (long_view), organizers' split, GAUC + nDCG@5.",
            load=_load,
            config=KuaiRandOptions,
            default_task="kuairand:sample",
            default_priority=10,  # below relbench (100): the synthetic sample is a fallback
        )
    ]


@hookimpl
def rlab_knowledge_pages():
    # curated pages for the kuairand family (markdown files shipped in the package); the
    # loader is imported here so that discovering plugins stays cheap
    from rlab_core.api import load_pages

    return load_pages(Path(__file__).parent / "knowledge", family="kuairand")
