"""The GNN seed's offer: whether the ``gnn`` extra imports, the seed, its reference scores.

The check finds the modules without importing them (``importlib.util.find_spec``), so
listing tasks and preparing one never pays torch's import.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rlab_core.api import SeedCandidate

SEED_DIR = Path(__file__).parent / "seeds" / "gnn"
MODULES = ("torch", "torch_geometric", "torch_frame")
INSTALL_HINT = (
    "The GNN seed (RelBench's graph neural network) needs the gnn extra: "
    "uv pip install 'rlab-relbench[gnn]' (or pip install 'rlab-relbench[gnn]')."
)

#: The GNN seed's validation score on rel-flights, measured here: one candidate run of
#: seeds/gnn as shipped, RLAB_SEED 0, RLAB_THREADS 2 on CPU, by bench/relbench_flights.py
#: (2026-12-03; the plugin README has its test scores and standard errors). RelBench
#: publishes no GNN number for rel-flights, so this is the bar the dashboard shows.
MEASURED_VAL: dict[str, float] = {
    "rel-flights/plane-delay": 0.6388,
    "rel-flights/plane-arr-delay": 0.4698,
    "rel-flights/plane-dest": 0.4233,
}
MEASURED_LABEL = "GNN seed (measured here, val)"


def available() -> bool:
    """True when torch, torch_geometric and torch_frame can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in MODULES)


def seed() -> SeedCandidate:
    """The GNN seed candidate (one folder serves every RelBench task type)."""
    return SeedCandidate(
        name="gnn",
        path=SEED_DIR,
        description="RelBench's reference GNN: per-table column encoders, temporal "
        "encoding, heterogeneous GraphSAGE over time-respecting sampled subgraphs, MLP "
        "head (two towers with destination id embeddings for recommendation).",
    )


def context_note() -> str:
    """One sentence for the task's context: the GNN seed is in the pool, or how to add it."""
    if available():
        return (
            "The `gnn` seed is RelBench's reference GNN (graph.py, model.py, "
            "temporal_sampler.py beside main.py, settings as constants at the top of main.py)."
        )
    return INSTALL_HINT
