"""Starting, resuming and finishing runs: the glue between the CLI and the loop."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlab_core import __version__
from rlab_core.cache import cache_home
from rlab_core.config import RunConfig
from rlab_core.edits import copy_source
from rlab_core.errors import ConfigError, UnknownNameError
from rlab_core.interfaces import Agent, PreparedTask, Sandbox, Strategy
from rlab_core.journal import Journal, RunState, replay
from rlab_core.loop import EventSink, ResearchLoop
from rlab_core.outputs import OutputsRefused, take_outputs
from rlab_core.plugins import PluginHost
from rlab_core.records import Node
from rlab_core.report.html import write_report_quietly
from rlab_core.run_folder import RunFolder


@dataclass
class RunOutcome:
    """What a finished (or stopped) search leaves behind."""

    run: RunFolder
    stop_reason: str
    best: Node | None
    seeds: list[Node]
    isolation: str


def resolve_task_name(host: PluginHost, task: str | None) -> str:
    """The full ``BENCHMARK:TASK`` name to run, using the installed default when none is given."""
    if task:
        if ":" not in task:
            benchmarks = ", ".join(host.available("benchmarks")) or "none installed"
            raise UnknownNameError(
                f"Task '{task}' has no benchmark prefix; write BENCHMARK:TASK (benchmarks: {benchmarks})."
            )
        return task
    offers = [
        (reg.info.default_priority, reg.info.default_task)
        for reg in host.available("benchmarks").values()
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
    agents = host.available("agents")
    if not agents:
        raise UnknownNameError(
            "No agent is installed; install rlab-agents (it brings the offline playbook agent)."
        )
    return max(agents.items(), key=lambda item: item[1].info.default_priority)[0]


def prepare_task(host: PluginHost, config: RunConfig, task_name: str) -> PreparedTask:
    """Prepare the task through its benchmark plugin."""
    benchmark_name, _, task_part = task_name.partition(":")
    benchmark = host.create("benchmarks", benchmark_name, config.benchmark_options)
    return benchmark.prepare(
        task_part, cache_home() / benchmark_name, rebuild_cache=config.rebuild_cache
    )


def _check_seed_candidate(path: Path | None) -> None:
    if path is None:
        return
    if not (Path(path) / "main.py").is_file():
        raise ConfigError(
            f"--seed-candidate {path} has no main.py; point it at a folder whose main.py runs the program."
        )


@dataclass
class _Parts:
    task: PreparedTask
    agent: Agent
    strategy: Strategy
    sandbox: Sandbox


def _make_parts(host: PluginHost, config: RunConfig, task_name: str) -> _Parts:
    # validate every option before preparing data, so a typo fails in milliseconds
    agent_name = resolve_agent_name(host, config.agent)
    host.make_config("agents", agent_name, config.agent_options)
    host.make_config("strategies", config.strategy, config.strategy_options)
    host.make_config("sandboxes", config.sandbox, config.sandbox_options)
    _check_seed_candidate(config.seed_candidate)
    # construct the cheap parts first: a missing executable or daemon fails before data work
    agent = host.create("agents", agent_name, config.agent_options)
    strategy = host.create("strategies", config.strategy, config.strategy_options)
    sandbox = host.create("sandboxes", config.sandbox, config.sandbox_options)
    task = prepare_task(host, config, task_name)
    return _Parts(task=task, agent=agent, strategy=strategy, sandbox=sandbox)


def isolation_record(sandbox: Sandbox) -> dict[str, Any]:
    """The sandbox's isolation facts as recorded in ``run.json``, warning included.

    A sandbox that does not say it hides private paths is recorded as one that does not:
    the record then says in plain words that candidates could read private data.
    """
    details = dict(sandbox.isolation_details())
    if details.get("hidden_paths") is not True:
        details["hidden_paths"] = False
        details["private_data_readable"] = True
        details.setdefault(
            "warning",
            f"Candidates ran at isolation '{details.get('level', sandbox.isolation_level())}', "
            "which does not hide private data: they could read the test labels, the run "
            "folder and this user's files.",
        )
    return details


def _run_json(host: PluginHost, config: RunConfig, task_name: str, parts: _Parts) -> dict[str, Any]:
    return {
        "task": task_name,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": json.loads(config.model_dump_json()),
        "agent": resolve_agent_name(host, config.agent),
        "primary_metric": parts.task.primary_metric,
        "higher_is_better": parts.task.higher_is_better,
        "isolation": isolation_record(parts.sandbox),
        "versions": {"rlab-core": __version__, "python": sys.version.split()[0], **host.versions()},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "task_facts": {**parts.task.describe(), "baselines": parts.task.reference_baselines()},
    }


def start_run(host: PluginHost, config: RunConfig, on_event: EventSink | None = None) -> RunOutcome:
    """Prepare everything, create the run folder and search to a stop reason."""
    task_name = resolve_task_name(host, config.task)
    parts = _make_parts(host, config, task_name)
    run = RunFolder.create(config.out, task_name)
    info = _run_json(host, config, task_name, parts)
    run.write_run_json(info)
    journal = Journal(run.journal_path)
    state = RunState()
    loop = _loop(host, config, run, parts, journal, state, on_event)
    loop.emit(
        "run_started",
        run_id=run.run_id,
        task=task_name,
        primary_metric=parts.task.primary_metric,
        higher_is_better=parts.task.higher_is_better,
        isolation=parts.sandbox.isolation_level(),
        isolation_warning=info["isolation"].get("warning"),
    )
    return _search(loop, run, parts)


def resume_run(
    host: PluginHost,
    run: RunFolder,
    *,
    iterations: int | None = None,
    on_event: EventSink | None = None,
) -> RunOutcome:
    """Continue a stopped or killed run from its journal, dropping only unfinished nodes."""
    info = run.read_run_json()
    config = RunConfig.model_validate(info["config"])
    if iterations is not None:
        config = config.model_copy(update={"iterations": iterations})
    state = replay(run.journal_path)
    parts = _make_parts(host, config, info["task"])
    journal = Journal(run.journal_path)  # trims a torn last line before appending
    loop = _loop(host, config, run, parts, journal, state, on_event)
    for lost in state.in_flight:
        shutil.rmtree(run.node_dir(lost), ignore_errors=True)
        shutil.rmtree(run.private_node_dir(lost), ignore_errors=True)
        loop.emit("node_abandoned", id=lost, reason="the run stopped while this node was running")
    shutil.rmtree(run.scratch_dir, ignore_errors=True)
    run.scratch_dir.mkdir(exist_ok=True)
    loop.emit(
        "run_resumed",
        nodes=len(state.tree),
        abandoned=state.in_flight,
        torn_tail=state.torn_tail,
        isolation=parts.sandbox.isolation_level(),
        isolation_warning=isolation_record(parts.sandbox).get("warning"),
    )
    state.in_flight = []
    return _search(loop, run, parts)


def _loop(host, config, run, parts: _Parts, journal, state, on_event) -> ResearchLoop:
    return ResearchLoop(
        host=host,
        config=config,
        run=run,
        task=parts.task,
        agent=parts.agent,
        strategy=parts.strategy,
        sandbox=parts.sandbox,
        journal=journal,
        state=state,
        on_event=on_event,
    )


def _search(loop: ResearchLoop, run: RunFolder, parts: _Parts) -> RunOutcome:
    try:
        reason = loop.run_search()
        best = loop.tree.best()
        if best is not None:
            outputs_mb = loop.config.outputs_mb or parts.task.limits.outputs_mb
            export_best(run, parts.task, best, outputs_mb=outputs_mb)
            loop.emit("best_exported", node_id=best.id)
    finally:
        loop.journal.close()
        parts.agent.close()
        parts.sandbox.close()
        # the dashboard (report.html), also for a run that stopped on an error; a failure
        # to write it is a logged warning and never fails the run
        write_report_quietly(run)
    return RunOutcome(
        run=run,
        stop_reason=reason,
        best=best,
        seeds=loop.tree.seeds(),
        isolation=parts.sandbox.isolation_level(),
    )


def export_best(run: RunFolder, task: PreparedTask, best: Node, *, outputs_mb: float) -> Path:
    """Write ``best/``: the winner's source, validation outputs, submission and manifest.

    The artifacts are taken again, as data, from the node's harness-owned outputs, so even
    a run folder from before outputs were taken this way never exports a link.
    """
    staging = run.root / "best.partial"
    shutil.rmtree(staging, ignore_errors=True)
    copy_source(run.node_src(best.id), staging / "src")
    refused: str | None = None
    try:
        take_outputs(
            run.node_dir(best.id) / "outputs",
            staging / "artifacts",
            max_bytes=int(outputs_mb * 2**20),
        )
    except OutputsRefused as exc:
        refused = str(exc)
    submission = task.write_submission(
        staging / "artifacts", run.private_node_dir(best.id), staging
    )
    manifest = {
        "node": best.id,
        "hypothesis": best.hypothesis,
        "primary_metric": best.score.primary_metric if best.score else None,
        "val_score": best.score.primary if best.score else None,
        "val_metrics": best.score.metrics if best.score else {},
        "selected_by": "validation",
        "submission": submission.name if submission else None,
        "artifacts_refused": refused,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
    shutil.rmtree(run.best_dir, ignore_errors=True)
    staging.replace(run.best_dir)
    return run.best_dir
