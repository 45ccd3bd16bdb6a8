"""The toy benchmark: fit y = 3x + 1 on a handful of points; RMSE, lower is better."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.api import (
    AuditPattern,
    Benchmark,
    BudgetProgress,
    CandidateLimits,
    ContractError,
    PlaybookMove,
    PreparedTask,
    Resampling,
    Score,
    SeedCandidate,
    Split,
    TaskListing,
    UnknownNameError,
    build_prepared,
    fingerprint,
    read_marker,
    stage_by_progress,
    weighted_mean,
)
from rlab_core.testing.toy import SEED_DIR

#: Bump when the prepared folder changes, so stale copies are rebuilt.
DATA_VERSION = "1"


class ToyOptions(BaseModel):
    """Options of the ``toy`` benchmark."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(default=20.0, description="Candidate timeout.")
    memory_mb: int = Field(default=400, description="Candidate memory limit.")
    max_output_mb: float = Field(default=1.0, description="Candidate log limit.")
    smoke_run: bool = Field(default=False, description="Run --debug first.")
    seed_dir: str | None = Field(default=None, description="Use this seed folder instead.")
    playbook: list[dict] = Field(
        default_factory=list,
        description="Playbook moves the task offers: id, hypothesis, edits (rank: list order).",
    )
    staged: bool = Field(default=False, description="Stage candidates by budget progress.")


class ToyBenchmark(Benchmark[ToyOptions]):
    """One task, ``toy:line``: noisy points of y = 3x + 1, split into train, val and test."""

    def list_tasks(self) -> list[TaskListing]:
        return [TaskListing(name="toy:line", summary="Fit a line; RMSE.", available=True)]

    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        if task != "line":
            raise UnknownNameError(f"Unknown toy task '{task}'; available: toy:line.")
        root = cache_root / "line"
        if rebuild_cache or read_marker(root) != {"version": DATA_VERSION}:
            with build_prepared(root) as build:
                rng = random.Random(0)
                xs = {s: [rng.uniform(-2, 2) for _ in range(20)] for s in ("train", "val", "test")}
                ys = {s: [3 * x + 1 + rng.gauss(0, 0.1) for x in xs[s]] for s in xs}
                inputs = {
                    "train_x": xs["train"],
                    "train_y": ys["train"],
                    "val_x": xs["val"],
                    "test_x": xs["test"],
                }
                (build.public / "inputs.json").write_text(json.dumps(inputs))
                labels = {"val": ys["val"], "test": ys["test"]}
                (build.private / "labels.json").write_text(json.dumps(labels))
                (build.private / "secret_test_labels.txt").write_text("private")
                build.marker = {"version": DATA_VERSION}
        return ToyTask(root, self.config)


class ToyTask(PreparedTask):
    """``toy:line``: write ``val_predictions.json`` and ``test_predictions.json`` (20 floats each)."""

    name = "toy:line"
    primary_metric = "rmse"
    higher_is_better = False
    private_outputs = ("test_predictions.json",)

    def __init__(self, root: Path, options: ToyOptions) -> None:
        self.root = root
        self.data_dir = root / "public"
        self.private = root / "private"
        self.options = options
        self.limits = CandidateLimits(
            timeout_s=options.timeout_s,
            memory_mb=options.memory_mb,
            max_output_mb=options.max_output_mb,
            smoke_timeout_s=options.timeout_s,
        )
        self.smoke_run = options.smoke_run

    def context(self) -> str:
        return "Predict y from x; write val_predictions.json and test_predictions.json (lists of floats)."

    def seed_candidates(self) -> list[SeedCandidate]:
        path = Path(self.options.seed_dir) if self.options.seed_dir else SEED_DIR
        return [SeedCandidate(name="line-seed", path=path, description="slope 1, intercept 0")]

    def hidden_paths(self) -> list[Path]:
        return [self.private]

    def playbook(self) -> list[PlaybookMove]:
        return [PlaybookMove(rank=rank, **move) for rank, move in enumerate(self.options.playbook)]

    def stage_for(self, progress: BudgetProgress) -> str:
        return stage_by_progress(progress) if self.options.staged else "full"

    def reference_baselines(self) -> dict[str, float]:
        """The noise floor: the generating line itself scores about the noise's spread."""
        return {"true line y = 3x + 1": 0.1}

    def audit_patterns(self) -> list[AuditPattern]:
        return [AuditPattern(pattern=r"labels\.json", reason="reads the label file")]

    def validate_outputs(self, output_dir: Path, split: Split = "val") -> list[str]:
        path = Path(output_dir) / f"{split}_predictions.json"
        if not path.exists():
            return [f"{path.name} is missing"]
        try:
            values = json.loads(path.read_text())
        except json.JSONDecodeError:
            return [f"{path.name} is not valid JSON"]
        if not isinstance(values, list) or len(values) != 20:
            return [f"{path.name} must be a list of 20 numbers"]
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
            return [f"{path.name} holds a value that is not a finite number"]
        return []

    def score(self, output_dir: Path, split: Split) -> Score:
        problems = self.validate_outputs(output_dir, split)
        if problems:
            raise ContractError("; ".join(problems))
        predictions = json.loads((Path(output_dir) / f"{split}_predictions.json").read_text())
        labels = json.loads((self.private / "labels.json").read_text())[split]
        rmse = math.sqrt(
            sum((p - y) ** 2 for p, y in zip(predictions, labels, strict=True)) / len(labels)
        )
        return Score(
            metrics={"rmse": rmse}, primary=rmse, primary_metric="rmse", higher_is_better=False
        )

    def resampling(self, output_dir: Path, split: Split = "val") -> Resampling:
        """RMSE on resamples of the points (each point is its own unit)."""
        import numpy as np

        predictions = np.array(
            json.loads((Path(output_dir) / f"{split}_predictions.json").read_text())
        )
        labels = np.array(json.loads((self.private / "labels.json").read_text())[split])
        squared = (predictions - labels) ** 2
        return Resampling(
            unit="points",
            units=len(labels),
            statistic=lambda counts: np.sqrt(weighted_mean(squared, counts)),
            key=fingerprint(np.arange(len(labels))),
        )

    def write_submission(self, output_dir: Path, private_dir: Path, dest: Path) -> Path | None:
        source = Path(private_dir) / "test_predictions.json"
        if not source.exists():
            return None
        target = dest / "submission.json"
        target.write_text(source.read_text())
        return target
