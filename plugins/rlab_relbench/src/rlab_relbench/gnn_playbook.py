"""Moves for the GNN seed (``seeds/gnn``): settings its ``main.py`` reads.

A move that changes a structural setting adds one assignment under ``# GNN settings (one
line each)``, a marker only the GNN seed has; a move that sets a tunable value (a ``# tune:``
declaration: learning rate, width, fan-out, aggregation, head, epochs, decay) rewrites its
declaration line, as a tuning trial does, so it applies only while the line holds the
seed's value and never overrides a tuned one. No two moves set the same value, and the
derived fan-out list (``NUM_NEIGHBORS``) is computed below the marker, so the moves compose
in any order; none applies to another seed. The alternatives to a value move (``max``
aggregation, 32 channels, a wider fan-out) are left to tuning, whose ranges hold them.
"""

from __future__ import annotations

from typing import Any

from rlab_core.api import Edit, PlaybookMove
from rlab_relbench.playbook import declared_edits

SETTINGS = "# GNN settings (one line each)\n"
NEIGHBORS = "NUM_NEIGHBORS = [max(1, FANOUT // 2**hop) for hop in range(NUM_LAYERS)]\n"

#: (id, declared values to set, line under SETTINGS, hypothesis, rank): lower ranks first
_MOVES: list[tuple[str, dict[str, Any], str, str, int]] = [
    (
        "gnn-epochs-early-stop",
        {"EPOCHS": 6},
        "PATIENCE = 2",
        "Train twice as many epochs and stop after two without a validation gain: three "
        "epochs leave the GNN under-fit, and early stopping caps the cost.",
        10,
    ),
    (
        "gnn-shallow-entity",
        {},
        'SHALLOW_TABLES = [*SHALLOW_TABLES, TASK.get("src_entity_table") or TASK["entity_table"]]',
        "Give every entity (source) row its own learned id embedding (RelBench's shallow "
        "embeddings): each entity's habits persist beyond what its columns and sampled "
        "neighbours show.",
        20,
    ),
    (
        "gnn-more-rows",
        {},
        "STEPS_PER_EPOCH = 2 * STEPS_PER_EPOCH",
        "Train on twice as many label rows per epoch: the GNN sees each entity at more seed times.",
        30,
    ),
    (
        "gnn-aggr-mean",
        {"AGGR": "mean"},
        "",
        "Average neighbour messages instead of summing them: entities with many rows "
        "otherwise dominate by their degree.",
        40,
    ),
    (
        "gnn-lr-decay",
        {"LR_DECAY": 0.7},
        "",
        "Decay the learning rate by 0.7 per epoch: large late steps undo what early epochs learnt.",
        50,
    ),
    (
        "gnn-channels-128",
        {"CHANNELS": 128},
        "",
        "Use RelBench's 128 channels: a wider representation carries more of each neighbourhood.",
        60,
    ),
    (
        "gnn-fanout-narrow",
        {"FANOUT": 64},
        "",
        "Sample 64 then 32 neighbours per edge type: the most recent rows carry most signal "
        "and a narrower sample trains faster.",
        70,
    ),
    (
        "gnn-dropout",
        {"HEAD_LAYERS": 2, "DROPOUT": 0.3},
        "",
        "A two-layer head with dropout 0.3: the head memorises noisy weekly labels otherwise.",
        80,
    ),
]

#: A third hop at half the fan-out per hop, whatever FANOUT is: [64, 32, 16] at the seed's 128
_DEPTH_3 = Edit(
    file="main.py",
    anchor=NEIGHBORS,
    replacement="NUM_LAYERS = 3\n"
    "NUM_NEIGHBORS = [max(1, FANOUT // 2 ** (hop + 1)) for hop in range(NUM_LAYERS)]\n",
)


def gnn_moves(task_type: str) -> list[PlaybookMove]:
    """The GNN seed's moves, in the family of ``task_type``."""
    family = {"binary_classification": "classification"}.get(task_type, task_type)
    moves = []
    for move_id, values, line, hypothesis, rank in _MOVES:
        edits = declared_edits("gnn", values) if values else []
        if line:
            edits.append(Edit(file="main.py", anchor=SETTINGS, replacement=SETTINGS + line + "\n"))
        moves.append(
            PlaybookMove(
                id=move_id, hypothesis=hypothesis, edits=edits, family=family, rank=200 + rank
            )
        )
    moves.append(
        PlaybookMove(
            id="gnn-depth-3",
            hypothesis="Three GraphSAGE layers, each hop sampling half the fan-out (64, 32, 16 "
            "at the seed's 128): a third hop reaches related rows' own neighbours (e.g. other "
            "planes at the same airports, weather at the origins); the fan-out is halved so "
            "the third hop fits a candidate's time (at 128, 64, 32 it ran past 300 s on "
            "rel-flights on 2 CPU cores).",
            edits=[_DEPTH_3],
            family=family,
            rank=290,
        )
    )
    return moves
