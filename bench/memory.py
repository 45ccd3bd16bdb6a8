"""Orchestrator peak memory over a 200-node research loop.

Runs a real research loop on the inline ``noop:tick`` benchmark (plain isolation, for speed)
and measures the resident memory of this process — the orchestrator — only; candidates are
separate processes and are not counted. Three measures, and the largest is judged: the
kernel's high-water mark ``getrusage(RUSAGE_SELF).ru_maxrss`` (it survives ``exec``, so it can
only over-state), ``VmHWM`` (this process image only) and a psutil sampler every 10 ms. The
RSS at every 50th node shows whether memory grows with the tree.

Target (the issue): peak <= 150 MB. MB here is 10**6 bytes.

Usage: ``uv run python bench/memory.py [--nodes 200]``
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import psutil
from _common import (
    bench_workspace,
    high_water_rss,
    iteration_times,
    max_rss,
    median,
    run_noop,
    verdict,
)

TARGET_MB = 150.0
MB = 1e6


class RssSampler(threading.Thread):
    """Samples this process's resident memory until stopped; keeps the maximum."""

    def __init__(self, interval_s: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.interval_s = interval_s
        self.process = psutil.Process()
        self.peak = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            self._stop_event.wait(self.interval_s)

    def stop(self) -> int:
        """Stop sampling and return the peak, in bytes."""
        self._stop_event.set()
        self.join()
        return max(self.peak, self.process.memory_info().rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nodes", type=int, default=200, help="nodes in the run, the seed included"
    )
    args = parser.parse_args()

    process = psutil.Process()
    checkpoints: list[tuple[int, int]] = []
    every = max(1, args.nodes // 4)

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "node_finished":
            checkpoints.append((len(checkpoints) + 1, process.memory_info().rss))

    with bench_workspace("memory") as root:
        before = process.memory_info().rss
        sampler = RssSampler()
        sampler.start()
        start = time.perf_counter()
        outcome = run_noop(root, iterations=args.nodes - 1, isolation="none", on_event=on_event)
        wall = time.perf_counter() - start
        sampled_peak = sampler.stop()
        maxrss, hwm = max_rss(), high_water_rss()
        times = iteration_times(outcome.run.journal_path)
        nodes = sum(1 for _ in outcome.run.nodes_dir.iterdir())

    print(f"rlab orchestrator memory: noop candidate, best-first, plain isolation, {nodes} nodes")
    print(f"    RSS after imports, before the run           {before / MB:8.1f} MB")
    print(f"    peak RSS, ru_maxrss (kernel high-water)     {maxrss / MB:8.1f} MB")
    print(f"    peak RSS, VmHWM of this process image       {hwm / MB:8.1f} MB")
    print(f"    peak RSS, psutil sampled every 10 ms       {sampled_peak / MB:8.1f} MB")
    for count, rss in checkpoints:
        if count % every == 0 or count == 1:
            print(f"    RSS after node {count:4d}                        {rss / MB:8.1f} MB")
    per_node = wall / nodes
    print(
        f"    run wall time                              {wall:8.1f} s ({per_node:.3f} s per node)"
    )
    tenth = max(1, len(times) // 10)
    early = [t.framework_s for t in times[:tenth]]
    late = [t.framework_s for t in times[-tenth:]]
    print(
        f"    framework-only time per iteration (figure (c) of overhead.py), median of the "
        f"first {tenth}: {median(early):.4f} s, of the last {tenth}: {median(late):.4f} s"
    )
    print("MB = 10**6 bytes; only this orchestrator process is measured, never the candidates.")
    print()
    peak = max(maxrss, hwm, sampled_peak)
    print(verdict("memory peak", peak / MB, TARGET_MB, unit="MB", what="RSS"))
    print(f"memory run wall: {nodes} nodes in {wall:.1f} s")


if __name__ == "__main__":
    main()
