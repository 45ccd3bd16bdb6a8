"""What a competition asks for, read from its sample submission and its train file.

The sample submission's first column is the id and the rest are the targets (mle-bench's
convention). The targets are either columns of train (binary, regression, multi-label) or
the classes of one train column that the submission one-hot encodes (multi-class
probabilities, as in leaf-classification).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rlab_core.api import ConfigError


@dataclass(frozen=True)
class TargetForm:
    """The id column, the submission's target columns and where their truth lies in train."""

    id_column: str
    targets: list[str]
    label_column: str | None = None  # a train column one-hot encoded into ``targets``

    @property
    def truth_columns(self) -> list[str]:
        """Train columns that hold the truth (they never reach validation features)."""
        return [self.label_column] if self.label_column else list(self.targets)

    def strata(self, train: pd.DataFrame) -> pd.Series:
        """The label to stratify a classification split on."""
        return train[self.truth_columns[0]].astype(str)

    def answers_for(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``id`` plus the target columns for ``rows`` of train, in the submission's format."""
        out = rows[[self.id_column]].reset_index(drop=True)
        if self.label_column is None:
            return pd.concat([out, rows[self.targets].reset_index(drop=True)], axis=1)
        labels = rows[self.label_column].astype(str).to_numpy()
        onehot = (labels[:, None] == np.asarray(self.targets)[None, :]).astype(int)
        return pd.concat([out, pd.DataFrame(onehot, columns=self.targets)], axis=1)


def infer(sample: pd.DataFrame, train: pd.DataFrame, competition_id: str) -> TargetForm:
    """The target form; a :class:`ConfigError` when train does not hold the targets."""
    columns = [str(c) for c in sample.columns]
    if len(columns) < 2:
        raise ConfigError(
            f"The sample submission of {competition_id} has the columns {columns}; it needs an id "
            "column followed by at least one target column."
        )
    id_column, targets = columns[0], columns[1:]
    if all(t in train.columns for t in targets):
        return TargetForm(id_column, targets)
    if len(targets) >= 2:
        label = find_label_column(train, targets, exclude={id_column})
        if label is not None:
            return TargetForm(id_column, targets, label_column=label)
    raise ConfigError(
        f"Cannot hold out validation rows for {competition_id}: its train file has neither the "
        f"target columns {targets} nor a label column whose values are those names; name the "
        "train file with `rlab: {train_file: ...}` in its config.yaml."
    )


def find_label_column(frame: pd.DataFrame, classes: list[str], exclude: set[str]) -> str | None:
    """The column whose values are class names, covering the most of them (at least half)."""
    wanted, best, best_cover = set(classes), None, 0
    for column in frame.columns:
        if column in exclude or frame[column].nunique() > len(wanted):
            continue
        values = set(frame[column].dropna().astype(str))
        if values <= wanted and len(values) > best_cover:
            best, best_cover = str(column), len(values)
    return best if best_cover >= max(2, len(wanted) / 2) else None
