"""Apply the organizers' split to raw KuaiRand files and write the sanitized task folder.

Rows: both standard logs read in order (4_08 file, then 4_22 file), file order kept, then
filtered by ``date`` into train / val / test; ``row_id`` is the 0-based position in the
split. ``public/`` holds train.csv and val.csv with every column, test.csv with only what is
known at impression time, and the three feature files; ``private/`` holds the evaluation
keys and labels. The folder is written by ``build_prepared`` (atomic, public files
read-only) and its marker carries a data version so stale copies are rebuilt.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlab_core.api import build_prepared, read_marker
from rlab_kuairand import schema

DATA_VERSION = "3"  # 3: test rows keep duration_ms (a video attribute)
LIGHTGBM_QUERY_LIMIT = 10_000


def read_standard_logs(raw: Path, variant: str) -> pd.DataFrame:
    """Both scored logs, concatenated in the organizers' order."""
    frames = [pd.read_csv(raw / name) for name in schema.standard_logs(variant)]
    logs = pd.concat(frames, ignore_index=True)
    missing = [c for c in schema.LOG_COLUMNS if c not in logs.columns]
    if missing:
        raise ValueError(f"the standard logs lack the columns {missing}")
    return logs[schema.LOG_COLUMNS]


def split_rows(logs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """train / val / test by ``date``, file order kept, ``row_id`` = position in the split."""
    splits = {}
    for split, (first, last) in schema.SPLITS.items():
        part = logs[(logs["date"] >= first) & (logs["date"] <= last)].reset_index(drop=True)
        part.insert(0, "row_id", np.arange(len(part), dtype=np.int64))
        splits[split] = part
    return splits


def build(raw: Path, target: Path, variant: str, synthetic: bool) -> dict[str, Any]:
    """Write ``public/``, ``private/`` and ``marker.json`` under ``target``; return the facts."""
    splits = split_rows(read_standard_logs(raw, variant))
    longest = {
        split: int(part.groupby("user_id").size().max()) if len(part) else 0
        for split, part in splits.items()
    }
    facts = {
        "version": DATA_VERSION,
        "variant": variant,
        "synthetic": synthetic,
        "counts": {split: len(part) for split, part in splits.items()},
        "users": {split: int(part["user_id"].nunique()) for split, part in splits.items()},
        "longest_user_rows": longest,
        "positive_rate": {
            split: round(float(part[schema.LABEL].mean()), 4) if len(part) else 0.0
            for split, part in splits.items()
        },
    }
    with build_prepared(target) as prepared:
        public, private = prepared.public, prepared.private
        splits["train"].to_csv(public / "train.csv", index=False)
        splits["val"].to_csv(public / "val.csv", index=False)
        test_columns = ["row_id", *schema.IMPRESSION_COLUMNS]
        splits["test"][test_columns].to_csv(public / "test.csv", index=False)
        for public_name, raw_name in schema.feature_files(variant).items():
            shutil.copyfile(raw / raw_name, public / public_name)
        for split in ("val", "test"):
            part = splits[split]
            np.savez(
                private / f"{split}_keys.npz",
                user_id=part["user_id"].to_numpy(np.int64),
                video_id=part["video_id"].to_numpy(np.int64),
                label=part[schema.LABEL].to_numpy(np.int8),
            )
        prepared.marker = facts
    return facts


def is_current(target: Path) -> bool:
    """True when ``target`` holds a finished build of this data version."""
    marker = read_marker(target)
    return marker is not None and marker.get("version") == DATA_VERSION
