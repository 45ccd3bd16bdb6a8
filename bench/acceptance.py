"""Do accepted gains hold on test? ``acceptance: any`` against ``acceptance: significant``.

Usage: ``uv run python bench/acceptance.py [--tasks a,b] [--seeds 0,1] [--iterations 10]
[--out f.json]``.

For each task (rel-flights' three, the four mle built-ins, the kuairand sample) and each
rule, runs the offline playbook agent with the same budgets (the run's defaults otherwise,
finalists included) in a throw-away workspace, then — as research into the rule, never fed
back into a run — scores the test split of every node:

- **accepted**: agent-made nodes the rule accepted as improvements (under ``any``, every
  node better than the best of its lineage; under ``significant``, only beyond the noise);
- **held on test**: the share of them whose test score is also better than the node they
  were accepted against (their lineage's best);
- **chosen - seed on test**: the chosen node (the one ``rlab final`` would score) against
  the best seed, paired bootstrap on the test split's units, with its 90 % one-sided
  bounds and verdict ("worse" would be a run that made things worse beyond the noise);
- wall-clock of the run.

The product never does this: ``rlab final`` scores the test split once, for one node.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rlab_core.acceptance import DRAW_SEED_BASE
from rlab_core.blobs import BlobStore
from rlab_core.config import RunConfig
from rlab_core.interfaces import PreparedTask
from rlab_core.journal import replay
from rlab_core.outputs import take_outputs
from rlab_core.plugins import PluginHost
from rlab_core.records import Node, NodeKind
from rlab_core.resampling import paired_difference, replicate_scores
from rlab_core.run_folder import RunFolder
from rlab_core.runner import prepare_task, start_run

TASKS = (
    "relbench:rel-flights/plane-delay",
    "relbench:rel-flights/plane-arr-delay",
    "relbench:rel-flights/plane-dest",
    "mle:uci-handwritten-digits",
    "mle:diabetes-progression",
    "mle:nyc-flights-air-time",
    "mle:wdbc-breast-cancer",
    "kuairand:sample",
)
RULES = ("any", "significant")
LEVEL = 0.9
RESAMPLES = 1000


def test_outputs(run: RunFolder, node: Node, scratch: Path) -> Path:
    """A fresh copy of the node's test-side predictions (private, else its outputs)."""
    private = run.private_node_dir(node.id)
    source = private if private.is_dir() else run.node_dir(node.id) / "outputs"
    target = scratch / node.id
    shutil.rmtree(target, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    # the run's stored files have several names by design (its blob store): taken all the same
    take_outputs(source, target, max_bytes=2**31, shared=BlobStore.of_run(run).inodes())
    return target


class TestScores:
    """Test scores and test replicate scores of a run's nodes, computed once each."""

    def __init__(self, task: PreparedTask, run: RunFolder, scratch: Path) -> None:
        self.task, self.run, self.scratch = task, run, scratch
        self._cache: dict[str, tuple[float, Any]] = {}

    def of(self, node: Node) -> tuple[float, Any]:
        if node.id not in self._cache:
            folder = test_outputs(self.run, node, self.scratch)
            score = self.task.score(folder, "test").primary
            resampling = self.task.resampling(folder, "test")
            replicates = (
                None
                if resampling is None
                else replicate_scores(resampling, RESAMPLES, DRAW_SEED_BASE)
            )
            self._cache[node.id] = (score, replicates)
        return self._cache[node.id]


def _against(node: Node) -> str | None:
    """The node an accepted node was judged against: the best of its lineage."""
    gain = node.versus_best or node.gain
    return gain.against if gain is not None else node.parent_id


def study(
    host: PluginHost, task_name: str, rule: str, iterations: int, root: Path, run_seed: int = 0
) -> dict:
    """One run under ``rule`` and what its accepted nodes and its choice did on test."""
    config = RunConfig(
        task=task_name,
        agent="playbook",
        acceptance=rule,
        iterations=iterations,
        seed=run_seed,
        out=root / "runs",
    )
    start = time.perf_counter()
    outcome = start_run(host, config)
    wall = time.perf_counter() - start
    tree = replay(outcome.run.journal_path).tree
    task = prepare_task(host, task_name)
    higher = task.higher_is_better
    scores = TestScores(task, outcome.run, root / "scratch")
    sign = 1.0 if higher else -1.0

    accepted = [n for n in tree.evaluated() if n.kind != NodeKind.SEED and n.accepted]
    held = 0
    for node in accepted:
        against = tree.get(_against(node))  # type: ignore[arg-type]
        held += sign * (scores.of(node)[0] - scores.of(against)[0]) > 0

    seeds = [n for n in tree.evaluated() if n.kind == NodeKind.SEED]
    seed = max(seeds, key=lambda n: sign * n.score.primary)  # type: ignore[union-attr]
    chosen = tree.selected() or seed
    (chosen_test, chosen_reps), (seed_test, seed_reps) = scores.of(chosen), scores.of(seed)
    paired = None
    if chosen_reps is not None and seed_reps is not None:
        paired = paired_difference(
            chosen_test, seed_test, chosen_reps, seed_reps, higher_is_better=higher, level=LEVEL
        )
    return {
        "task": task_name,
        "rule": rule,
        "run_seed": run_seed,
        "iterations": tree.iterations_used(),
        "evaluated": len(tree.evaluated()),
        "accepted": len(accepted),
        "held_on_test": held,
        "chosen": chosen.id,
        "chosen_val": chosen.score.primary if chosen.score else None,
        "seed": seed.id,
        "seed_val": seed.score.primary if seed.score else None,
        "chosen_test": chosen_test,
        "seed_test": seed_test,
        "test_gain": None if paired is None else paired.delta,
        "test_gain_low": None if paired is None else paired.low,
        "test_gain_high": None if paired is None else paired.high,
        "test_verdict": "unmeasured" if paired is None else paired.verdict,
        "wall_s": round(wall, 1),
        "stop": outcome.stop_reason,
    }


def _row(r: dict) -> str:
    share = f"{r['held_on_test']}/{r['accepted']}" if r["accepted"] else "0/0"
    gain = (
        f"{r['test_gain']:+.4f} [{r['test_gain_low']:+.4f}, {r['test_gain_high']:+.4f}] "
        f"{r['test_verdict']}"
        if r["test_gain"] is not None
        else "unmeasured"
    )
    return (
        f"| {r['task']} | {r['run_seed']} | {r['rule']} | {r['accepted']} | {share} | {r['chosen']} vs "
        f"{r['seed']}: {gain} | {r['wall_s']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--rules", default=",".join(RULES))
    parser.add_argument("--seeds", default="0", help="run seeds, e.g. 0,1,2 (RLAB_SEED, agent)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    logging.getLogger("rlab_core").setLevel(logging.ERROR)
    host = PluginHost()
    root = Path(tempfile.mkdtemp(prefix="rlab-bench-acceptance-"))
    previous = os.environ.get("RLAB_CACHE_HOME")
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")
    results: list[dict] = []
    print(
        "| task | run seed | rule | accepted | held on test | chosen - seed on test (90 % bounds) "
        "| wall s |"
    )
    print("|---|---|---|---|---|---|---|")
    try:
        for task_name in args.tasks.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                for rule in args.rules.split(","):
                    home = root / f"{rule}-{seed}"
                    # a knowledge base per study: no study's lessons steer the next one
                    os.environ["RLAB_KNOWLEDGE"] = str(root / f"knowledge-{rule}-{seed}.sqlite")
                    result = study(host, task_name, rule, args.iterations, home, seed)
                    results.append(result)
                    print(_row(result), flush=True)
    finally:
        if previous is None:
            os.environ.pop("RLAB_CACHE_HOME", None)
        else:
            os.environ["RLAB_CACHE_HOME"] = previous
        shutil.rmtree(root, ignore_errors=True)
    for rule in args.rules.split(","):
        mine = [r for r in results if r["rule"] == rule]
        if not mine:
            continue
        accepted = sum(r["accepted"] for r in mine)
        held = sum(r["held_on_test"] for r in mine)
        worse = [
            f"{r['task']} (seed {r['run_seed']})" for r in mine if r["test_verdict"] == "worse"
        ]
        share = f"{held / accepted:.0%}" if accepted else "n/a"
        walls = sorted(r["wall_s"] for r in mine)
        print(
            f"{rule}: {held}/{accepted} accepted improvements held on test ({share}); "
            f"chosen worse than the seed beyond the noise on: {', '.join(worse) or 'none'}; "
            f"median wall {walls[len(walls) // 2]:.0f}s"
        )
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
