"""Registers the toy benchmark and the scripted agent (inline in tests, or via RLAB_PLUGIN_MODULES)."""

from __future__ import annotations

from rlab_core.hookspecs import AgentInfo, BenchmarkInfo, hookimpl


def _benchmark():
    from toy.benchmark import ToyBenchmark

    return ToyBenchmark


def _agent():
    from toy.agent import ScriptedAgent

    return ScriptedAgent


@hookimpl
def rlab_register_benchmarks():
    from toy.benchmark import ToyOptions

    return [
        BenchmarkInfo(
            "toy",
            "Fit a line (tests).",
            _benchmark,
            ToyOptions,
            default_task="toy:line",
            default_priority=-1,
        )
    ]


@hookimpl
def rlab_register_agents():
    from toy.agent import ScriptedOptions

    return [
        AgentInfo(
            "scripted", "Follows a script (tests).", _agent, ScriptedOptions, default_priority=-1
        )
    ]
