"""Options of the ``mle`` benchmark (kept apart so registration imports only pydantic)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

#: Environment variables that give the defaults of ``data_dir`` and ``competitions_dir``.
DATA_DIR_ENV = "RLAB_MLE_DATA_DIR"
COMPETITIONS_DIR_ENV = "RLAB_MLE_COMPETITIONS_DIR"


class MleOptions(BaseModel):
    """Options of the ``mle`` benchmark."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path | None = Field(
        default=None,
        description="mle-bench data folder holding <id>/prepared/public and private; default "
        f"${DATA_DIR_ENV}, then mle-bench's own default (~/.cache/mle-bench/data).",
    )
    competitions_dir: Path | None = Field(
        default=None,
        description="Folder of competition definitions (<id>/config.yaml, description.md, "
        f"leaderboard.csv), as in mle-bench; default ${COMPETITIONS_DIR_ENV}.",
    )
    lite: bool = Field(
        default=False, description="List only the 22 competitions of MLE-bench Lite."
    )
    val_fraction: float = Field(
        default=0.2, ge=0.05, le=0.5, description="Share of public train held out for validation."
    )
    split_seed: int = Field(default=0, description="Seed of the validation split.")
    group_column: str | None = Field(
        default=None,
        description="Keep rows sharing this column's value on one side of the validation split; "
        "default: the config's rlab.group_column, else a repeated *id column found in train.",
    )
    candidate_timeout_s: float = Field(
        default=900.0, gt=0, description="Wall-clock limit of one candidate run, seconds."
    )
    candidate_memory_mb: int = Field(
        default=8192, gt=0, description="Memory limit of one candidate run, MiB."
    )
