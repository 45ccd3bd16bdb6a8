"""The layout of one run on disk (docs/user-guide.md, "The run folder")."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlab_core.config import RunConfig
from rlab_core.errors import RunFolderError
from rlab_core.journal import JOURNAL_NAME, RunState, replay


class RunFolder:
    """Paths of one run folder; creating one checks it is writable."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL_NAME

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def nodes_dir(self) -> Path:
        return self.root / "nodes"

    def node_dir(self, node_id: str) -> Path:
        return self.nodes_dir / node_id

    def node_src(self, node_id: str) -> Path:
        return self.node_dir(node_id) / "src"

    @property
    def private_dir(self) -> Path:
        return self.root / "private"

    def private_node_dir(self, node_id: str) -> Path:
        return self.private_dir / "nodes" / node_id

    @property
    def best_dir(self) -> Path:
        return self.root / "best"

    @property
    def cache_dir(self) -> Path:
        """``RLAB_CACHE_DIR``: shared by the nodes of this run."""
        return self.root / "cache"

    @property
    def scratch_dir(self) -> Path:
        """Working copies of candidates while they run."""
        return self.root / "tmp"

    @property
    def final_report(self) -> Path:
        return self.root / "final_report.json"

    @classmethod
    def create(cls, out: Path, task: str) -> RunFolder:
        """Make a new, uniquely named run folder under ``out``."""
        slug = re.sub(r"[^A-Za-z0-9]+", "-", task).strip("-").lower()[:60] or "run"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
            for n in range(1000):
                name = f"{stamp}-{slug}" + (f"-{n}" if n else "")
                try:
                    (Path(out) / name).mkdir()
                except FileExistsError:
                    continue
                run = cls(Path(out) / name)
                for folder in (run.nodes_dir, run.private_dir, run.cache_dir, run.scratch_dir):
                    folder.mkdir()
                os.chmod(run.private_dir, 0o700)
                return run
        except OSError as exc:
            raise RunFolderError(
                f"Cannot create a run folder in {out}: {exc.strerror}; pass a writable folder with --out."
            ) from None
        raise RunFolderError(f"Too many runs named {stamp}-{slug} in {out}; try again in a second.")

    @classmethod
    def open(cls, path: Path | str, out: Path = Path("runs")) -> RunFolder:
        """Find an existing run by path, by id under ``out``, or ``latest``."""
        candidate = Path(path)
        if str(path) == "latest":
            runs = sorted(p for p in Path(out).glob("*") if (p / JOURNAL_NAME).exists())
            if not runs:
                raise RunFolderError(f"No runs in {out}; start one with `rlab run`.")
            candidate = runs[-1]
        elif not candidate.exists() and (Path(out) / str(path)).exists():
            candidate = Path(out) / str(path)
        if not (candidate / JOURNAL_NAME).exists():
            raise RunFolderError(
                f"{path} is not a run folder (no {JOURNAL_NAME}); give the path `rlab run` printed."
            )
        return cls(candidate)

    def write_run_json(self, data: dict[str, Any]) -> None:
        tmp = self.run_json.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, default=str))
        tmp.replace(self.run_json)

    def read_run_json(self) -> dict[str, Any]:
        """``run.json`` as a mapping; a missing, torn or foreign file is one clear sentence."""
        try:
            data = json.loads(self.run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunFolderError(
                f"Cannot read {self.run_json}: {exc}; the run folder is incomplete."
            ) from None
        if not isinstance(data, dict):
            raise RunFolderError(
                f"{self.run_json} holds a {type(data).__name__}, not a run's record; the run "
                "folder is damaged: restore run.json from a copy."
            )
        return data


@dataclass
class OpenedRun:
    """An existing run, read once: its folder, ``run.json``, its configuration and the
    journal's replayed state."""

    folder: RunFolder
    info: dict[str, Any]
    config: RunConfig
    state: RunState

    @property
    def task(self) -> str:
        return str(self.info["task"])


def open_run(path: Path | str, out: Path = Path("runs")) -> OpenedRun:
    """Find a run (path, id under ``out``, or ``latest``) and read it once.

    The one way the CLI and the runner open a run: ``run.json`` is checked and its
    configuration validated, and the journal is replayed, a single time.
    """
    folder = RunFolder.open(path, out)
    info = folder.read_run_json()
    if not isinstance(info.get("task"), str) or not isinstance(info.get("config"), dict):
        raise RunFolderError(
            f"{folder.run_json} lacks the task or the configuration; the run folder is damaged: "
            "restore run.json from a copy."
        )
    try:
        config = RunConfig.model_validate(info["config"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise RunFolderError(
            f"The configuration in {folder.run_json} is not valid for this rlab ({where}: "
            f"{first['msg']}); resume it with the rlab version that started it."
        ) from None
    return OpenedRun(folder, info, config, replay(folder.journal_path))
