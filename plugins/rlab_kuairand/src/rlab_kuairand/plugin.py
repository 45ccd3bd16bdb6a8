"""Entry point of the kuairand plugin: registers the ``kuairand`` benchmark, nothing heavy."""

from __future__ import annotations

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
