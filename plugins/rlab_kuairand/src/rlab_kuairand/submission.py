"""The organizers' submission file: ``row_id,user_id,video_id,score`` in the test row order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HEADER = ["row_id", "user_id", "video_id", "score"]


def write(scores: np.ndarray, users: np.ndarray, videos: np.ndarray, dest: Path) -> Path:
    """Write ``submission.csv`` into ``dest``; return its path."""
    frame = pd.DataFrame(
        {"row_id": np.arange(len(scores)), "user_id": users, "video_id": videos, "score": scores}
    )
    target = Path(dest) / "submission.csv"
    frame.to_csv(target, index=False, float_format="%.8g")
    return target


def check(path: Path, users: np.ndarray, videos: np.ndarray) -> list[str]:
    """The submission's problems, one sentence each; empty when it is valid."""
    try:
        frame = pd.read_csv(path)
    except Exception as exc:
        return [f"{Path(path).name} is not a readable CSV ({exc})"]
    if list(frame.columns) != HEADER:
        return [f"{Path(path).name} has the header {list(frame.columns)}, expected {HEADER}"]
    problems = []
    if len(frame) != len(users):
        return [f"{Path(path).name} has {len(frame)} rows, expected {len(users)}"]
    if not np.array_equal(frame["row_id"].to_numpy(), np.arange(len(users))):
        problems.append("row_id is not 0, 1, 2, ... in the test row order")
    if not np.array_equal(frame["user_id"].to_numpy(), users) or not np.array_equal(
        frame["video_id"].to_numpy(), videos
    ):
        problems.append("user_id / video_id do not match the test rows of the same row_id")
    score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(float)
    if not np.all(np.isfinite(score)):
        problems.append("score has missing, non-numeric or infinite values")
    return problems
