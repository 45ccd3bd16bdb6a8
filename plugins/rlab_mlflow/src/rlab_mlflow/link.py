"""``RUN/mlflow.json``: which MLflow runs mirror this rlab run, and what could not be logged.

Written atomically (a temporary file renamed over it), so a kill leaves the old or the new
file, never half of one. ``rlab resume`` and ``rlab final`` read it to continue the same
MLflow run. It sits in the run folder, never in a node's folder (those are the candidates').
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FILE = "mlflow.json"


@dataclass
class Link:
    """The MLflow side of one rlab run."""

    #: Where the runs were logged, credentials hidden (a changed store starts a new parent).
    tracking_uri: str = ""
    experiment_id: str | None = None
    run_id: str | None = None
    #: rlab node id -> MLflow run id of its nested run.
    nodes: dict[str, str] = field(default_factory=dict)
    #: The node tagged ``winner``, so a later winner takes the tag from it.
    winner: str | None = None
    #: Events that could not be logged after their retries, over every process of the run.
    dropped_events: int = 0

    @classmethod
    def read(cls, run_dir: Path) -> Link:
        """The file's contents; a missing or unreadable file is a fresh link."""
        try:
            data: dict[str, Any] = json.loads((run_dir / FILE).read_text(encoding="utf-8"))
            known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
            return cls(**known)
        except (OSError, ValueError, TypeError):
            return cls()

    def write(self, run_dir: Path) -> None:
        """Replace the file atomically."""
        fd, tmp = tempfile.mkstemp(prefix=".mlflow-", suffix=".tmp", dir=run_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(asdict(self), handle, indent=2)
            os.replace(tmp, run_dir / FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
