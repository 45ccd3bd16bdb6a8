"""The prepared task: contract, scoring, the test grading, hiding, stages, seed and playbook."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from rlab_mle import competition_grading, registry
from rlab_mle.playbook import MOVES, moves_for
from rlab_mle.task import SEEDS

from rlab_core.api import (
    BudgetProgress,
    ContractError,
    LocalSandbox,
    LocalSandboxConfig,
    SandboxRequest,
    apply_edits,
    read_source,
    stage_by_progress,
    write_source,
)
from rlab_core.guard import audit_source, core_audit_patterns
from rlab_core.testing import check_benchmark, run_candidate

SANDBOX = LocalSandbox(LocalSandboxConfig())
SEED = SEEDS / "tabular_lgbm"


def test_conformance_kit_runs_and_scores_the_seed(user_benchmark, rlab_cache_home) -> None:
    task = check_benchmark(
        user_benchmark, "wdbc-breast-cancer", rlab_cache_home / "mle", sandbox=SANDBOX
    )
    assert task.primary_metric == "auc-roc" and task.smoke_run


def write_val(task, tmp_path: Path, change=None) -> Path:
    """A val_predictions.csv copied from the val sample, optionally broken by ``change``."""
    frame = pd.read_csv(task.data_dir / "val_sample_submission.csv")
    if change is not None:
        frame = change(frame)
    tmp_path.mkdir(parents=True, exist_ok=True)
    frame.to_csv(tmp_path / "val_predictions.csv", index=False)
    return tmp_path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (None, None),
        (
            lambda f: f.rename(columns={"late": "y"}),
            r"val_predictions\.csv has the columns \['id', 'y'\]",
        ),
        (lambda f: f.iloc[:-2], r"has \d+ rows, expected \d+"),
        (
            lambda f: f.assign(id=f["id"].where(f.index != 0, f["id"].iloc[1])),
            r"repeats 1 id values",
        ),
        (lambda f: f.assign(late=f["late"].where(f.index != 3)), r"column 'late' has 1 missing"),
        (lambda f: f.assign(late=f["late"] * 3), r"outside \[0, 1\]"),
    ],
)
def test_validation_contract_sentences(prepare, tmp_path, change, message) -> None:
    task = prepare("flights-late")
    folder = write_val(task, tmp_path / "out", change)
    problems = task.validate_outputs(folder, "val")
    if message is None:
        assert problems == [] and 0 <= task.score(folder, "val").primary <= 1
        return
    assert any(re.search(message, p) for p in problems), problems
    with pytest.raises(ContractError):
        task.score(folder, "val")
    assert task.validate_outputs(tmp_path / "nothing", "val") == [
        "val_predictions.csv is missing; write it into $RLAB_OUTPUT_DIR in the format of "
        "val_sample_submission.csv"
    ]


def test_test_grading_report_has_mle_bench_fields_and_medals(prepare, tmp_path) -> None:
    task = prepare("flights-late")  # its leaderboard: 20 teams, 0.80 down to 0.42
    answers = pd.read_csv(task.competition.answers)
    out = tmp_path / "private"
    out.mkdir()
    answers.to_csv(out / "submission.csv", index=False)  # the answers themselves: AUC 1
    score = task.score(out, "test")
    report = score.details["grading_report"]
    assert sorted(path.name for path in out.iterdir()) == ["submission.csv"]  # writes nothing
    assert list(report) == [
        "competition_id", "score", "gold_threshold", "silver_threshold", "bronze_threshold",
        "median_threshold", "any_medal", "gold_medal", "silver_medal", "bronze_medal",
        "above_median", "submission_exists", "valid_submission", "is_lower_better",
        "created_at", "submission_path",
    ]  # fmt: skip
    # n = 20 < 100: gold at position int(0.1 n) = 2, silver 4, bronze 8; median of the board
    assert (report["gold_threshold"], report["silver_threshold"], report["bronze_threshold"]) == (
        0.78,
        0.74,
        0.66,
    )
    assert report["median_threshold"] == pytest.approx(0.61)
    assert report["score"] == 1.0 and report["gold_medal"] and report["any_medal"]
    assert report["valid_submission"] and not report["is_lower_better"]
    assert score.primary == 1.0 and score.metrics["gold_medal"] == 1.0
    assert score.details["grading_report"] == report
    # a middling submission earns bronze; a malformed one is invalid, never scored
    mid = answers.assign(late=answers["late"] * 0.3 + (answers["id"] % 10) / 10 * 0.7)
    mid.to_csv(out / "submission.csv", index=False)
    graded = task.score(out, "test")
    value, report = graded.primary, graded.details["grading_report"]
    assert report["bronze_medal"] == (0.66 <= value < 0.74) and report["silver_medal"] == (
        0.74 <= value < 0.78
    )
    answers.iloc[:-1].to_csv(out / "submission.csv", index=False)
    with pytest.raises(ContractError, match=r"the test submission is invalid: .*rows"):
        task.score(out, "test")
    report, _ = competition_grading.grade_report(out / "submission.csv", task.competition)
    assert (
        report["score"] is None and not report["valid_submission"] and report["submission_exists"]
    )


def test_jail_hides_raw_package_data_and_answers(prepare, tmp_path) -> None:
    if SANDBOX.isolation_level() != "bubblewrap":
        pytest.skip(f"hidden paths need bubblewrap; isolation here is {SANDBOX.isolation_level()}")
    task = prepare("wdbc-breast-cancer")
    raw = registry.BUILTIN_RAW["wdbc-breast-cancer"]() / "breast_cancer.csv"
    hidden = task.hidden_paths()
    assert raw.parent in hidden and task.private in hidden and task.competition.root in hidden
    targets = {
        "raw": raw,
        "val_answers": task.private / "val_answers.csv",
        "test_answers": task.competition.answers,
        "train": task.data_dir / "train.csv",
    }
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
        f"paths = {json.dumps({k: str(v) for k, v in targets.items()})}\n"
        "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'spy.json').write_text("
        "json.dumps({k: attempt(v) for k, v in paths.items()}))\n"
        "from sklearn.datasets import load_breast_cancer\n"
        "load_breast_cancer()\n"
    )
    execution = SANDBOX.run(
        SandboxRequest(
            workdir=work,
            command=["python", "main.py"],
            env={
                "PATH": os.environ.get("PATH", ""),
                "RLAB_OUTPUT_DIR": str(out),
                "HOME": str(work),
            },
            data_dir=task.data_dir,
            output_dir=out,
            cache_dir=cache,
            log_path=tmp_path / "log.txt",
            hidden_paths=hidden,
            timeout_s=120,
            memory_mb=2048,
            max_output_mb=1,
        )
    )
    spy = json.loads((out / "spy.json").read_text())
    assert all(isinstance(spy[k], str) for k in ("raw", "val_answers", "test_answers")), spy
    assert isinstance(spy["train"], int) and spy["train"] > 0
    assert not execution.ok  # scikit-learn's loader finds no data to rebuild the answers from
    patterns = [*core_audit_patterns(hidden), *task.audit_patterns()]
    reasons = {
        f.reason for f in audit_source({"main.py": (work / "main.py").read_text()}, patterns)
    }
    assert "loads scikit-learn's bundled copy of a built-in competition's data" in reasons


def test_stages_follow_the_budget(prepare) -> None:
    task = prepare("wdbc-breast-cancer")  # a small train file: no mini stage (test_tunables)
    for used, stage in [(0, "full"), (3, "full"), (4, "full"), (7, "full"), (8, "ensemble")]:
        progress = BudgetProgress(iterations_used=used, iterations_max=10)
        assert task.stage_for(progress) == stage
        assert stage_by_progress(progress) == ("mini" if used < 4 else stage)


def test_every_move_applies_and_the_right_ones_are_offered(prepare) -> None:
    source = read_source(SEED)
    assert len(MOVES) >= 8
    for move in MOVES.values():
        changed = apply_edits(source, move.edits, ("*.py",))
        compile(changed["main.py"], "main.py", "exec")
    composed = source
    for move in sorted(MOVES.values(), key=lambda m: m.rank):
        composed = apply_edits(composed, move.edits, ("*.py",))
    compile(composed["main.py"], "main.py", "exec")
    offered = {m.id for m in prepare("flights-late").playbook()}
    assert {"target-encoding", "text-tfidf-svd", "count-encoding", "class-weights"} <= offered
    assert "log-target" not in offered
    regression = {
        m.id for m in moves_for({"prediction": "value", "feature_kinds": {"numeric": ["a"]}})
    }
    assert "log-target" in regression and "class-weights" not in regression


def run(task, files: dict[str, str], tmp: Path, **kwargs):
    src = tmp / "src"
    write_source(src, files, files)
    execution, out = run_candidate(task, src, SANDBOX, tmp / "run", **kwargs)
    assert execution.ok, execution.log_tail[-3000:]
    return out


def composed(task) -> dict[str, str]:
    source = read_source(SEED)
    for move in sorted(task.playbook(), key=lambda m: m.rank):
        source = apply_edits(source, move.edits, ("*.py",))
    return source


def test_all_moves_run_on_categorical_and_text_columns(prepare, tmp_path) -> None:
    task = prepare("flights-late")
    out = run(task, composed(task), tmp_path, timeout_s=240)
    assert task.validate_outputs(out, "val") == [] and task.validate_outputs(out, "test") == []
    assert 0.5 < task.score(out, "val").primary <= 1


def test_all_moves_run_on_a_regression(prepare, tmp_path) -> None:
    task = prepare("diabetes-progression")
    assert "log-target" in {m.id for m in task.playbook()}
    out = run(task, composed(task), tmp_path, timeout_s=240)
    value = task.score(out, "val").primary
    assert math.isfinite(value) and 0 < value < 1  # RMSLE of a sane model


def test_seed_predicts_labels_for_accuracy(prepare, tmp_path) -> None:
    task = prepare("wine-cultivar")
    out = run(task, read_source(SEED), tmp_path)
    predicted = pd.read_csv(out / "val_predictions.csv")
    assert set(predicted["cultivar"]) <= {"barolo", "grignolino", "barbera"}
    assert task.score(out, "val").primary > 0.8


def test_seed_ranks_labels_for_map_at_k(prepare, tmp_path) -> None:
    task = prepare("flights-dest")
    out = run(task, read_source(SEED), tmp_path)
    predicted = pd.read_csv(out / "val_predictions.csv")["dest"].str.split()
    assert (predicted.str.len() == 3).all()  # three destinations, best first
    assert 0.2 < task.score(out, "val").primary <= 1


def test_debug_smoke_run_is_fast(prepare, tmp_path) -> None:
    task = prepare("uci-handwritten-digits")
    work, out = tmp_path / "work", tmp_path / "out"
    write_source(work, read_source(SEED), ["main.py"])
    out.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RLAB_DATA_DIR": str(task.data_dir),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(out),
        "RLAB_STAGE": "full",
        "RLAB_THREADS": "1",
        "RLAB_NODE_ID": "n0001",
    }
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "main.py", "--debug"], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.perf_counter() - start < task.limits.smoke_timeout_s
    assert "stage debug" in done.stdout
    frame = pd.read_csv(out / "val_predictions.csv")  # one probability per digit, rows sum to 1
    assert list(frame.columns) == ["id", *[str(d) for d in range(10)]]
    assert (frame.drop(columns="id").sum(axis=1) - 1).abs().max() < 1e-6
    assert not (out / "predictions").exists()  # the smoke run caches nothing


def test_ensemble_stage_combines_cached_predictions(prepare, tmp_path) -> None:
    task = prepare("wdbc-breast-cancer")
    cache = tmp_path / "run" / "cache"
    val = pd.read_csv(task.data_dir / "val_sample_submission.csv")
    test = pd.read_csv(task.competition.sample_submission)
    for node, value in (("n0001", 0.2), ("n0002", 0.9)):
        folder = cache / "predictions" / node
        folder.mkdir(parents=True)
        val.assign(malignant=value).to_csv(folder / "val_predictions.csv", index=False)
        test.assign(malignant=value).to_csv(folder / "submission.csv", index=False)
    work, out = tmp_path / "work", tmp_path / "out"
    write_source(work, read_source(SEED), ["main.py"])
    out.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RLAB_DATA_DIR": str(task.data_dir),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(cache),
        "RLAB_STAGE": "ensemble",
        "RLAB_THREADS": "1",
        "RLAB_NODE_ID": "n0003",
        "RLAB_TOP_NODES": "n0002,n0009,n0001",
    }
    done = subprocess.run(
        [sys.executable, "main.py"], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ensemble of 3 prediction sets (this node and 2 cached)" in done.stdout
    own = pd.read_csv(cache / "predictions" / "n0003" / "val_predictions.csv")
    written = pd.read_csv(out / "val_predictions.csv")
    assert own.equals(written)  # the node caches what it wrote
    # rank-averaged for AUC: the constant caches tie every row, so the order is the seed's own
    assert written["malignant"].between(0, 1).all()
    assert task.score(out, "val").primary > 0.9


def test_a_forging_seed_gets_no_score_and_no_medal(prepare, user_folders, tmp_path) -> None:
    """Links to the validation answers and the test answers fail the seed: no gold medal."""
    from rlab_core.plugins import PluginHost
    from rlab_core.testing.forgery import check_forging_run

    task = prepare("wdbc-breast-cancer")
    links = {
        "val_predictions.csv": task.private / "val_answers.csv",
        "submission.csv": task.competition.answers,
    }
    assert all(Path(target).is_file() for target in links.values())
    outcome = check_forging_run(
        PluginHost(),
        "mle:wdbc-breast-cancer",
        links,
        tmp_path,
        benchmark_options={
            "data_dir": str(user_folders["data"]),
            "competitions_dir": str(user_folders["definitions"]),
        },
    )
    assert not outcome.run.best_dir.exists()
