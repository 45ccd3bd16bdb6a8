"""The observer's options (``-o observer.mlflow.OPTION=VALUE``) and where they lead.

The options live in the run's configuration (``observer_options.mlflow`` in ``run.json``),
so ``rlab resume`` and ``rlab final`` mirror into the same place as the run did.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: The name of this observer's section in ``observer_options``.
NAME = "mlflow"


class MlflowOptions(BaseModel):
    """What ``-o observer.mlflow.OPTION=VALUE`` sets."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="Mirror the run into MLflow.")
    uri: str | None = Field(
        default=None,
        description="Tracking URI; default: MLFLOW_TRACKING_URI, else a local mlruns/ folder "
        "next to the runs folder.",
    )
    experiment: str = Field(default="rlab", min_length=1, description="MLflow experiment name.")
    timeout_s: float = Field(default=5.0, gt=0, description="Limit of one request, seconds.")
    retries: int = Field(default=2, ge=0, le=10, description="Retries of a failed event.")
    flush_s: float = Field(
        default=30.0, ge=0, description="Longest wait for the backlog when the run stops, seconds."
    )
    queue: int = Field(default=10_000, ge=1, description="Events held while MLflow is slow.")


class OptionsProblem(ValueError):
    """The run's ``observer_options.mlflow`` cannot be read; the message says why."""


def read_options(run_dir: Path) -> MlflowOptions | None:
    """The options in the run's ``run.json``; None when it cannot be read (no mirror then).

    Raises :class:`OptionsProblem` for options that are there but wrong.
    """
    try:
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        section = (info.get("config") or {}).get("observer_options", {}).get(NAME) or {}
    except (OSError, ValueError, AttributeError):
        return None
    try:
        return MlflowOptions.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors()
        )
        names = ", ".join(MlflowOptions.model_fields)
        raise OptionsProblem(
            f"the MLflow observer is off for this run: its options are not valid ({problems}); "
            f"its options are: {names}"
        ) from None


def tracking_uri(options: MlflowOptions, run_dir: Path) -> str:
    """The option, else ``MLFLOW_TRACKING_URI``, else ``mlruns/`` beside the runs folder."""
    if options.uri:
        return options.uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    # run_dir is RUNS/RUN_ID: the store sits beside RUNS, shared by all of its runs
    return (Path(run_dir).resolve().parent.parent / "mlruns").as_uri()


_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")
_SECRET_QUERY = re.compile(r"(?i)([?&](?:token|password|secret|key|sig|signature)[^=&]*=)[^&\s]*")


def redact(text: str) -> str:
    """``text`` with the user and password of any URI in it, and secret query values, hidden."""
    return _SECRET_QUERY.sub(r"\1***", _USERINFO.sub(r"\g<scheme>***@", text))


def summary(options: MlflowOptions) -> dict[str, Any]:
    """The options as they may be shown (the URI redacted)."""
    data = options.model_dump()
    if data.get("uri"):
        data["uri"] = redact(data["uri"])
    return data
