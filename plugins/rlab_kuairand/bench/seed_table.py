"""GAUC / nDCG@5 / primary on valid and test for each seed candidate, with wall-clock.

    uv run python plugins/rlab_kuairand/bench/seed_table.py                 # synthetic sample
    RLAB_KUAIRAND_DIR=/data/KuaiRand-Pure uv run python plugins/rlab_kuairand/bench/seed_table.py --task pure

Each seed runs as the loop runs it (``python main.py`` in a copy, the sanitized data folder,
RLAB_THREADS=2); the task scores its outputs. Test numbers are printed here because this is
a benchmark of the seeds, not a search: no selection reads them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlab_kuairand.benchmark import KuaiRandBenchmark
from rlab_kuairand.options import KuaiRandOptions

from rlab_core.edits import copy_source
from rlab_core.run_folder import cache_home


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="sample", choices=["sample", "pure", "1k"])
    parser.add_argument("--threads", default="2")
    args = parser.parse_args()
    task = KuaiRandBenchmark(KuaiRandOptions()).prepare(args.task, cache_home() / "kuairand")
    if task.synthetic:
        print("SYNTHETIC DATA (kuairand:sample): not comparable with published KuaiRand numbers")
    print(f"{'seed':<14} {'split':<5} {'GAUC':>7} {'nDCG@5':>7} {'primary':>8} {'wall s':>7}")
    for seed in task.seed_candidates():
        with tempfile.TemporaryDirectory() as tmp:
            work, out = Path(tmp) / "work", Path(tmp) / "out"
            copy_source(seed.path, work)
            out.mkdir()
            env = {
                "PATH": os.environ.get("PATH", ""),
                "RLAB_DATA_DIR": str(task.data_dir),
                "RLAB_OUTPUT_DIR": str(out),
                "RLAB_CACHE_DIR": tmp,
                "RLAB_THREADS": args.threads,
                "RLAB_SEED": "0",
            }
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "main.py"], cwd=work, env=env, capture_output=True, text=True
            )
            wall = time.perf_counter() - start
            if done.returncode:
                print(f"{seed.name:<14} failed: {done.stderr[-500:]}")
                continue
            for split in ("val", "test"):
                m = task.score(out, split).metrics
                print(
                    f"{seed.name:<14} {split:<5} {m['GAUC']:7.4f} {m['nDCG@5']:7.4f} {m['primary']:8.4f} {wall:7.1f}"
                )


if __name__ == "__main__":
    main()
