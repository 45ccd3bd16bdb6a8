"""Telling a gain from noise: each node's replicate scores, its gains and whether it is accepted.

When a node is scored on validation, :class:`NoiseJudge` asks the task for its metric on
bootstrap resamples (:meth:`~rlab_core.interfaces.PreparedTask.resampling`), draws the
run's resamples — the same for every node, so differences are paired — and keeps the
replicate scores in the node's harness-owned folder (``nodes/<id>/val_resamples.npz``).
The score gets its standard error. The run's training-seed noise, once measured
(:mod:`rlab_core.replicates`), widens every paired comparison: the rows' bootstrap cannot
see how much a score moves when the same program trains with another seed.

When the node finishes, it gets its :class:`~rlab_core.records.Gain` over its parent and,
where the run's best is another node, over that best; under ``acceptance: significant``
it becomes the new best only when the paired one-sided lower bound at the run's confidence
is above zero, under ``any`` when its score is better at all. A benchmark that offers no
resampling falls back to ``any`` and the run says so once.
"""

from __future__ import annotations

import logging
import math
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rlab_core.interfaces import PreparedTask
from rlab_core.records import SCREEN_REFERENCE, Gain, Node, NodeKind, Score
from rlab_core.tree import Tree

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where a score is measured, not here: the CLI's startup stays light

log = logging.getLogger(__name__)

Acceptance = Literal["significant", "any"]
REPLICATES_FILE = "val_resamples.npz"
#: Where the resamples' seed starts: the run's seed is added, so reruns draw the same.
DRAW_SEED_BASE = 20_240_917


def offers_resampling(task: PreparedTask) -> bool:
    """True when the task's class implements :meth:`PreparedTask.resampling`."""
    return type(task).resampling is not PreparedTask.resampling


def fallback_note(task: PreparedTask) -> str:
    """The one sentence a run says when its benchmark cannot tell a gain from noise."""
    return (
        f"{task.name} offers no resampling of its metric, so rlab cannot tell a gain from "
        "noise on it: any validation gain counts as an improvement (acceptance: any)"
    )


class NoiseJudge:
    """Measures nodes' noise and judges their gains, for one run."""

    def __init__(
        self,
        task: PreparedTask,
        *,
        acceptance: Acceptance = "significant",
        confidence: float = 0.9,
        resamples: int = 1000,
        seed: int = 0,
    ) -> None:
        self.task = task
        self.offered = offers_resampling(task)
        #: The rule in effect: ``any`` where the task offers no resampling.
        self.acceptance: Acceptance = acceptance if self.offered else "any"
        self.requested: Acceptance = acceptance
        self.confidence = confidence
        self.resamples = resamples
        self.draw_seed = DRAW_SEED_BASE + seed
        #: One score's spread over training seeds (:mod:`rlab_core.replicates`), 0 until
        #: measured; every paired verdict counts it.
        self.seed_sd = 0.0
        self._cache: dict[Path, Any] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ measuring

    def measure(self, node_dir: Path, output_dir: Path, score: Score) -> None:
        """Draw the node's replicate scores, keep them in ``node_dir``, set the standard error.

        A resampling that fails leaves the node without a standard error (its gains are then
        unmeasured); the node itself stands.
        """
        if not self.offered:
            return
        import numpy as np

        from rlab_core.resampling import replicate_scores, standard_error

        try:
            resampling = self.task.resampling(output_dir, "val")
            if resampling is None:
                return
            replicates = replicate_scores(resampling, self.resamples, self.draw_seed)
        except Exception:  # a plugin's bug must not fail a scored node
            log.warning("resampling the validation score failed", exc_info=True)
            return
        score.standard_error = standard_error(replicates)
        score.resample_unit = resampling.unit
        np.savez(
            node_dir / REPLICATES_FILE,
            replicates=replicates,
            key=np.array(resampling.key),
            point=np.array(score.primary),
        )

    def replicates(self, node_dir: Path) -> tuple[np.ndarray, str] | None:
        """A node's replicate scores and units key, read once (``None`` when not measured)."""
        with self._lock:
            if node_dir not in self._cache:
                self._cache[node_dir] = self._read(node_dir / REPLICATES_FILE)
            return self._cache[node_dir]

    def _read(self, path: Path) -> tuple[np.ndarray, str] | None:
        if not path.is_file() or path.is_symlink():
            return None
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                values = np.asarray(data["replicates"], dtype=float)
                key = str(data["key"])
        except (OSError, ValueError, KeyError):
            return None
        return (values, key) if values.shape == (self.resamples,) else None

    # ------------------------------------------------------------------ judging

    def compare(self, node: Node, other: Node, nodes_dir: Path) -> Gain | None:
        """``node``'s validation score against ``other``'s, with the paired verdict."""
        if node.score is None or other.score is None:
            return None
        higher = node.score.higher_is_better
        delta = (node.score.primary - other.score.primary) * (1.0 if higher else -1.0)
        mine = self.replicates(nodes_dir / node.id)
        theirs = self.replicates(nodes_dir / other.id)
        unmeasured = Gain(against=other.id, delta=delta, level=self.confidence)
        if mine is None or theirs is None or mine[1] != theirs[1]:
            return unmeasured
        from rlab_core.resampling import paired_difference

        paired = paired_difference(
            node.score.primary,
            other.score.primary,
            mine[0],
            theirs[0],
            higher_is_better=higher,
            level=self.confidence,
            extra_sd=math.sqrt(2.0) * self.seed_sd,
        )
        if paired is None:
            return unmeasured
        return Gain(
            against=other.id,
            delta=paired.delta,
            low=paired.low,
            high=paired.high,
            level=self.confidence,
            verdict=paired.verdict,
            seed_sd=self.seed_sd or None,
        )

    def judge(self, node: Node, tree: Tree, nodes_dir: Path) -> None:
        """Set ``node``'s gains and whether it is accepted (its ancestors are in ``tree``).

        A node is accepted when it beats the best of its lineage — its nearest accepted
        ancestor — under the run's rule; seeds are accepted as the baselines. The rule reads
        the lineage only, never what else happened to finish first, so parallel runs judge
        the same nodes the same way whatever order they finish in.

        Scores are compared at one fidelity only. A ``mini`` screen is never accepted (only
        full scores compete); its gain is measured against its yardstick, the parent re-run
        at mini fidelity (:mod:`rlab_core.core_steps`). A tuning trial is judged like any
        node: it becomes the best only by beating the lineage's best beyond the noise, so
        picking among many trials never crowns a setting whose lead the noise explains.
        """
        if not node.evaluated:
            return
        if node.kind == NodeKind.SEED or node.parent_id is None:
            node.accepted = node.fidelity == "full"
            return
        if node.fidelity != "full":
            node.accepted = False
            yardstick = screen_yardstick(tree, node)
            if yardstick is not None and yardstick.id != node.id:
                node.gain = self.compare(node, yardstick, nodes_dir)
            return
        lineage = [n for n in tree.lineage(node.parent_id) if n.full_fidelity]
        if not lineage:
            node.accepted = True  # nothing to beat: a draft of a failed seed
            return
        parent = lineage[-1]
        node.gain = self.compare(node, parent, nodes_dir)
        anchor = next((n for n in reversed(lineage) if n.accepted is not False), lineage[0])
        versus = node.gain
        if anchor.id != parent.id:
            versus = node.versus_best = self.compare(node, anchor, nodes_dir)
        node.accepted = versus is not None and self.accepts(versus)

    def accepts(self, gain: Gain) -> bool:
        """Whether a gain counts under the run's rule."""
        if self.acceptance == "significant" and gain.verdict != "unmeasured":
            return gain.significant
        return gain.delta > 0


def screen_yardstick(tree: Tree, node: Node) -> Node | None:
    """What a ``mini`` screen is measured against: its parent's mini-fidelity re-run.

    The parent is the nearest evaluated ancestor (a repair's failed parent is skipped). Its
    yardstick is its ``screen-reference`` child, or the parent itself when it is a mini
    node (a repair of a screen, a screen of a screen).
    """
    parent = next((n for n in reversed(tree.lineage(node.parent_id or "")) if n.evaluated), None)
    if parent is None:
        return None
    if parent.fidelity == "mini":
        return parent
    for child in tree.children(parent.id):
        if child.move_id == SCREEN_REFERENCE and child.evaluated:
            return child
    return None
