"""Moves for the GNN seed (``seeds/gnn``): one line each under its settings marker.

Each move adds one assignment under ``# GNN settings (one line each)``, a marker only the
GNN seed has, so the moves apply along the GNN seed's lineage and are skipped elsewhere;
the derived fan-out list (``NUM_NEIGHBORS``) is computed below the marker, so the lines
compose in any order.
"""

from __future__ import annotations

from rlab_core.api import PlaybookMove

SETTINGS = "# GNN settings (one line each)\n"

#: (id, line, hypothesis, rank): lower ranks are tried first
_MOVES = [
    (
        "gnn-epochs-early-stop",
        "EPOCHS = 2 * EPOCHS; PATIENCE = 2",
        "Train twice as many epochs and stop after two without a validation gain: three "
        "epochs leave the GNN under-fit, and early stopping caps the cost.",
        10,
    ),
    (
        "gnn-shallow-entity",
        'SHALLOW_TABLES = [*SHALLOW_TABLES, TASK.get("src_entity_table") or TASK["entity_table"]]',
        "Give every entity (source) row its own learned id embedding (RelBench's shallow "
        "embeddings): each entity's habits persist beyond what its columns and sampled "
        "neighbours show.",
        20,
    ),
    (
        "gnn-more-rows",
        "STEPS_PER_EPOCH = 2 * STEPS_PER_EPOCH",
        "Train on twice as many label rows per epoch: the GNN sees each entity at more seed times.",
        30,
    ),
    (
        "gnn-aggr-mean",
        'AGGR = "mean"',
        "Average neighbour messages instead of summing them: entities with many rows "
        "otherwise dominate by their degree.",
        40,
    ),
    (
        "gnn-lr-decay",
        "LR_DECAY = 0.7",
        "Decay the learning rate by 0.7 per epoch: large late steps undo what early epochs learnt.",
        50,
    ),
    (
        "gnn-channels-128",
        "CHANNELS = 128",
        "Use RelBench's 128 channels: a wider representation carries more of each neighbourhood.",
        60,
    ),
    (
        "gnn-fanout-narrow",
        "FANOUT = 64",
        "Sample 64 then 32 neighbours per edge type: the most recent rows carry most signal "
        "and a narrower sample trains faster.",
        70,
    ),
    (
        "gnn-dropout",
        "HEAD_LAYERS = 2; DROPOUT = 0.3",
        "A two-layer head with dropout 0.3: the head memorises noisy weekly labels otherwise.",
        80,
    ),
    (
        "gnn-depth-3",
        "NUM_LAYERS = 3; FANOUT = 64",
        "Three GraphSAGE layers (fan-out 64, 32, 16): a third hop reaches related rows' "
        "own neighbours (e.g. other planes at the same airports, weather at the origins); "
        "the fan-out is halved so the third hop fits a candidate's time (at 128, 64, 32 "
        "it ran past 300 s on rel-flights on 2 CPU cores).",
        90,
    ),
    (
        "gnn-aggr-max",
        'AGGR = "max"',
        "Take the maximum over neighbour messages: a single extreme event (a long delay) "
        "matters more than the average.",
        100,
    ),
    (
        "gnn-channels-32",
        "CHANNELS = 32",
        "Use 32 channels: a smaller model over-fits less on a few thousand entities.",
        110,
    ),
    (
        "gnn-fanout-wide",
        "FANOUT = 256",
        "Sample 256 then 128 neighbours per edge type: busy entities' full recent history "
        "does not fit in 128.",
        120,
    ),
]


def gnn_moves(task_type: str) -> list[PlaybookMove]:
    """The GNN seed's moves, in the family of ``task_type``."""
    family = {"binary_classification": "classification"}.get(task_type, task_type)
    return [
        PlaybookMove.adding_line(
            move_id, SETTINGS, line, hypothesis, rank=200 + rank, family=family
        )
        for move_id, line, hypothesis, rank in _MOVES
    ]
