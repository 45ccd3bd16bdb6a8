"""Options of the ``relbench`` benchmark (kept apart so registration imports nothing else)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RelBenchOptions(BaseModel):
    """Options of the ``relbench`` benchmark."""

    model_config = ConfigDict(extra="forbid")

    build_timeout_s: float = Field(
        default=1800.0, gt=0, description="Limit for building one sanitized cache, seconds."
    )
    candidate_timeout_s: float = Field(
        default=300.0, gt=0, description="Wall-clock limit for one candidate run, seconds."
    )
    candidate_memory_mb: int = Field(
        default=8192, gt=0, description="Memory limit for one candidate run, MiB."
    )
