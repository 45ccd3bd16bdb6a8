"""Options of the ``kuairand`` benchmark (kept apart so registration imports only pydantic)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class KuaiRandOptions(BaseModel):
    """Options of the ``kuairand`` benchmark."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path | None = Field(
        default=None,
        description="Folder holding the real KuaiRand-Pure / 1K CSV files (searched recursively); "
        "default: $RLAB_KUAIRAND_DIR, then the download cache.",
    )
    download: bool = Field(
        default=True,
        description="Download the real data from Zenodo record 10439422 when it is not found.",
    )
    sample_users: int = Field(
        default=1500, ge=50, le=100_000, description="Users in the synthetic kuairand:sample."
    )
    sample_videos: int = Field(
        default=3000, ge=50, le=100_000, description="Videos in the synthetic kuairand:sample."
    )
    sample_seed: int = Field(default=2022, description="Seed of the synthetic sample generator.")
