"""Options of the example benchmark (kept apart so registration imports nothing else)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExampleOptions(BaseModel):
    """Options of the ``example`` benchmark."""

    model_config = ConfigDict(extra="forbid")

    train_rows: int = Field(
        default=60_000, ge=1_000, description="Training rows sampled from Jan-Aug."
    )
    eval_rows: int = Field(
        default=20_000,
        ge=1_000,
        description="Rows sampled for each of val (Sep-Oct) and test (Nov-Dec).",
    )
