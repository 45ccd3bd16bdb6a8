"""Re-running a node with other ``RLAB_SEED`` values, and the run's training-seed noise.

A replicate is the node's own program run again with another seed in
``replicates/<id>-seed<k>``; only its validation score is kept (the outputs of another seed
are deleted) and it is journaled (:class:`~rlab_core.events.ReplicateScored`), so a resumed
run re-runs only what is missing and the finalists reuse what the noise measurement ran.

**Training-seed noise.** The paired bootstrap measures how much a score moves with the
validation rows drawn; it cannot see how much it moves when the same program trains with
another seed. Right after the seeds, the best seed runs with the ``noise_seeds`` other seeds;
the standard deviation of its scores (:class:`~rlab_core.events.SeedNoiseMeasured`) is
counted in every paired verdict of the run (:class:`~rlab_core.acceptance.NoiseJudge`): a
gain a lucky seed could explain is within noise.
"""

from __future__ import annotations

import shutil
import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from rlab_core.events import ReplicateScored, ReplicatesStarted, SeedNoiseMeasured
from rlab_core.journal import RunState
from rlab_core.recorder import Recorder
from rlab_core.records import Node, Timing
from rlab_core.tree import Tree

if TYPE_CHECKING:
    from rlab_core.acceptance import NoiseJudge
    from rlab_core.evaluation import CandidateEvaluator
    from rlab_core.run_folder import RunFolder


class ReplicateInterrupted(KeyboardInterrupt):
    """A replicate was cancelled because the run is stopping (an interrupt, as the user's)."""


def seeds_after(base_seed: int, count: int) -> list[int]:
    """The ``count`` seeds after the run's own: ``base + 1 … base + count``."""
    return [base_seed + k for k in range(1, count + 1)]


class Replicator:
    """Runs the replicates a run is missing and journals each."""

    def __init__(
        self,
        *,
        run: RunFolder,
        state: RunState,
        evaluator: CandidateEvaluator,
        recorder: Recorder,
        time_left: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.run = run
        self.state = state
        self.evaluator = evaluator
        self.recorder = recorder
        self.time_left = time_left

    def ensure(
        self, nodes: list[Node], seeds: list[int], workers: int = 1, purpose: str = "finalists"
    ) -> None:
        """Run every (node, seed) pair that has no journaled replicate yet."""
        todo = [
            (node, seed)
            for node in nodes
            for seed in seeds
            if seed not in self.state.replicates.get(node.id, {})
        ]
        if not todo:
            return
        runs = [(node.id, seed) for node, seed in todo]
        self.recorder.record(ReplicatesStarted(purpose=purpose, runs=runs))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for future in [pool.submit(self.replicate, node, seed) for node, seed in todo]:
                future.result()

    def outcomes(self, node: Node, seeds: list[int]) -> tuple[dict[str, float], dict[str, str]]:
        """The node's scores by seed (its own run included) and its failures by seed."""
        scores: dict[str, float] = {}
        failures: dict[str, str] = {}
        for seed, event in sorted(self.state.replicates.get(node.id, {}).items()):
            if seed not in seeds:
                continue
            if event.get("primary") is None:
                failures[str(seed)] = str(event.get("failure") or "failed")
            else:
                scores[str(seed)] = float(event["primary"])
        return scores, failures

    def replicate(self, node: Node, seed: int) -> None:
        """Run ``node`` with ``seed`` and journal its score (or why it failed)."""
        left = self.time_left()
        if left is not None and left <= 0:
            return  # the time budget is spent: whoever asked says some did not run
        name = f"{node.id}-seed{seed}"
        home = self.run.root / "replicates" / name
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        timing = Timing()
        execution, score, failure = self.evaluator.evaluate(
            name,
            self.run.node_src(node.id),
            timing,
            stage=node.stage,
            top_nodes=node.top_nodes,
            seed=seed,
            home=home,
        )
        if execution is not None and execution.killed_by == "cancelled":
            raise ReplicateInterrupted(f"{name} was stopped by the interrupt")
        # only the score matters: the predictions of another seed are not kept
        shutil.rmtree(home / "outputs", ignore_errors=True)
        shutil.rmtree(home / "private", ignore_errors=True)
        event = ReplicateScored(
            node_id=node.id,
            seed=seed,
            primary=score.primary if score is not None else None,
            failure=None if failure is None else f"[{failure.stage}] {failure.message}"[:500],
            wall_s=round(timing.candidate_s, 3),
        )
        line = self.recorder.record(event)
        with self.recorder.lock:
            self.state.replicates.setdefault(node.id, {})[seed] = line


def measure_seed_noise(
    replicator: Replicator,
    tree: Tree,
    judge: NoiseJudge | None,
    *,
    base_seed: int,
    count: int,
    workers: int = 1,
) -> dict[str, Any] | None:
    """Measure the run's training-seed noise once (journaled, read back on resume).

    The best evaluated seed runs with ``count`` other seeds; the standard deviation of its
    scores is the noise (``None`` when fewer than two scores exist, e.g. a seed that fails
    under another seed), and ``judge`` counts it in every paired verdict from now on.
    Returns the :class:`~rlab_core.events.SeedNoiseMeasured` fields, or ``None`` when
    nothing was measured (no judge or no resampling to add it to, no evaluated seed,
    ``count`` 0, the time budget spent).
    """
    if judge is None or not judge.offered:
        return None
    noise = _seed_noise(replicator, tree, base_seed=base_seed, count=count, workers=workers)
    judge.seed_sd = (noise or {}).get("sd") or 0.0
    return noise


def _seed_noise(
    replicator: Replicator, tree: Tree, *, base_seed: int, count: int, workers: int
) -> dict[str, Any] | None:
    state = replicator.state
    if state.seed_noise is not None:
        return state.seed_noise
    seeds = [n for n in tree.seeds() if n.evaluated]
    if not seeds or count <= 0:
        return None
    sign = -1.0 if tree.higher_is_better else 1.0
    node = min(seeds, key=lambda n: sign * n.score.primary)  # type: ignore[union-attr]
    extra = seeds_after(base_seed, count)
    replicator.ensure([node], extra, workers, purpose="seed noise")
    scores, failures = replicator.outcomes(node, extra)
    if len(scores) + len(failures) < count:
        return None  # the time budget ran out: measured on a later resume, if any
    scores = {str(base_seed): node.score.primary, **scores}  # type: ignore[union-attr]
    values = list(scores.values())
    event = SeedNoiseMeasured(
        node_id=node.id,
        scores=scores,
        failures=failures,
        sd=statistics.stdev(values) if len(values) > 1 else None,
    )
    line = replicator.recorder.record(event)
    with replicator.recorder.lock:
        state.seed_noise = line
    return line
