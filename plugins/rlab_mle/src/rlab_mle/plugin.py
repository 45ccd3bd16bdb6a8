"""Entry point of the mle plugin: the ``mle`` benchmark, its mode and knowledge pages."""

from __future__ import annotations

from pathlib import Path

from rlab_core.api import BenchmarkInfo, ModeInfo, hookimpl

DEFAULT_TASK = "mle:wdbc-breast-cancer"


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
            default_task=DEFAULT_TASK,
            default_priority=5,  # below relbench and kuairand: a fallback default
        )
    ]


@hookimpl
def rlab_register_modes():
    # MLE-bench gives an agent 24 hours per competition; here that is the time budget, with
    # an iteration cap and convergence so an easy competition stops sooner. Top-level
    # RunConfig keys only, so the mode validates with any benchmark's task.
    return [
        ModeInfo(
            "MLE_CONFIGS",
            "MLE-bench preset, for mle competitions (default: wdbc-breast-cancer): MLE-bench's "
            "24 hours as the time budget (or 100 iterations), tree search, smoke run first, "
            "1-hour candidates with 16 GiB, 3 repairs.",
            {
                "task": DEFAULT_TASK,
                "strategy": "tree",
                "iterations": 100,
                "time_budget_s": 86400,
                "timeout_s": 3600,
                "memory_mb": 16384,
                "smoke_run": True,
                "debug_tries": 3,
                "window": 6,
                "min_iterations": 10,
            },
        )
    ]


@hookimpl
def rlab_knowledge_pages():
    # curated pages for the mle family (markdown files shipped in the package); the
    # loader is imported here so that discovering plugins stays cheap
    from rlab_core.api import load_pages

    return load_pages(Path(__file__).parent / "knowledge", family="mle")
