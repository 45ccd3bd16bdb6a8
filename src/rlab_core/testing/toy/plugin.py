"""Registers the toy benchmark and the scripted agent.

Register it on a host (``host.register(plugin, name="toy")``) or name it in
``RLAB_PLUGIN_MODULES=rlab_core.testing.toy.plugin`` for the ``rlab`` command line.
"""

from __future__ import annotations

from rlab_core.api import AgentInfo, BenchmarkInfo, hookimpl


def _benchmark():
    from rlab_core.testing.toy.benchmark import ToyBenchmark

    return ToyBenchmark


def _agent():
    from rlab_core.testing.toy.agent import ScriptedAgent

    return ScriptedAgent


@hookimpl
def rlab_register_benchmarks():
    from rlab_core.testing.toy.benchmark import ToyOptions

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
    from rlab_core.testing.toy.agent import ScriptedOptions

    return [
        AgentInfo(
            "scripted", "Follows a script (tests).", _agent, ScriptedOptions, default_priority=-1
        )
    ]
