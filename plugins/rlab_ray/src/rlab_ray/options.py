"""Options of the ``ray`` sandbox (pydantic only: registration imports this module)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: The jail a worker node gives candidates (the local sandbox's ``isolation`` option).
IsolationRequest = Literal["auto", "bubblewrap", "netns", "none"]


class RaySandboxConfig(BaseModel):
    """Options of the ``ray`` sandbox."""

    model_config = ConfigDict(extra="forbid")

    address: str = Field(
        default="local",
        description="Ray cluster: 'local' starts one on this machine (stopped at the end of the "
        "run); 'auto' joins the cluster this machine belongs to; 'HOST:PORT' or 'ray://HOST:PORT' "
        "connects to a running one. A process already connected to Ray keeps its connection.",
    )
    num_cpus: int | None = Field(
        default=None,
        ge=1,
        description="CPUs of the cluster started with address=local; None: every core here.",
    )
    object_store_mb: int | None = Field(
        default=None,
        ge=80,
        description="Object store of the cluster started with address=local, MiB; None: Ray's "
        "default (30% of memory).",
    )
    num_cpus_per_candidate: float | None = Field(
        default=None,
        gt=0,
        description="Ray CPUs reserved per candidate; None: its RLAB_THREADS share (capped at the "
        "largest node).",
    )
    max_retries: int = Field(
        default=1,
        ge=0,
        le=10,
        description="Retries of a candidate whose Ray worker or node was lost; a candidate's own "
        "crash or timeout is never retried.",
    )
    isolation: IsolationRequest = Field(
        default="auto",
        description="Jail on the worker node (the local sandbox's): auto takes the strongest the "
        "node has.",
    )
    python: str | None = Field(
        default=None,
        description="Interpreter for candidates on the workers; default: the Ray worker's own.",
    )
