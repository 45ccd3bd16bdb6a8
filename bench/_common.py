"""Shared helpers of the benchmark scripts: a throw-away workspace, the noop run, statistics.

Every script runs from the repository root as ``uv run python bench/<name>.py``; Python puts
``bench/`` first on ``sys.path``, so this module and :mod:`noop_plugin` import by name.
"""

from __future__ import annotations

import logging
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import noop_plugin

from rlab_core.config import RunConfig
from rlab_core.journal import read_events
from rlab_core.plugins import PluginHost
from rlab_core.records import Node, NodeKind
from rlab_core.runner import RunOutcome, start_run

EventSink = Callable[[dict[str, Any]], None]


@contextmanager
def bench_workspace(prefix: str) -> Iterator[Path]:
    """A temporary folder holding the run, an rlab cache (``RLAB_CACHE_HOME``) and a knowledge
    base of its own (``RLAB_KNOWLEDGE``: no lesson of an earlier run steers this one); removed
    after."""
    root = Path(tempfile.mkdtemp(prefix=f"rlab-bench-{prefix}-"))
    previous = os.environ.get("RLAB_CACHE_HOME")
    previous_knowledge = os.environ.get("RLAB_KNOWLEDGE")
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    os.environ["RLAB_KNOWLEDGE"] = str(root / "knowledge.sqlite")
    # the local sandbox warns once per construction when isolation is "none"; we ask for it
    logging.getLogger("rlab_core.builtin.local_sandbox").setLevel(logging.ERROR)
    try:
        yield root
    finally:
        if previous is None:
            os.environ.pop("RLAB_CACHE_HOME", None)
        else:
            os.environ["RLAB_CACHE_HOME"] = previous
        if previous_knowledge is None:
            os.environ.pop("RLAB_KNOWLEDGE", None)
        else:
            os.environ["RLAB_KNOWLEDGE"] = previous_knowledge
        shutil.rmtree(root, ignore_errors=True)


def make_host() -> PluginHost:
    """A plugin host with only the core built-ins and the inline noop plugin."""
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(noop_plugin, name="bench-noop", distribution="bench")
    return host


def run_noop(
    root: Path,
    *,
    iterations: int,
    isolation: str,
    on_event: EventSink | None = None,
    **overrides: Any,
) -> RunOutcome:
    """Run a real research loop on ``noop:tick`` for exactly ``iterations`` agent iterations.

    ``overrides`` are further :class:`RunConfig` fields (``seed_candidate``, ``workers``, ...).
    """
    config = RunConfig(
        task=f"{noop_plugin.BENCHMARK}:{noop_plugin.TASK}",
        agent=noop_plugin.AGENT,
        strategy="best-first",
        sandbox="local",
        sandbox_options={"isolation": isolation},
        iterations=iterations,
        # every child beats its parent by 1.0 > epsilon, and min_iterations forbids an early stop
        min_iterations=iterations,
        debug_tries=0,
        finalists=0,  # the figures are per iteration: no seed replicates after the search
        noise_seeds=0,  # nor before it
        smoke_run=False,
        **{"out": root / "runs", **overrides},
    )
    outcome = start_run(make_host(), config, on_event=on_event)
    if not outcome.stop_reason.startswith("iteration budget reached"):
        raise RuntimeError(f"the noop run stopped early: {outcome.stop_reason}")
    return outcome


@dataclass(frozen=True)
class IterationTimes:
    """Seconds of one agent iteration, taken from the journal and the node's own record."""

    node: Node
    #: previous ``node_finished`` -> this ``node_finished``, minus ``timing.agent_s``: the stop
    #: check, strategy, agent context, edit, guard, sandbox, candidate, scoring, journal.
    iteration_minus_agent_s: float
    #: ``node_started`` -> ``node_finished`` of this node (no strategy or agent context).
    node_span_s: float
    #: ``execution.wall_s``: the candidate process, interpreter start (and jail) included.
    candidate_wall_s: float

    @property
    def framework_s(self) -> float:
        """Everything but the agent and the candidate process."""
        return self.iteration_minus_agent_s - self.candidate_wall_s


def iteration_times(journal_path: Path) -> list[IterationTimes]:
    """Per agent-made, evaluated node: its times, in finishing order."""
    events, _ = read_events(journal_path)
    started: dict[str, float] = {}
    previous_finish: float | None = None
    result: list[IterationTimes] = []
    for event in events:
        if event["type"] == "node_started":
            started[event["id"]] = event["t"]
        elif event["type"] == "node_finished":
            node = Node.model_validate(event["node"])
            finished = event["t"]
            if (
                previous_finish is not None
                and node.kind != NodeKind.SEED
                and node.execution is not None
                and node.score is not None
            ):
                result.append(
                    IterationTimes(
                        node=node,
                        iteration_minus_agent_s=finished - previous_finish - node.timing.agent_s,
                        node_span_s=finished - started[node.id],
                        candidate_wall_s=node.execution.wall_s,
                    )
                )
            previous_finish = finished
    return result


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between ranks."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else math.nan


def process_start_s(argv: Sequence[str], repeats: int = 15) -> float:
    """Median wall time of running ``argv`` to completion (e.g. ``python -c pass``)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(list(argv), check=True, stdin=subprocess.DEVNULL, capture_output=True)
        times.append(time.perf_counter() - start)
    return median(times)


def bare_python() -> list[str]:
    """The candidates' interpreter (the local sandbox defaults to rlab's own) running nothing."""
    return [sys.executable, "-c", "pass"]


def high_water_rss() -> int:
    """This process image's peak resident memory, bytes: ``VmHWM`` (Linux), else ru_maxrss.

    ``VmHWM`` starts afresh at ``exec``; ``ru_maxrss`` survives it, so a child forked from a
    big parent reports at least the parent's size there.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return max_rss()


def max_rss() -> int:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def verdict(label: str, value: float, target: float, unit: str = "s", what: str = "median") -> str:
    """One summary line: ``overhead plain: median 0.084 s (target <= 0.25 s) PASS``."""
    digits = 3 if unit == "s" else 1
    status = "PASS" if value <= target else "FAIL"
    return f"{label}: {what} {value:.{digits}f} {unit} (target <= {target:g} {unit}) {status}"
