"""Build the sanitized, read-only cache of one (dataset, task); run as a separate process.

``python -m rlab_relbench.build SOURCE TASK TARGET --dataset NAME`` writes it with
``build_prepared`` (into ``TARGET.partial``, renamed into place at the end):

- ``public/`` (the candidate's ``RLAB_DATA_DIR``): ``db/<table>.parquet`` physically
  truncated at the test cutoff. Autocomplete tasks instead keep every row (their test
  entities are rows after the cutoff) and keep the target column with every cell after
  the test cutoff blanked; the task's ``remove_columns`` are dropped, as relbench does.
  ``dataset.yaml`` (keys, time columns, cutoffs), ``task.yaml`` (task spec, label SQL),
  ``train.parquet`` and ``val.parquet`` with labels, ``test.parquet`` with only the entity
  (or source) id and the time column, in the original row order. No archives.
- ``private/``: ``val_labels.parquet``, ``test_labels.parquet``, ``facts.json``.
- ``marker.json``: dataset, task, relbench and plugin versions and a SHA-256 of every file.

Every file under ``public/`` and ``private/`` is made read-only (0444), and every folder
there 0555.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import types
from pathlib import Path

from rlab_core.api import build_prepared

BUILD_VERSION = "2"  # 2: autocomplete targets kept, blanked after the cutoff


def plugin_version() -> str:
    """The installed rlab-relbench version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlab-relbench")
    except PackageNotFoundError:
        return "0.0.0"


def relbench_version() -> str:
    """The installed relbench version."""
    from importlib.metadata import version

    return version("relbench")


def digest(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``public/`` and ``private/`` (tamper detection)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel.split("/")[0] in ("public", "private"):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _table_facts(name, table, limit: int = 40) -> dict:
    df = table.df
    cols = []
    for column in list(df.columns)[:limit]:
        cols.append(
            {
                "name": column,
                "dtype": str(df[column].dtype),
                "null": float(df[column].isna().mean()),
            }
        )
    facts = {
        "rows": len(df),
        "pkey": table.pkey_col,
        "fkeys": dict(table.fkey_col_to_pkey_table),
        "time_col": table.time_col,
        "columns": cols,
        "n_columns": len(df.columns),
    }
    if table.time_col and len(df):
        facts["time_range"] = [str(df[table.time_col].min()), str(df[table.time_col].max())]
    return facts


def _label_stats(task, train, kind: str) -> dict:
    import numpy as np

    if kind == "recommendation":
        y = train[task.dst_entity_col]
        sizes = y.map(len)
        return {
            "list_size_mean": float(sizes.mean()),
            "list_size_quantiles": [float(q) for q in np.quantile(sizes, [0, 0.5, 0.9, 1])],
        }
    y = train[task.target_col]
    if kind == "binary_classification":
        return {"positive_rate": float(y.mean())}
    values = y.astype(float)
    return {
        "mean": float(values.mean()),
        "std": float(values.std(ddof=1)),
        "quantiles": {
            str(q): float(values.quantile(q)) for q in (0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98)
        },
    }


def blank_targets_after_cutoff(ds, task, db) -> None:
    """Put an autocomplete task's target column back on its entity table, blanked after the cutoff.

    ``task.get_db`` drops the column whole; the cache keeps the cells of rows up to the
    test cutoff (train and val labels, which the candidate has anyway) and blanks every
    later one: those are the test labels.
    """
    table = db.table_dict[task.entity_table]
    source = ds.get_db(upto_test_timestamp=False).table_dict[task.entity_table].df
    if len(source) != len(table.df):  # the same rows in the same order, or a relbench change
        raise RuntimeError(f"{task.entity_table}: cannot align the target column to blank it")
    values = source[task.target_col].reset_index(drop=True)
    late = (table.df[task.time_col] > ds.test_timestamp).to_numpy()
    table.df[task.target_col] = values.where(~late).to_numpy()


def _timestamps(frame, column: str, limit: int = 60) -> list[str]:
    stamps = sorted({str(v) for v in frame[column]})
    if len(stamps) <= limit:
        return stamps
    return [stamps[0], f"... {len(stamps) - 2} more ...", stamps[-1]]


def build(source: Path, task_name: str, target: Path, dataset: str) -> dict:
    """Sanitize ``task_name`` of the RelBench folder (or Hub spec) ``source`` into ``target``."""
    import numpy as np
    import relbench
    import yaml

    ds = relbench.load_dataset(str(source))
    task = ds.load_task(task_name)
    kind = task.task_type.value
    full_db = task.get_db(upto_test_timestamp=False)
    tables = {
        s: task.get_table(s, mask_input_cols=False, db=full_db) for s in ("train", "val", "test")
    }
    is_rec = kind == "recommendation"
    if task.kind == "autocomplete":
        db = full_db
        blank_targets_after_cutoff(ds, task, db)
    else:
        db = full_db.upto(ds.test_timestamp)

    with build_prepared(target, read_only_folders=True) as prepared:
        public, private = prepared.public, prepared.private
        (public / "db").mkdir()
        for name, table in db.table_dict.items():
            table.df.to_parquet(public / "db" / f"{name}.parquet", index=False)
        keys = [task.src_entity_col if is_rec else task.entity_col, task.time_col]
        for split in ("train", "val"):
            tables[split].df.to_parquet(public / f"{split}.parquet", index=False)
        tables["test"].df[keys].to_parquet(public / "test.parquet", index=False)
        tables["val"].df.to_parquet(private / "val_labels.parquet", index=False)
        tables["test"].df.to_parquet(private / "test_labels.parquet", index=False)

        spec = {
            "dataset": dataset,
            "task": task_name,
            "kind": task.kind,
            "task_type": kind,
            "description": getattr(ds.load_task, "__doc__", None) and None,
            "time_col": task.time_col,
            "target_col": task.dst_entity_col if is_rec else task.target_col,
            "timedelta": str(task.timedelta),
            "num_eval_timestamps": int(task.num_eval_timestamps),
            "val_timestamp": str(ds.val_timestamp),
            "test_timestamp": str(ds.test_timestamp),
        }
        from relbench.manifest import TaskManifest

        task_dir = ds._resolve_task_dir(task_name)
        manifest = TaskManifest.load(Path(task_dir) / "manifest.yaml")
        spec["description"] = manifest.description or ""
        spec["sql"] = manifest.sql or ""
        if is_rec:
            spec.update(
                src_entity_table=task.src_entity_table,
                src_entity_col=task.src_entity_col,
                dst_entity_table=task.dst_entity_table,
                dst_entity_col=task.dst_entity_col,
                eval_k=int(task.eval_k),
                num_dst=len(db.table_dict[task.dst_entity_table].df),
            )
        else:
            spec.update(entity_table=task.entity_table, entity_col=task.entity_col)
        (public / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        schema = {
            "name": dataset,
            "description": ds.manifest.description or "",
            "val_timestamp": str(ds.val_timestamp),
            "test_timestamp": str(ds.test_timestamp),
            "tables": {
                n: {
                    "pkey": t.pkey_col,
                    "time_col": t.time_col,
                    "fkeys": dict(t.fkey_col_to_pkey_table),
                }
                for n, t in db.table_dict.items()
            },
        }
        (public / "dataset.yaml").write_text(yaml.safe_dump(schema, sort_keys=False))

        facts = {
            "spec": spec,
            "counts": {s: len(t.df) for s, t in tables.items()},
            "eval_timestamps": {
                s: _timestamps(tables[s].df, task.time_col) for s in ("val", "test")
            },
            "label_stats": _label_stats(task, tables["train"].df, kind),
            "tables": {n: _table_facts(n, t) for n, t in db.table_dict.items()},
        }
        if kind == "regression":
            facts["nmae_std"] = float(tables["train"].df[task.target_col].astype(float).std(ddof=1))
            facts["val_target_std"] = float(np.std(tables["val"].df[task.target_col].astype(float)))
        (private / "facts.json").write_text(json.dumps(facts, indent=1, default=str))

        marker = {
            "dataset": dataset,
            "task": task_name,
            "source": str(source),
            "relbench": relbench_version(),
            "plugin": plugin_version(),
            "build": BUILD_VERSION,
            "files": digest(prepared.staging),
        }
        # the labels and facts are never a candidate's to change either
        for path in sorted(prepared.private.rglob("*"), reverse=True):
            os.chmod(path, 0o555 if path.is_dir() else 0o444)
        os.chmod(prepared.private, 0o555)
        prepared.marker = marker
    return marker


class _Deferred(types.ModuleType):
    """A module imported only when first used (then every access goes to the real one)."""

    def __getattr__(self, name: str):
        import importlib

        for key in ("sklearn", "sklearn.metrics"):
            if isinstance(sys.modules.get(key), _Deferred):
                del sys.modules[key]
        return getattr(importlib.import_module(self.__name__), name)


def defer_sklearn() -> None:
    """Defer relbench's import of sklearn.metrics: a build never scores, and it costs ~2 s."""
    if "sklearn" in sys.modules:
        return
    package, metrics = _Deferred("sklearn"), _Deferred("sklearn.metrics")
    package.metrics = metrics  # what `import sklearn.metrics as skm` reads
    sys.modules.update({"sklearn": package, "sklearn.metrics": metrics})


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: build one sanitized cache; print its marker as JSON."""
    defer_sklearn()
    parser = argparse.ArgumentParser(prog="python -m rlab_relbench.build")
    parser.add_argument("source")
    parser.add_argument("task")
    parser.add_argument("target")
    parser.add_argument("--dataset", required=True)
    args = parser.parse_args(argv)
    try:
        marker = build(Path(args.source), args.task, Path(args.target), args.dataset)
    except Exception as exc:  # reported to the parent as one line
        print(f"BUILD-ERROR: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({k: v for k, v in marker.items() if k != "files"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
