"""The database as RelBench's heterogeneous graph, and the time each label row sees it at.

Reads ``$RLAB_DATA_DIR/dataset.yaml`` and ``db/*.parquet`` into a relbench ``Database``,
proposes a pytorch-frame semantic type per column (relbench's ``get_stype_proposal``) and
builds the primary-key/foreign-key graph with relbench's ``make_pkey_fkey_graph``: one node
type per table (its columns as a ``TensorFrame``), one edge type per foreign key and its
reverse, node times from each table's time column.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from relbench.base import Database, Table
from relbench.modeling.graph import make_pkey_fkey_graph
from relbench.modeling.utils import get_stype_proposal
from torch_frame import stype
from torch_frame.data.stats import StatType

_SLOW_COMPUTE = StatType.compute


def _compute(self: StatType, ser: pd.Series, sep: str | None = None):
    """pytorch-frame's column statistic, with a fast path for flat numeric columns.

    pytorch-frame 0.3 flattens every column with ``np.hstack`` element by element (built
    for embedding columns): 3-4 s per statistic of a 280k-row numeric column. A numeric
    column is already flat; the values are the same.
    """
    if self in (StatType.MEAN, StatType.STD, StatType.QUANTILES) and ser.dtype.kind in "fiub":
        values = ser.to_numpy(dtype=np.float64)
        values = values[np.isfinite(values)]
        if self == StatType.QUANTILES:
            if not len(values):
                return [np.nan] * 5
            return np.quantile(values, q=[0, 0.25, 0.5, 0.75, 1]).tolist()
        if not len(values):
            return np.nan
        return (np.mean(values) if self == StatType.MEAN else np.std(values)).item()
    return _SLOW_COMPUTE(self, ser, sep)


StatType.compute = _compute
# pytorch-frame wraps the read-only arrays of parquet columns without copying; harmless here
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
# pytorch-frame's own cache files hold numpy scalars, which torch's weights-only loader
# refuses before pytorch-frame loads them fully; said once per load, nothing is wrong
warnings.filterwarnings("ignore", message="Weights only load failed")


def node_type(table: str) -> str:
    """The graph's name for ``table``: a name torch's ModuleDict owns ("items", "keys",
    "type"...) cannot key the model's per-table modules, so it gets a trailing underscore."""
    return f"{table}_" if hasattr(torch.nn.ModuleDict, table) else table


def load_database(data_dir: Path) -> tuple[Database, dict]:
    """The candidate's database (cut at the test cutoff) and its schema from dataset.yaml.

    Tables are named by :func:`node_type`."""
    schema = yaml.safe_load((data_dir / "dataset.yaml").read_text())
    tables = {}
    for name, spec in schema["tables"].items():
        df = pd.read_parquet(data_dir / "db" / f"{name}.parquet")
        for col in df.columns:  # pandas' nullable and string dtypes trip pytorch-frame
            if pd.api.types.is_datetime64_any_dtype(df[col].dtype):
                # relbench's to_unix_time assumes nanoseconds; parquet gives microseconds
                df[col] = df[col].astype("datetime64[ns]")
            elif isinstance(df[col].dtype, pd.StringDtype) or df[col].dtype == "str":
                df[col] = df[col].astype(object)
            elif pd.api.types.is_extension_array_dtype(df[col].dtype):
                df[col] = df[col].astype("float64")
        tables[node_type(name)] = Table(
            df=df,
            fkey_col_to_pkey_table={c: node_type(t) for c, t in (spec.get("fkeys") or {}).items()},
            pkey_col=spec.get("pkey"),
            time_col=spec.get("time_col"),
        )
    return Database(tables), schema


def column_types(db: Database, max_levels: int, drop: dict[str, list[str]]) -> dict:
    """relbench's stype proposal, without text embeddings (no text model offline).

    A text column with at most ``max_levels`` distinct values becomes categorical; one
    with more (names, identifiers) is dropped, as the LightGBM seeds drop them. ``drop``
    names columns to leave out per table (a task's own label column, for autocomplete).
    """
    proposal = get_stype_proposal(db)
    for name, cols in proposal.items():
        df = db.table_dict[name].df
        for col, kind in list(cols.items()):
            if col in drop.get(name, []):
                del cols[col]
            elif kind == stype.text_embedded:
                if df[col].nunique() <= max_levels:
                    cols[col] = stype.categorical
                else:
                    del cols[col]
            elif kind not in (stype.numerical, stype.categorical, stype.timestamp):
                del cols[col]  # multicategorical, embeddings, sequences: not in this seed
    return proposal


def build_graph(db: Database, col_types: dict, cache_dir: Path | None):
    """``(HeteroData, column statistics)`` from relbench's ``make_pkey_fkey_graph``.

    Materialised tensor frames are cached in ``cache_dir`` (``$RLAB_CACHE_DIR`` persists
    across the nodes of one run) under a key of the column types, so a node that changes
    which columns it encodes rebuilds them.
    """
    path = None
    if cache_dir is not None:
        spec = sorted(
            (t, sorted((c, str(s)) for c, s in cols.items())) for t, cols in col_types.items()
        )
        path = str(cache_dir / f"gnn-frames-{hashlib.sha256(repr(spec).encode()).hexdigest()[:12]}")
    return make_pkey_fkey_graph(db, col_types, cache_dir=path)


def as_of(seed: pd.Series, anchor: str, task: dict) -> pd.Series:
    """The time each label row sees the database as of: the start of its block of windows.

    The candidate's database ends at the test cutoff, so every test row (seed times
    test_timestamp + k * timedelta) sees it as of test_timestamp; val rows are seen as of
    val_timestamp, and train rows in blocks of num_eval_timestamps seed times stepping back
    from val_timestamp, each as of the block's first seed time. Every split is then built
    the same way (the SQL-aggregates seed does the same). Autocomplete tasks keep the
    row's own time (their database is not truncated).
    """
    if task.get("kind") == "autocomplete":
        return seed
    span = pd.Timedelta(task["timedelta"]) * int(task["num_eval_timestamps"])
    anchor = pd.Timestamp(anchor)
    blocks = np.ceil((anchor - seed) / span).clip(lower=0)
    return anchor - span * blocks


def unix_seconds(times: pd.Series) -> torch.Tensor:
    """Times as int64 UNIX seconds, the unit of the graph's node times."""
    values = pd.to_datetime(times).to_numpy().astype("datetime64[s]").astype(np.int64)
    return torch.from_numpy(values)
