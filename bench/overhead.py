"""Framework overhead per iteration with a candidate that does nothing.

Runs a real research loop (``start_run``: best-first strategy, local sandbox, real anchored
edits, real journal) on the inline ``noop:tick`` benchmark, once without isolation ("plain")
and once in the bubblewrap jail ("jailed"), and reads every figure back from the journal.

Targets (the issue): median overhead <= 0.25 s plain and <= 0.6 s jailed, where overhead is
everything of an iteration but the agent's thinking and the candidate's own work. The candidate
here does no work, so the judged figure is (a) below: it still holds the interpreter start of
``python main.py`` (and the jail's start), which the framework pays for every candidate.

Usage: ``uv run python bench/overhead.py [--iterations 30]``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from _common import (
    IterationTimes,
    bare_python,
    bench_workspace,
    iteration_times,
    median,
    percentile,
    process_start_s,
    run_noop,
    verdict,
)

from rlab_core.builtin import jail
from rlab_core.builtin.bwrap_binary import find_bwrap

#: mode name -> (local sandbox isolation, target for the median of figure (a), seconds)
MODES = {"plain": ("none", 0.25), "jailed": ("bubblewrap", 0.6)}

LEGEND = """\
What each figure includes (per agent iteration; the seed node is not counted):
  (a) iteration - agent: journal time from the previous node_finished event to this node's
      node_finished, minus the agent's propose() time (timing.agent_s). Holds the stop check,
      strategy choice, agent context (tree summaries), edit + diff + guard, the copy into the
      scratch folder, the sandbox (jail start, process supervision), the candidate process,
      scoring, result.json and the journal writes (fsync). This is the judged overhead.
  (b) candidate process: execution.wall_s, from the sandbox's Popen returning to the process
      being reaped: `python main.py` interpreter start, its tiny write, exit (and, jailed, the
      bubblewrap namespace setup, which happens inside that process).
  (c) framework only: (a) - (b), the orchestrator's own Python work per iteration.
  node span: node_started -> node_finished of the node (no stop check, strategy or context).
  breakdown: medians of the node's own timing record (edit, sandbox start, scoring, books)."""


def _row(name: str, values: Sequence[float]) -> str:
    return f"    {name:<42} {median(values):8.4f} {percentile(values, 90):8.4f}"


def report_mode(mode: str, times: list[IterationTimes]) -> float:
    """Print the figures of one mode; return the median of figure (a)."""
    a = [t.iteration_minus_agent_s for t in times]
    b = [t.candidate_wall_s for t in times]
    c = [t.framework_s for t in times]
    span = [t.node_span_s for t in times]

    def part(field: str) -> list[float]:
        return [getattr(t.node.timing, field) for t in times]

    print(f"  {mode} ({len(times)} iterations){'':<22} {'median s':>8} {'p90 s':>8}")
    print(_row("(a) iteration wall - agent time", a))
    print(_row("(b) candidate process (execution.wall_s)", b))
    print(_row("(c) framework only = (a) - (b)", c))
    print(_row("node span (node_started -> node_finished)", span))
    print(_row("  timing.edit_s (edit, diff, guard, copy)", part("edit_s")))
    print(_row("  timing.sandbox_start_s (scratch + spawn)", part("sandbox_start_s")))
    print(_row("  timing.scoring_s (validate + score)", part("scoring_s")))
    print(_row("  timing.bookkeeping_s", part("bookkeeping_s")))
    print(_row("  agent propose() (not in (a))", part("agent_s")))
    first, last = a[: len(a) // 3], a[-(len(a) // 3) :]
    print(
        f"    (a) median over the first third {median(first):.4f} s, "
        f"last third {median(last):.4f} s"
    )
    return median(a)


def jailed_python(scratch: Path) -> list[str]:
    """``python -c pass`` inside the same bubblewrap jail a candidate gets."""
    folders = {name: scratch / name for name in ("work", "data", "out", "cache")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    prefix = jail.bubblewrap_args(
        bwrap=find_bwrap(),
        python=sys.executable,
        workdir=folders["work"],
        data_dir=folders["data"],
        writable=[folders["out"], folders["cache"]],
        hidden=[],
    )
    return [*prefix, *bare_python()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="agent iterations per mode")
    args = parser.parse_args()

    bubblewrap = jail.detect_level("bubblewrap") == "bubblewrap"
    print(
        f"rlab overhead per iteration: noop candidate, best-first, local sandbox, "
        f"{args.iterations} iterations per mode"
    )
    print("reference, interpreter start alone (median of 15):")
    bare = process_start_s(bare_python())
    print(f"    `python -c pass`                               {bare:.4f} s")
    if bubblewrap:
        with bench_workspace("jail-ref") as scratch:
            jailed = process_start_s(jailed_python(scratch))
        print(f"    `python -c pass` in the bubblewrap jail        {jailed:.4f} s")
    print()

    summary: list[str] = []
    for mode, (isolation, target) in MODES.items():
        if isolation == "bubblewrap" and not bubblewrap:
            summary.append(f"overhead {mode}: SKIP (bubblewrap cannot create its namespaces here)")
            continue
        with bench_workspace(f"overhead-{mode}") as root:
            outcome = run_noop(root, iterations=args.iterations, isolation=isolation)
            times = iteration_times(outcome.run.journal_path)
        if outcome.isolation != isolation:
            raise RuntimeError(f"asked for isolation {isolation}, the run used {outcome.isolation}")
        value = report_mode(mode, times)
        summary.append(verdict(f"overhead {mode}", value, target) + " [figure (a)]")
        print()

    print(LEGEND)
    print()
    for line in summary:
        print(line)


if __name__ == "__main__":
    main()
