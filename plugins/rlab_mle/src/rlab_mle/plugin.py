"""Entry point of the mle plugin: registers the ``mle`` benchmark, nothing heavy."""

from __future__ import annotations

from rlab_core.api import BenchmarkInfo, hookimpl


def _load():
    from rlab_mle.benchmark import MleBenchmark

    return MleBenchmark


@hookimpl
def rlab_register_benchmarks():
    from rlab_mle.options import MleOptions

    return [
        BenchmarkInfo(
            name="mle",
            summary="MLE-bench Kaggle competitions (mle-bench layout, grading and medals) with a "
            "framework-held validation split; built-in offline competitions.",
            load=_load,
            config=MleOptions,
            default_task="mle:wdbc-breast-cancer",
            default_priority=5,  # below relbench and kuairand: a fallback default
        )
    ]
