"""Tests of the GNN seed (``seeds/gnn``): real runs of its ``main.py``, its offer, its moves.

The seed runs as a subprocess, as the sandbox starts it, on a user's own small RelBench
folder (one task per task type, built here, prepared through the plugin's local-folder
path) and on rel-flights in ``--debug``; the prediction files must pass the contract and
score better than a constant. Whether the seed is offered follows ``find_spec`` of the
``gnn`` extra's modules; the moves must apply to the seed and to nothing else.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytest.importorskip("torch_geometric")
pytest.importorskip("torch_frame")

from rlab_relbench import build, gnn, sources
from rlab_relbench.benchmark import SEEDS, RelBenchBenchmark, RelBenchTask
from rlab_relbench.gnn_playbook import gnn_moves
from rlab_relbench.options import RelBenchOptions

from rlab_core.api import EditError, apply_edits, read_source

VAL, TEST = "2020-09-01", "2020-11-01"
WINDOW = """FROM timestamps t JOIN events e
  ON e.time > t.timestamp AND e.time <= t.timestamp + INTERVAL '{timedelta}'
GROUP BY t.timestamp, e.user_id"""
TASKS = {
    "big-spender": {
        "task_type": "binary_classification",
        "target_col": "big",
        "sql": "SELECT t.timestamp AS timestamp, e.user_id AS user_id, "
        "CAST(MAX(CASE WHEN e.amount > 8 THEN 1 ELSE 0 END) AS BIGINT) AS big " + WINDOW,
    },
    "spend": {
        "task_type": "regression",
        "target_col": "spend",
        "sql": "SELECT t.timestamp AS timestamp, e.user_id AS user_id, "
        "SUM(e.amount) AS spend " + WINDOW,
    },
    "user-item": {
        "task_type": "recommendation",
        "sql": "SELECT t.timestamp AS timestamp, e.user_id AS user_id, "
        "LIST(DISTINCT e.item_id) AS item_id " + WINDOW,
    },
}


def make_shop(root: Path, users: int = 150, events: int = 12000) -> Path:
    """A user's own RelBench folder: users, items, events (2020), one task per task type.

    A user's spending level and favourite items are fixed, so each label is predictable
    from the user's past events.
    """
    rng = np.random.default_rng(0)
    (root / "db").mkdir(parents=True)
    pd.DataFrame(
        {
            "user_id": range(users),
            "age": rng.integers(18, 80, users),
            "tier": rng.choice(["a", "b"], users),
        }
    ).to_parquet(root / "db" / "users.parquet")
    pd.DataFrame({"item_id": range(30), "price": rng.random(30)}).to_parquet(
        root / "db" / "items.parquet"
    )
    times = np.sort(
        pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24, events), unit="h")
    )
    user = rng.integers(0, users, events)
    pd.DataFrame(
        {
            "event_id": range(events),
            "time": times,
            "user_id": user,
            "item_id": (user + rng.integers(0, 3, events)) % 30,
            "amount": rng.gamma(2.0, 0.5 + user / users * 5, events),
        }
    ).to_parquet(root / "db" / "events.parquet")
    tables = {
        "users": {"pkey": "user_id", "time_col": None, "fkeys": {}},
        "items": {"pkey": "item_id", "time_col": None, "fkeys": {}},
        "events": {
            "pkey": "event_id",
            "time_col": "time",
            "fkeys": {"user_id": "users", "item_id": "items"},
        },
    }
    manifest = {"name": "my-shop", "val_timestamp": VAL, "test_timestamp": TEST, "tables": tables}
    (root / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    for name, spec in TASKS.items():
        task = {
            "name": name,
            "kind": "forecast",
            "description": f"{name} of each user in the next 14 days.",
            "time_col": "timestamp",
            "timedelta": "14 days",
            "num_eval_timestamps": 2,
            **spec,
        }
        if spec["task_type"] == "recommendation":
            task |= {
                "src_entity_table": "users",
                "src_entity_col": "user_id",
                "dst_entity_table": "items",
                "dst_entity_col": "item_id",
                "eval_k": 5,
                "num_eval_timestamps": 1,
            }
        else:
            task |= {"entity_table": "users", "entity_col": "user_id"}
        (root / "tasks" / name).mkdir(parents=True)
        (root / "tasks" / name / "manifest.yaml").write_text(yaml.safe_dump(task))
    return root


def prepare(spec: str, cache: Path) -> RelBenchTask:
    """The prepared task of ``spec``, its cache built in this process."""
    source = sources.resolve(spec, cache)
    build.build(source.folder, source.task, cache / "prepared" / source.key, source.dataset)
    return RelBenchBenchmark(RelBenchOptions()).prepare(spec, cache)


def run_seed(task: RelBenchTask, work: Path, *args: str) -> tuple[Path, float, str]:
    """Run a copy of the GNN seed's main.py on ``task`` as the sandbox would; (outputs, s, log)."""
    src = work / "src"
    shutil.copytree(gnn.SEED_DIR, src, ignore=shutil.ignore_patterns("__pycache__"))
    out, cache = work / "out", work / "cache"
    out.mkdir()
    cache.mkdir()
    env = {
        **os.environ,
        "RLAB_DATA_DIR": str(task.data_dir),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(cache),
        "RLAB_THREADS": "2",
        "RLAB_SEED": "0",
        "RLAB_STAGE": "full",
        "PYTHONWARNINGS": "ignore",
    }
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-4000:]
    return out, wall, done.stdout


def constant_score(task: RelBenchTask) -> float:
    """The validation score of a constant prediction: base rate, train mean, most popular.

    Regression compares with the train mean: on this small folder the seed's three epochs
    (15 steps) reach the train median's NMAE but not below it."""
    train = pd.read_parquet(task.data_dir / "train.parquet")
    rows = task.facts["counts"]["val"]
    if task.kind == "recommendation":
        column, k = task.spec["dst_entity_col"], int(task.spec["eval_k"])
        popular = train[column].explode().value_counts().index[:k].astype(np.int64)
        pred = np.tile(np.asarray(popular), (rows, 1))
    elif task.kind == "regression":
        pred = np.full(rows, float(train[task.spec["target_col"]].mean()))
    else:
        pred = np.full(rows, float(train[task.spec["target_col"]].mean()))
    return task.evaluate(pred, "val")[task.primary_metric]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = tmp_path_factory.mktemp("gnn")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(root / "rlab-cache"))
        patch.setenv("HF_HUB_OFFLINE", "1")
        db = make_shop(root / "my-shop")
        yield {"root": root, "db": db, "cache": root / "rlab-cache" / "relbench"}


@pytest.mark.parametrize("name", list(TASKS))
def test_gnn_seed_runs_on_a_users_own_folder_and_beats_a_constant(shop, name, tmp_path) -> None:
    task = prepare(str(shop["db"] / "tasks" / name), shop["cache"])
    assert "gnn" in [seed.name for seed in task.seed_candidates()]
    out, _wall, log = run_seed(task, tmp_path)
    for split in ("val", "test"):
        assert task.validate_outputs(out, split) == [], log
    score = task.score(out, "val").primary
    constant = constant_score(task)
    better = score > constant if task.higher_is_better else score < constant
    assert better, f"{name}: GNN {score:.4f} vs constant {constant:.4f}\n{log}"
    assert "epoch 2:" in log  # the full stage trains every epoch


def test_gnn_seed_debug_on_rel_flights_fits_the_smoke_limit(shop, tmp_path) -> None:
    task = prepare("rel-flights/plane-delay", shop["cache"])
    out, wall, log = run_seed(task, tmp_path, "--debug")
    assert task.validate_outputs(out, "val") == [] and task.validate_outputs(out, "test") == []
    assert "GNN on 300 train rows" in log
    assert wall < task.limits.smoke_timeout_s, f"--debug took {wall:.0f} s"


def test_offered_iff_the_gnn_extra_imports(shop, monkeypatch) -> None:
    task = prepare(str(shop["db"] / "tasks" / "big-spender"), shop["cache"])
    assert gnn.available()
    assert [s.name for s in task.seed_candidates()][-1] == "gnn"
    assert any(m.id.startswith("gnn-") for m in task.playbook())
    assert gnn.INSTALL_HINT not in task.context()

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch_geometric" else real(name, *a),
    )
    assert not gnn.available()
    assert "gnn" not in [s.name for s in task.seed_candidates()]
    assert len(task.seed_candidates()) == 2  # the LightGBM seeds, as without the extra
    assert not any(m.id.startswith("gnn-") for m in task.playbook())
    assert gnn.INSTALL_HINT in task.context()
    assert "uv pip install 'rlab-relbench[gnn]'" in gnn.INSTALL_HINT
    listing = RelBenchBenchmark(RelBenchOptions()).list_tasks()
    flights_notes = [t.note for t in listing if t.name.startswith("relbench:rel-flights/")]
    assert flights_notes and all(gnn.INSTALL_HINT in note for note in flights_notes if note)


@pytest.mark.parametrize("task_type", ["binary_classification", "regression", "recommendation"])
def test_gnn_moves_apply_compose_and_skip_other_seeds(task_type) -> None:
    moves = gnn_moves(task_type)
    assert len(moves) >= 6 and len({m.id for m in moves}) == len(moves)
    source = read_source(gnn.SEED_DIR)
    for move in moves:
        changed = apply_edits(source, move.edits, ("*.py",))  # each applies on its own
        compile(changed["main.py"], "main.py", "exec")
    for move in sorted(moves, key=lambda m: m.rank):
        source = apply_edits(source, move.edits, ("*.py",))  # and all compose
    compile(source["main.py"], "main.py", "exec")
    for other in ("entity_sql_lgbm", "entity_only_lgbm", "rec_repeat_rank"):
        lgbm = read_source(SEEDS / other)
        for move in moves:
            with pytest.raises(EditError):
                apply_edits(lgbm, move.edits, ("*.py",))


def test_gnn_moves_change_what_the_seed_computes() -> None:
    """Each move's line runs after the defaults and changes a setting the seed reads."""
    source = read_source(gnn.SEED_DIR)["main.py"]
    head, _, _ = source.partition("\ntorch.set_num_threads")
    prelude = head.split("KIND = TASK", 1)[1].split("\n", 1)[1]  # the settings block
    task = {"task_type": "recommendation", "src_entity_table": "users", "entity_table": "users"}

    def settings(text: str) -> dict:
        scope = {"TASK": task, "STAGE": "full", "DEBUG": False}
        exec(text, scope)
        return {k: v for k, v in scope.items() if k.isupper() and k not in ("TASK", "STAGE")}

    base = settings(prelude)
    assert base["NUM_NEIGHBORS"] == [128, 64] and base["AGGR"] == "sum" and base["LR"] == 0.005
    for move in gnn_moves("recommendation"):
        edit = move.edits[0]
        changed = settings(prelude.replace(edit.anchor, edit.replacement))
        assert changed != base, move.id
    deep = gnn_moves("regression")
    depth = next(m for m in deep if m.id == "gnn-depth-3").edits[0]
    assert settings(prelude.replace(depth.anchor, depth.replacement))["NUM_NEIGHBORS"] == [
        64,
        32,
        16,
    ]
