"""Where a task's pristine RelBench folder comes from: rel-flights, the Hub cache, a path.

Also checks a local folder against RelBench's format rules, naming the rule it breaks.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from rlab_core.api import ConfigError, DataUnavailableError, UnknownNameError
from rlab_relbench import flights, official


@dataclass(frozen=True)
class Source:
    """A resolved task: its pristine folder, dataset name, task name and cache key."""

    folder: Path
    dataset: str
    task: str
    key: str
    display: str
    official: bool = False


def hf_hub_cache() -> Path:
    """The Hugging Face Hub cache where relbench keeps downloaded datasets."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface"
    )
    return Path(home) / "hub"


def cached_official(dataset: str) -> Path | None:
    """The cached folder of an official dataset, or None when it was never downloaded."""
    repo = official.REPO_OF[dataset].replace("/", "--")
    snapshots = hf_hub_cache() / f"datasets--{repo}" / "snapshots"
    found = sorted(snapshots.glob(f"*/{dataset}/manifest.yaml"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def _online(host: str = "huggingface.co") -> bool:
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        socket.create_connection((host, 443), timeout=3).close()
        return True
    except OSError:
        return False


def resolve(task: str, cache_root: Path, rebuild: bool = False) -> Source:
    """Resolve ``rel-flights/T``, ``<official>/T`` or a path ``/db/T`` to its folder."""
    if task.startswith(("/", ".", "~")):
        return _local(Path(task).expanduser().resolve())
    dataset, _, name = task.partition("/")
    if dataset == "rel-flights":
        if name not in flights.TASKS:
            raise UnknownNameError(
                f"Unknown rel-flights task '{name}'; available: "
                + ", ".join(f"relbench:rel-flights/{t}" for t in flights.TASKS)
                + "."
            )
        folder = flights.ensure(cache_root / "sources" / "rel-flights", rebuild=rebuild)
        return Source(folder, dataset, name, f"rel-flights__{name}", task)
    if dataset not in official.DATASETS:
        raise UnknownNameError(
            f"Unknown RelBench dataset '{dataset}'; available: rel-flights (built in), "
            + ", ".join(official.DATASETS)
            + ", or a local RelBench folder by path (relbench:/path/to/dataset/task)."
        )
    if name not in official.DATASETS[dataset]:
        raise UnknownNameError(
            f"Unknown task '{name}' of {dataset}; available: "
            + ", ".join(f"relbench:{dataset}/{t}" for t in official.DATASETS[dataset])
            + "."
        )
    folder = cached_official(dataset)
    if folder is None:
        spec = f"{official.REPO_OF[dataset]}/{dataset}"
        if not _online():
            raise DataUnavailableError(
                f"{dataset} is not downloaded and the Hub is unreachable: run "
                f"`python -c \"import relbench; relbench.load_dataset('{spec}')\"` once online; "
                f"it is cached in {hf_hub_cache()}."
            )
        from relbench import hf

        folder = hf.download_dataset_dir(spec)
    return Source(Path(folder), dataset, name, f"{dataset}__{name}", task, official=True)


def _local(path: Path) -> Source:
    if path.parent.name == "tasks" and (path / "manifest.yaml").exists():
        dataset_dir = path.parent.parent
    else:
        dataset_dir = path.parent
    validate_folder(dataset_dir, path.name)
    digest = hashlib.sha256(str(dataset_dir).encode()).hexdigest()[:10]
    key = f"local-{dataset_dir.name}-{digest}__{path.name}"
    return Source(dataset_dir, dataset_dir.name, path.name, key, str(path))


def validate_folder(dataset_dir: Path, task: str) -> None:
    """Raise ConfigError naming the RelBench format rule ``dataset_dir`` breaks."""
    import pandas as pd
    import yaml

    where = f"{dataset_dir} is not a valid RelBench folder"
    manifest = dataset_dir / "manifest.yaml"
    if not manifest.exists():
        raise ConfigError(f"{where}: missing manifest ({manifest} not found).")
    try:
        data = yaml.safe_load(manifest.read_text()) or {}
        tables = data["tables"]
        data["val_timestamp"], data["test_timestamp"]
    except Exception as exc:
        raise ConfigError(
            f"{where}: manifest.yaml lacks {exc} (needs name, val_timestamp, test_timestamp, tables)."
        ) from exc
    for name, spec in tables.items():
        spec = spec or {}
        parquet = dataset_dir / "db" / f"{name}.parquet"
        if not parquet.exists():
            raise ConfigError(f"{where}: table '{name}' has no file db/{name}.parquet.")
        for fkey, parent in (spec.get("fkeys") or {}).items():
            if parent not in tables:
                raise ConfigError(
                    f"{where}: foreign key {name}.{fkey} points at unknown table '{parent}'."
                )
        columns = [c for c in (spec.get("pkey"), spec.get("time_col")) if c]
        frame = pd.read_parquet(parquet, columns=columns or None)
        pkey = spec.get("pkey")
        if pkey and not (frame[pkey].to_numpy() == range(len(frame))).all():
            raise ConfigError(
                f"{where}: primary key {name}.{pkey} is not consecutive 0..{len(frame) - 1} in row order "
                "(re-index keys, sorting tables with a time column by time first)."
            )
    task_manifest = dataset_dir / "tasks" / task / "manifest.yaml"
    if not task_manifest.exists():
        names = sorted(p.parent.name for p in (dataset_dir / "tasks").glob("*/manifest.yaml"))
        raise UnknownNameError(
            f"No task '{task}' in {dataset_dir}/tasks; available: "
            + (", ".join(f"relbench:{dataset_dir}/{t}" for t in names) or "none")
            + "."
        )
