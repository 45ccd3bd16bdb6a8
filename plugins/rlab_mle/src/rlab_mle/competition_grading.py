"""Grading a competition's submission as mle-bench does: a score rounded to 5 decimals,
medals, the validation check.

``grade`` uses mlebench's own ``grade_fn`` when the competition came with one (mlebench
installed), otherwise the metric grader the config names (:mod:`rlab_mle.metric_graders`). ``grade_report`` gives mle-bench's
report fields in mle-bench's order; ``check_submission`` is the agent-side endpoint:
valid, or invalid with the reason, never a score.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd

from rlab_core.api import ConfigError
from rlab_mle import leaderboard
from rlab_mle.definitions import Competition
from rlab_mle.metric_graders import InvalidSubmission, grader_for, submission_problems

#: mle-bench rounds every score to this many decimals.
DECIMALS = 5
REPORT_FIELDS = (
    "competition_id",
    "score",
    "gold_threshold",
    "silver_threshold",
    "bronze_threshold",
    "median_threshold",
    "any_medal",
    "gold_medal",
    "silver_medal",
    "bronze_medal",
    "above_median",
    "submission_exists",
    "valid_submission",
    "is_lower_better",
    "created_at",
    "submission_path",
)


def read_frame(path: Path) -> pd.DataFrame:
    """A CSV (or JSON-lines) file as mle-bench reads answers and submissions."""
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return pd.read_json(path, lines=True)
    return pd.read_csv(path)


def header(path: Path) -> tuple[str, list[str]]:
    """(id column, target columns) of a sample submission."""
    columns = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    return columns[0], columns[1:]


def higher_is_better(competition: Competition) -> bool:
    """The metric's direction: the grader's own, else the leaderboard's order."""
    if competition.grade_fn is None or _known(competition.grader_name):
        return grader_for(competition.grader_name).higher_is_better
    if competition.leaderboard is not None:
        return not leaderboard.thresholds(
            leaderboard.read_scores(competition.leaderboard)
        ).is_lower_better
    raise ConfigError(
        f"Cannot tell whether a higher '{competition.grader_name}' is better for {competition.id}: "
        "rlab-mle does not know this grader and the competition has no leaderboard.csv."
    )


def _known(name: str) -> bool:
    try:
        grader_for(name)
    except ConfigError:
        return False
    return True


def grade(
    competition: Competition, submission: pd.DataFrame, answers: pd.DataFrame, sample: Path
) -> float:
    """The competition's score of ``submission``; :class:`InvalidSubmission` when malformed."""
    return round(raw_grade(competition, submission, answers, sample), DECIMALS)


def raw_grade(
    competition: Competition, submission: pd.DataFrame, answers: pd.DataFrame, sample: Path
) -> float:
    """:func:`grade` before mle-bench's rounding (what a resampled statistic starts from)."""
    if competition.grade_fn is not None:
        try:
            value = competition.grade_fn(submission, answers)
        except Exception as exc:  # mle-bench counts any grader exception as invalid
            raise InvalidSubmission(str(exc) or type(exc).__name__) from None
        return float(value)
    id_column, targets = header(sample)
    return grader_for(competition.grader_name).grade(submission, answers, id_column, targets)


def format_problems(path: Path, sample: Path, competition: Competition) -> list[str]:
    """What is wrong with a submission file next to the sample submission (no answers used)."""
    path = Path(path)
    if not path.is_file():
        return [f"{path.name} does not exist"]
    if path.suffix.lower() != ".csv":
        return [f"{path.name} is not a CSV file"]
    try:
        frame = pd.read_csv(path)
    except Exception as exc:
        return [f"{path.name} is not a readable CSV ({exc})"]
    expected = pd.read_csv(sample)
    prediction = (
        grader_for(competition.grader_name).prediction
        if _known(competition.grader_name)
        else "label"
    )
    id_column, targets = header(sample)
    return submission_problems(
        frame, expected[id_column], id_column, targets, prediction, path.name
    )


def check_submission(path: Path, competition: Competition) -> tuple[bool, str]:
    """mle-bench's validation endpoint: (valid, message); the message never holds a score."""
    problems = format_problems(path, competition.sample_submission, competition)
    if problems:
        return False, "Submission invalid! " + "; ".join(problems) + "."
    try:
        grade(
            competition,
            pd.read_csv(path),
            read_frame(competition.answers),
            competition.sample_submission,
        )
    except InvalidSubmission as exc:
        return False, f"Submission invalid! {exc}."
    except Exception as exc:
        return False, f"Submission invalid! Grading it failed: {type(exc).__name__}: {exc}."
    return True, "Submission is valid."


def grade_report(path: Path, competition: Competition) -> tuple[dict[str, Any], str | None]:
    """mle-bench's report for the submission at ``path`` and, when invalid, why."""
    path = Path(path)
    exists = path.is_file() and path.suffix.lower() == ".csv"
    score: float | None = None
    reason: str | None = None
    if not exists:
        reason = f"no submission: {path.name} does not exist or is not a CSV file"
    else:
        problems = format_problems(path, competition.sample_submission, competition)
        try:
            if problems:
                raise InvalidSubmission("; ".join(problems))
            score = grade(
                competition,
                pd.read_csv(path),
                read_frame(competition.answers),
                competition.sample_submission,
            )
        except InvalidSubmission as exc:
            reason = str(exc)
    bar = (
        leaderboard.thresholds(leaderboard.read_scores(competition.leaderboard))
        if competition.leaderboard is not None
        else None
    )
    medals = leaderboard.rank(score, bar) if bar else leaderboard.rank(None, _no_bar())
    report = {
        "competition_id": competition.id,
        "score": score,
        "gold_threshold": bar.gold if bar else None,
        "silver_threshold": bar.silver if bar else None,
        "bronze_threshold": bar.bronze if bar else None,
        "median_threshold": bar.median if bar else None,
        "any_medal": medals["gold_medal"] or medals["silver_medal"] or medals["bronze_medal"],
        **medals,
        "submission_exists": exists,
        "valid_submission": score is not None,
        "is_lower_better": bar.is_lower_better if bar else not higher_is_better(competition),
        "created_at": dt.datetime.now().isoformat(),
        "submission_path": str(path),
    }
    return {key: report[key] for key in REPORT_FIELDS}, reason


def _no_bar() -> leaderboard.Thresholds:
    return leaderboard.Thresholds(0.0, 0.0, 0.0, 0.0, False, 0)
