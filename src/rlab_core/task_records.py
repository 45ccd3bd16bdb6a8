"""Records of a task and of one candidate run: listings, limits, seeds, playbook moves,
audit patterns and the request a sandbox receives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from rlab_core.records import Edit, Record


class TaskListing(Record):
    """One line of ``rlab list tasks BENCHMARK``."""

    name: str = Field(description="Full name, BENCHMARK:TASK.")
    summary: str
    available: bool = Field(description="True when it can be prepared offline right now.")
    note: str = ""


class CandidateLimits(Record):
    """Resource limits for one candidate run."""

    timeout_s: float = Field(default=600.0, gt=0, description="Wall-clock limit, seconds.")
    memory_mb: int = Field(default=8192, gt=0, description="Peak resident memory, MiB.")
    max_output_mb: float = Field(default=20.0, gt=0, description="Largest log, MiB.")
    smoke_timeout_s: float = Field(default=120.0, gt=0, description="Limit for --debug runs.")
    disk_mb: int = Field(
        default=4096,
        gt=0,
        description="Most disk the candidate's working, output and cache folders may hold "
        "together, MiB; more kills it (killed_by disk).",
    )
    outputs_mb: float = Field(
        default=512.0,
        gt=0,
        description="Largest total size of the output files taken after the run, MiB; more "
        "fails the node.",
    )


class SeedCandidate(Record):
    """A runnable starting program shipped by a task."""

    name: str
    path: Path
    description: str = ""


class PlaybookMove(Record):
    """A prepared, real change a task offers to the offline playbook agent."""

    id: str
    hypothesis: str
    edits: list[Edit]
    family: str = "general"
    rank: int = Field(default=100, description="Prior rank: lower is tried first.")
    fix: list[Edit] | None = Field(default=None, description="Edits that repair this move.")
    requires: list[str] = Field(default_factory=list, description="Moves that must be in lineage.")

    @classmethod
    def adding_line(
        cls,
        move_id: str,
        marker: str,
        line: str,
        hypothesis: str,
        *,
        rank: int = 100,
        family: str = "general",
        file: str = "main.py",
        **more: Any,
    ) -> PlaybookMove:
        """A move that adds ``line`` right under ``marker`` (a comment line every move keeps,
        so moves of this kind compose in any order)."""
        edit = Edit(file=file, anchor=marker, replacement=marker + line.rstrip("\n") + "\n")
        return cls(
            id=move_id, hypothesis=hypothesis, edits=[edit], rank=rank, family=family, **more
        )

    @classmethod
    def replacing(
        cls,
        move_id: str,
        old: str,
        new: str,
        hypothesis: str,
        *,
        rank: int = 100,
        family: str = "general",
        file: str = "main.py",
        **more: Any,
    ) -> PlaybookMove:
        """A move that replaces the one occurrence of ``old`` with ``new``."""
        edit = Edit(file=file, anchor=old, replacement=new)
        return cls(
            id=move_id, hypothesis=hypothesis, edits=[edit], rank=rank, family=family, **more
        )


class AuditPattern(Record):
    """A regular expression that the final audit flags in the chosen node's code."""

    pattern: str
    reason: str


class SandboxRequest(Record):
    """One candidate run: what to start, where, with which view of the disk."""

    workdir: Path = Field(description="A fresh copy of the node's source; the working directory.")
    command: list[str]
    env: dict[str, str]
    data_dir: Path
    output_dir: Path
    cache_dir: Path
    log_path: Path
    hidden_paths: list[Path] = Field(default_factory=list)
    timeout_s: float
    memory_mb: int
    max_output_mb: float
    threads: int = Field(
        default=1, ge=1, description="Threads the candidate may use (its RLAB_THREADS)."
    )
    disk_mb: int | None = Field(
        default=None,
        description="Most disk workdir, output_dir and cache_dir may hold together, MiB "
        "(allocated blocks, so sparse files count as what they really use); None: no cap.",
    )
    outputs_mb: float | None = Field(
        default=None,
        description="Largest total size of the outputs a sandbox that moves them (a remote "
        "worker) hands back, MiB; None: no cap. The harness takes them with the same cap.",
    )
