"""A run's names and options, each resolved and validated once, before any work.

The configuration (:class:`~rlab_core.config.RunConfig`) is plain data: names and raw
option mappings. :func:`plan_run` turns it into a :class:`RunPlan` — the full task name,
the agent to use, and every plugin's options as its own validated model — in
milliseconds, so a typo fails before data is prepared; the runner then constructs each
part from the plan without validating anything again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from rlab_core.config import RunConfig
from rlab_core.errors import ConfigError, UnknownNameError
from rlab_core.plugins import PluginHost


@dataclass(frozen=True)
class RunPlan:
    """What a run will use: resolved names and validated options."""

    config: RunConfig
    #: ``BENCHMARK:TASK``.
    task: str
    agent: str
    benchmark_options: BaseModel
    agent_options: BaseModel
    strategy_options: BaseModel
    sandbox_options: BaseModel

    @property
    def benchmark(self) -> str:
        return self.task.partition(":")[0]


def resolve_task_name(host: PluginHost, task: str | None) -> str:
    """The full ``BENCHMARK:TASK`` name to run, using the installed default when none is given."""
    if task:
        if ":" not in task:
            benchmarks = ", ".join(host.benchmarks()) or "none installed"
            raise UnknownNameError(
                f"Task '{task}' has no benchmark prefix; write BENCHMARK:TASK (benchmarks: {benchmarks})."
            )
        return task
    offers = [
        (reg.info.default_priority, reg.info.default_task)
        for reg in host.benchmarks().values()
        if reg.info.default_task
    ]
    if not offers:
        raise UnknownNameError(
            "No task given and no installed benchmark offers a default; pass BENCHMARK:TASK "
            "(see `rlab list tasks`)."
        )
    return max(offers, key=lambda offer: offer[0])[1]


def resolve_agent_name(host: PluginHost, agent: str | None) -> str:
    """The agent to use: the given one, or the installed agent with the highest priority."""
    if agent:
        return agent
    agents = host.agents()
    if not agents:
        raise UnknownNameError(
            "No agent is installed; install rlab-agents (it brings the offline playbook agent)."
        )
    return max(agents.items(), key=lambda item: item[1].info.default_priority)[0]


def _check_seed_candidate(path: Path | None) -> None:
    if path is not None and not (Path(path) / "main.py").is_file():
        raise ConfigError(
            f"--seed-candidate {path} has no main.py; point it at a folder whose main.py runs the program."
        )


def plan_run(host: PluginHost, config: RunConfig, task: str | None = None) -> RunPlan:
    """Resolve the names and validate every plugin's options, once (``task`` overrides)."""
    task_name = resolve_task_name(host, task or config.task)
    agent = resolve_agent_name(host, config.agent)
    _check_seed_candidate(config.seed_candidate)
    return RunPlan(
        config=config,
        task=task_name,
        agent=agent,
        benchmark_options=host.make_config(
            "benchmarks", task_name.partition(":")[0], config.benchmark_options
        ),
        agent_options=host.make_config("agents", agent, config.agent_options),
        strategy_options=host.make_config("strategies", config.strategy, config.strategy_options),
        sandbox_options=host.make_config("sandboxes", config.sandbox, config.sandbox_options),
    )
