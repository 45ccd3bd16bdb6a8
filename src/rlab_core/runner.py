"""Starting, resuming and finishing runs: the glue between the CLI and the loop."""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rlab_core import __version__
from rlab_core.acceptance import NoiseJudge, fallback_note
from rlab_core.best_export import export_best
from rlab_core.budget import Budgets
from rlab_core.bytecode import ensure_bytecode
from rlab_core.cache import cache_home
from rlab_core.config import RunConfig
from rlab_core.errors import storage_errno
from rlab_core.evaluation import CandidateEvaluator, CandidateSettings
from rlab_core.events import BestExported, NodeAbandoned, RunResumed, RunStarted
from rlab_core.finalists import FinalistSettings
from rlab_core.interfaces import Agent, PreparedTask, Sandbox, StopRules, Strategy
from rlab_core.journal import Journal, RunState
from rlab_core.knowledge.harvest import write_back
from rlab_core.knowledge.run_knowledge import knowledge_for_run
from rlab_core.loop import EventSink, ResearchLoop
from rlab_core.loop_settings import LoopSettings
from rlab_core.plugins import PluginHost
from rlab_core.recorder import Recorder
from rlab_core.records import Node
from rlab_core.run_folder import OpenedRun, RunFolder
from rlab_core.run_lock import RunLock
from rlab_core.run_plan import RunPlan, plan_run

log = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    """What a finished (or stopped) search leaves behind."""

    run: RunFolder
    stop_reason: str
    best: Node | None
    seeds: list[Node]
    isolation: str
    #: How ``best`` was chosen, in words, when the finalists' seed replicates chose it.
    rule: str | None = None


def prepare_task(
    host: PluginHost,
    task: str,
    options: dict[str, Any] | BaseModel | None = None,
    *,
    rebuild_cache: bool = False,
) -> PreparedTask:
    """Prepare ``task`` (``BENCHMARK:TASK``) through its benchmark plugin.

    ``options`` are the benchmark's: raw (validated here) or an already validated model.
    """
    benchmark_name, _, task_part = task.partition(":")
    benchmark = host.create_benchmark(benchmark_name, options)
    started = time.perf_counter()
    prepared = benchmark.prepare(
        task_part, cache_home() / benchmark_name, rebuild_cache=rebuild_cache
    )
    log.debug("task %s prepared in %.2f s", task, time.perf_counter() - started)
    return prepared


@dataclass
class _Parts:
    task: PreparedTask
    agent: Agent[Any]
    strategy: Strategy[Any]
    sandbox: Sandbox[Any]


def _make_parts(host: PluginHost, plan: RunPlan) -> _Parts:
    # the cheap parts first: a missing executable or daemon fails before any data work
    agent = host.create_agent(plan.agent, plan.agent_options)
    strategy = host.create_strategy(plan.config.strategy, plan.strategy_options)
    sandbox = host.create_sandbox(plan.config.sandbox, plan.sandbox_options)
    task = prepare_task(
        host, plan.task, plan.benchmark_options, rebuild_cache=plan.config.rebuild_cache
    )
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


def _run_json(host: PluginHost, plan: RunPlan, parts: _Parts) -> dict[str, Any]:
    return {
        "task": plan.task,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": json.loads(plan.config.model_dump_json()),
        "agent": plan.agent,
        "primary_metric": parts.task.primary_metric,
        "higher_is_better": parts.task.higher_is_better,
        "isolation": isolation_record(parts.sandbox),
        "versions": {"rlab-core": __version__, "python": sys.version.split()[0], **host.versions()},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "task_facts": {**parts.task.describe(), "baselines": parts.task.reference_baselines()},
        "acceptance": acceptance_record(plan.config, parts.task),
        "limits": limits_record(plan.config, parts.task),
    }


def limits_record(config: RunConfig, task: PreparedTask) -> dict[str, Any]:
    """The candidate limits in effect (the task's defaults where the user set none)."""
    settings = CandidateSettings.for_task(config, task)
    names = ("timeout_s", "memory_mb", "max_output_mb", "disk_mb", "smoke_timeout_s", "threads")
    return {name: getattr(settings, name) for name in names}


def acceptance_record(config: RunConfig, task: PreparedTask) -> dict[str, Any]:
    """The acceptance rule in effect, as ``run.json`` records it (the fallback said in words)."""
    judge = NoiseJudge(task, acceptance=config.acceptance, confidence=config.confidence)
    record: dict[str, Any] = {
        "rule": judge.acceptance,
        "requested": config.acceptance,
        "confidence": config.confidence,
        "resamples": config.resamples,
        "noise_seeds": config.noise_seeds,
    }
    if judge.acceptance != judge.requested:
        record["note"] = fallback_note(task)
    return record


def start_run(host: PluginHost, config: RunConfig, on_event: EventSink | None = None) -> RunOutcome:
    """Prepare everything, create the run folder and search to a stop reason.

    The run folder is locked (:mod:`rlab_core.run_lock`) from its creation to the end.
    """
    plan = plan_run(host, config)  # names and options, validated once, before any work
    task_name = plan.task
    parts = _make_parts(host, plan)
    run = RunFolder.create(config.out, task_name)
    with RunLock(run.root, "run"):
        info = _run_json(host, plan, parts)
        with run.storage_guard(run.run_json):
            run.write_run_json(info)
        journal = Journal(run.journal_path)
        state = RunState()
        loop = _loop(host, config, run, parts, journal, state, on_event)
        loop.recorder.record(
            RunStarted(
                run_id=run.run_id,
                task=task_name,
                primary_metric=parts.task.primary_metric,
                higher_is_better=parts.task.higher_is_better,
                isolation=parts.sandbox.isolation_level(),
                isolation_warning=info["isolation"].get("warning"),
                acceptance_note=info["acceptance"].get("note"),
            )
        )
        return _search(loop, run, parts)


def resume_run(
    host: PluginHost,
    opened: OpenedRun,
    *,
    iterations: int | None = None,
    on_event: EventSink | None = None,
) -> RunOutcome:
    """Continue a stopped or killed run from its journal, dropping only unfinished nodes.

    ``opened`` (:func:`rlab_core.run_folder.open_run`) holds the run read once: its
    configuration and the journal's replayed state. A run another process holds (a live
    ``run``, ``resume`` or ``final``) is refused with :class:`~rlab_core.errors.RunLockedError`
    before anything is prepared or written.
    """
    with RunLock(opened.folder.root, "resume"):
        # what another process wrote before the lock was ours is read again
        return _resume(host, opened.current(), iterations, on_event)


def _resume(
    host: PluginHost, opened: OpenedRun, iterations: int | None, on_event: EventSink | None
) -> RunOutcome:
    run, state, config = opened.folder, opened.state, opened.config
    if iterations is not None:
        config = config.model_copy(update={"iterations": iterations})
    parts = _make_parts(host, plan_run(host, config, opened.task))
    journal = Journal(run.journal_path)  # trims a torn last line before appending
    loop = _loop(host, config, run, parts, journal, state, on_event)
    for lost in state.in_flight:
        shutil.rmtree(run.node_dir(lost), ignore_errors=True)
        shutil.rmtree(run.private_node_dir(lost), ignore_errors=True)
        loop.recorder.record(
            NodeAbandoned(id=lost, reason="the run stopped while this node was running")
        )
    shutil.rmtree(run.scratch_dir, ignore_errors=True)
    with run.storage_guard(run.scratch_dir):
        run.scratch_dir.mkdir(exist_ok=True)
    loop.recorder.record(
        RunResumed(
            nodes=len(state.tree),
            abandoned=state.in_flight,
            torn_tail=state.torn_tail,
            isolation=parts.sandbox.isolation_level(),
            isolation_warning=isolation_record(parts.sandbox).get("warning"),
        )
    )
    state.in_flight = []
    return _search(loop, run, parts)


def _loop(
    host: PluginHost,
    config: RunConfig,
    run: RunFolder,
    parts: _Parts,
    journal: Journal,
    state: RunState,
    on_event: EventSink | None,
) -> ResearchLoop:
    """The loop with the settings it reads, its evaluator and its recorder.

    Events reach the plugins' observers (the dashboard among them) through ``host.notify``.
    """
    judge = NoiseJudge(
        parts.task,
        acceptance=config.acceptance,
        confidence=config.confidence,
        resamples=config.resamples,
        seed=config.seed,
    )
    settings = LoopSettings(
        rules=StopRules(
            epsilon=config.epsilon,
            window=config.window,
            min_iterations=config.min_iterations,
            target_val=config.target_val,
            acceptance=judge.acceptance,
            confidence=config.confidence,
        ),
        budgets=Budgets(
            config.iterations, config.time_budget_s, config.max_tokens, config.max_cost
        ),
        workers=config.workers,
        parallel_order=config.parallel_order,
        debug_tries=config.debug_tries,
        seed=config.seed,
        seed_candidate=config.seed_candidate,
        finalists=FinalistSettings(
            count=config.finalists,
            seeds=config.finalist_seeds,
            base_seed=config.seed,
            workers=config.workers,
            acceptance=judge.acceptance,
            confidence=config.confidence,
        ),
        noise_seeds=config.noise_seeds,
        knowledge=knowledge_for_run(host, config.knowledge, run),
    )
    return ResearchLoop(
        settings=settings,
        run=run,
        task=parts.task,
        agent=parts.agent,
        strategy=parts.strategy,
        sandbox=parts.sandbox,
        evaluator=CandidateEvaluator(
            settings=CandidateSettings.for_task(config, parts.task),
            run=run,
            task=parts.task,
            sandbox=parts.sandbox,
            judge=judge,
        ),
        recorder=Recorder(journal, run, notify=host.notify, on_event=on_event),
        state=state,
    )


def _search(loop: ResearchLoop, run: RunFolder, parts: _Parts) -> RunOutcome:
    # the dashboard (report.html) is an observer: it is rewritten when the run stops, also
    # on an error or Ctrl-C, and once the winner is exported
    try:
        # candidates run on this interpreter with its packages read-only: compile them once
        ensure_bytecode()
        reason = loop.run_search()
        best = loop.tree.selected()
        if best is not None:
            export_best(
                run,
                parts.task,
                best,
                outputs_mb=loop.evaluator.settings.outputs_mb,
                rule=loop.tree.chosen_rule,
            )
            loop.recorder.record(BestExported(node_id=best.id))
    except OSError as exc:
        # a storage error from a write not guarded where it happened: still the run's
        if storage_errno(exc) is None:
            raise
        raise run.storage_error(exc) from exc
    finally:
        loop.recorder.close()
        parts.agent.close()
        parts.sandbox.close()
        # every end (converged, budget, Ctrl-C, error) teaches something; an upsert, so a
        # resumed run records again without duplicates; never fails the run
        write_back(run.root)
    return RunOutcome(
        run=run,
        stop_reason=reason,
        best=best,
        seeds=loop.tree.seeds(),
        isolation=parts.sandbox.isolation_level(),
        rule=loop.tree.chosen_rule,
    )
