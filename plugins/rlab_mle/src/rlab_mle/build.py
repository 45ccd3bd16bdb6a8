"""Build the sanitized, read-only task folder a candidate sees, from a prepared competition.

``public/`` (the candidate's ``RLAB_DATA_DIR``):

- ``train.csv``: public train minus the validation rows, with labels;
- ``val.csv``: the validation rows, features only (the columns of the public test);
- ``test.csv``, ``sample_submission.csv``, ``description.md`` and every other public file
  (hard links where possible, so large image folders cost nothing);
- ``val_sample_submission.csv``: the format of ``val_predictions.csv``;
- ``competition.json``: the grader, its direction, the id and target columns.

``private/``: ``val_answers.csv`` (in the format of the test answers where it can be
derived) and ``facts.json``. A marker holds the data version, the split settings and a
fingerprint of the source files, so a changed source or setting rebuilds the folder. The
folder is written by ``build_prepared``: atomically, every public file read-only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from rlab_core.api import ConfigError, build_prepared, read_marker
from rlab_mle import competition_grading, split, targets
from rlab_mle.definitions import Competition
from rlab_mle.metric_graders import grader_for
from rlab_mle.options import MleOptions
from rlab_mle.targets import find_label_column

DATA_VERSION = "1"
MAX_STRATA = 100


def settings(options: MleOptions) -> dict[str, Any]:
    """The options that change the split."""
    return {
        "val_fraction": options.val_fraction,
        "split_seed": options.split_seed,
        "group_column": options.group_column,
    }


def fingerprint(competition: Competition) -> dict[str, list[int]]:
    """Size and modification time of the source files (a cheap change detector)."""
    files = [p for p in sorted(competition.public_dir.iterdir()) if p.is_file()]
    files += [competition.answers, competition.sample_submission]
    out = {}
    for path in files:
        stat = path.stat()
        out[str(path)] = [stat.st_size, stat.st_mtime_ns]
    return out


def task_dir(cache_root: Path, competition: Competition, options: MleOptions) -> Path:
    """Where the task folder of ``competition`` with these split settings lives."""
    key = json.dumps([str(competition.public_dir.resolve()), settings(options)], sort_keys=True)
    return (
        cache_root / "tasks" / f"{competition.id}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"
    )


def stale_reason(target: Path, competition: Competition, options: MleOptions) -> str | None:
    """Why the folder at ``target`` cannot be used, or None."""
    marker = read_marker(target)
    if marker is None:
        return "no cache yet"
    if marker.get("version") != DATA_VERSION:
        return "built by another rlab-mle version"
    if marker.get("settings") != settings(options):
        return "split settings changed"
    if marker.get("source") != fingerprint(competition):
        return "the competition's files changed"
    return None


def _link_or_copy(source: str, dest: str) -> None:
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def train_file(competition: Competition, sample: pd.DataFrame) -> Path:
    """The labelled train file: the config's ``rlab.train_file``, else ``train.csv``."""
    public = competition.public_dir
    if competition.train_file:
        path = public / competition.train_file
        if not path.is_file():
            raise ConfigError(
                f"The train file {path} named by the config of {competition.id} does not exist."
            )
        return path
    if (public / "train.csv").is_file():
        return public / "train.csv"
    found = sorted(p for p in public.glob("*train*.csv") if p.is_file())
    if not found:
        raise ConfigError(
            f"The public folder {public} of {competition.id} has no train.csv; name the labelled "
            "file with `rlab: {train_file: ...}` in its config.yaml."
        )
    return found[0]


def check_answers(
    answers: pd.DataFrame, sample: pd.DataFrame, form: targets.TargetForm, competition: Competition
) -> None:
    """The answers must cover exactly the ids of the public test's sample submission."""
    where = f"The answers of {competition.id} ({competition.answers})"
    if form.id_column not in answers.columns:
        raise ConfigError(f"{where} have no '{form.id_column}' column, the sample submission's id.")
    ids = answers[form.id_column].astype(str)
    if ids.duplicated().any():
        raise ConfigError(f"{where} repeat ids (e.g. {ids[ids.duplicated()].iloc[0]}).")
    public = set(sample[form.id_column].astype(str))
    if set(ids) != public:
        extra, absent = sorted(set(ids) - public), sorted(public - set(ids))
        example = (extra or absent)[0]
        raise ConfigError(
            f"{where} do not match its public test: {len(extra)} answer ids are not in the sample "
            f"submission and {len(absent)} sample ids have no answer (e.g. {example})."
        )
    if competition.grade_fn is None:
        grader_for(competition.grader_name)  # an unknown grader is its own clear error
        labelled = find_label_column(answers, form.targets, exclude={form.id_column}) is not None
        if not set(form.targets) <= set(answers.columns) and not labelled:
            raise ConfigError(
                f"{where} lack the target columns {form.targets} of the sample submission."
            )


def _val_answers(
    val_rows: pd.DataFrame, form: targets.TargetForm, answers: pd.DataFrame
) -> pd.DataFrame:
    """Validation answers with the test answers' columns where derivable, else the submission's."""
    derived = form.answers_for(val_rows)
    columns = {}
    for column in answers.columns:
        if column in derived.columns:
            columns[column] = derived[column]
        elif column in val_rows.columns:
            columns[column] = val_rows[column].reset_index(drop=True)
        else:
            return derived
    return pd.DataFrame(columns)


def build(competition: Competition, target: Path, options: MleOptions) -> dict[str, Any]:
    """Write the task folder for ``competition`` into ``target``; return its facts."""
    sample = pd.read_csv(competition.sample_submission)
    train_path = train_file(competition, sample)
    train = pd.read_csv(train_path, low_memory=False)
    form = targets.infer(sample, train, competition.id)
    answers = competition_grading.read_frame(competition.answers)
    check_answers(answers, sample, form, competition)
    test_path = competition.public_dir / "test.csv"
    test = pd.read_csv(test_path, low_memory=False) if test_path.is_file() else None
    test_ids = (
        set(test[form.id_column].astype(str))
        if test is not None and form.id_column in test.columns
        else None
    )
    if test_ids is not None and test_ids != set(sample[form.id_column].astype(str)):
        raise ConfigError(
            f"The public test.csv of {competition.id} and its sample submission hold different "
            f"'{form.id_column}' values; re-prepare the competition."
        )
    if form.id_column not in train.columns:
        train.insert(0, form.id_column, [f"train-{i}" for i in range(len(train))])

    group = options.group_column or competition.group_column
    if group and group not in train.columns:
        raise ConfigError(f"The group column '{group}' is not a column of {train_path.name}.")
    exclude = {form.id_column, *form.truth_columns}
    group = group or split.find_group_column(train, test, exclude)
    higher = competition_grading.higher_is_better(competition)
    prediction = _prediction(competition)
    strata = form.strata(train) if prediction != "value" else None
    if strata is not None and strata.nunique() > MAX_STRATA:
        strata = None
    mask = split.validation_mask(
        len(train),
        options.val_fraction,
        options.split_seed,
        strata=None if group else strata,
        groups=train[group] if group else None,
    )
    train_part, val_rows = train[~mask], train[mask]
    if test is not None:
        features = [c for c in test.columns if c in val_rows.columns and c not in exclude]
    else:
        features = [c for c in val_rows.columns if c not in exclude]
    val_features = val_rows[[form.id_column, *[c for c in features if c != form.id_column]]]
    val_sample = pd.DataFrame({form.id_column: val_rows[form.id_column].to_numpy()})
    for column in form.targets:
        val_sample[column] = sample[column].iloc[0] if len(sample) else 0

    info = {
        "competition_id": competition.id,
        "name": competition.name,
        "grader": competition.grader_name,
        "higher_is_better": higher,
        "prediction": prediction,
        "k": _k(competition),
        "id_column": form.id_column,
        "target_columns": form.targets,
        "label_column": form.label_column,
        "files": {
            "train": "train.csv",
            "val": "val.csv",
            "test": "test.csv" if test is not None else None,
            "sample_submission": competition.sample_submission.name,
            "val_sample_submission": "val_sample_submission.csv",
        },
        "rows": {
            "train": len(train_part),
            "val": len(val_rows),
            "test": len(sample),
        },
    }
    facts = {
        **info,
        "source": competition.source,
        "grade_fn": "mlebench" if competition.grade_fn is not None else "rlab-mle",
        "split": {
            **settings(options),
            "group_column": group,
            "stratified": strata is not None and not group,
            "train_file": train_path.name,
        },
        "columns": _column_facts(train_part, exclude),
        "feature_kinds": feature_kinds(train_part, [c for c in features if c != form.id_column]),
        "n_classes": int(train[form.truth_columns[0]].nunique()) if prediction != "value" else 0,
    }
    with build_prepared(target) as prepared:
        public, private = prepared.public, prepared.private
        skip = {train_path.name, "description.md"}
        for entry in sorted(competition.public_dir.iterdir()):
            if entry.name in skip:
                continue
            if entry.is_dir():
                shutil.copytree(entry, public / entry.name, copy_function=_link_or_copy)
            else:
                _link_or_copy(str(entry), str(public / entry.name))
        written = {
            "train.csv": train_part,
            "val.csv": val_features,
            "val_sample_submission.csv": val_sample,
        }
        for name, frame in written.items():
            (public / name).unlink(missing_ok=True)  # a hard link to a source file of that name
            frame.to_csv(public / name, index=False)
        (public / "description.md").write_text(competition.description)
        (public / "competition.json").write_text(json.dumps(info, indent=1))
        _val_answers(val_rows, form, answers).to_csv(private / "val_answers.csv", index=False)
        (private / "facts.json").write_text(json.dumps(facts, indent=1, default=str))
        prepared.marker = {
            "version": DATA_VERSION,
            "settings": settings(options),
            "source": fingerprint(competition),
        }
    return facts


def _prediction(competition: Competition) -> str:
    try:
        return grader_for(competition.grader_name).prediction
    except ConfigError:
        return "label"


def _k(competition: Competition) -> int | None:
    try:
        return grader_for(competition.grader_name).k
    except ConfigError:
        return None


def _column_facts(frame: pd.DataFrame, exclude: set[str], limit: int = 60) -> list[dict[str, Any]]:
    """Name, dtype, missing share and distinct count of the first feature columns."""
    out = []
    for column in [c for c in frame.columns if c not in exclude][:limit]:
        values = frame[column]
        out.append(
            {
                "name": str(column),
                "dtype": str(values.dtype),
                "missing": round(float(values.isna().mean()), 4),
                "distinct": int(values.nunique()),
            }
        )
    return out


def feature_kinds(frame: pd.DataFrame, columns: list[str]) -> dict[str, list[str]]:
    """Columns by how the seed treats them: numeric, categorical (<= 100 values), code, text."""
    kinds: dict[str, list[str]] = {"numeric": [], "categorical": [], "code": [], "text": []}
    for column in columns:
        values = frame[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            kinds["numeric"].append(column)
            continue
        text = values.astype("string")
        kinds["categorical" if text.nunique() <= 100 else "code"].append(column)
        if (text.str.count(" ").fillna(0) + 1).mean() >= 2:
            kinds["text"].append(column)
    return kinds
