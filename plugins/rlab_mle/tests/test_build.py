"""The built-in data in mle-bench's layout and the framework-held validation split."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from rlab_mle import build
from rlab_mle.benchmark import MleBenchmark
from rlab_mle.options import MleOptions

from rlab_core.api import ConfigError


def test_builtin_is_generated_in_the_prepared_layout(prepare) -> None:
    task = prepare("wdbc-breast-cancer")
    competition = task.competition
    public, private = competition.public_dir, competition.private_dir
    assert sorted(p.name for p in public.iterdir()) == [
        "description.md", "sample_submission.csv", "test.csv", "train.csv",
    ]  # fmt: skip
    assert [p.name for p in private.iterdir()] == ["test.csv"]
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    answers, sample = (
        pd.read_csv(private / "test.csv"),
        pd.read_csv(public / "sample_submission.csv"),
    )
    assert (len(train), len(test)) == (455, 114)  # 569 rows, 20 % test as mle-bench prepares
    assert "malignant" not in test.columns and list(sample.columns) == ["id", "malignant"]
    assert list(answers["id"]) == list(sample["id"]) == list(test["id"])
    assert set(answers["malignant"]) == {0, 1} and not set(train["id"]) & set(test["id"])
    assert (public / "description.md").read_text().startswith("# Breast Cancer Wisconsin")


def test_task_folder_holds_the_split_and_hides_the_answers(prepare) -> None:
    task = prepare("wdbc-breast-cancer")
    public = task.data_dir
    names = sorted(p.name for p in public.iterdir())
    assert names == [
        "competition.json", "description.md", "sample_submission.csv", "test.csv",
        "train.csv", "val.csv", "val_sample_submission.csv",
    ]  # fmt: skip
    for name in ("train.csv", "val.csv", "val_sample_submission.csv", "competition.json"):
        assert not os.access(public / name, os.W_OK) or os.geteuid() == 0
        assert (public / name).stat().st_mode & 0o222 == 0
    train, val = pd.read_csv(public / "train.csv"), pd.read_csv(public / "val.csv")
    original = pd.read_csv(task.competition.public_dir / "train.csv")
    assert "malignant" not in val.columns and list(val.columns) == list(
        pd.read_csv(public / "test.csv").columns
    )
    assert set(train["id"]) | set(val["id"]) == set(original["id"])
    assert not set(train["id"]) & set(val["id"]) and len(val) == 91
    answers = pd.read_csv(task.private / "val_answers.csv")
    assert list(answers["id"]) == list(val["id"])
    truth = original.set_index("id").loc[val["id"], "malignant"].to_numpy()
    assert list(answers["malignant"]) == list(truth)
    # stratified: the validation rate of malignant is the train rate, to a row
    assert abs(answers["malignant"].mean() - original["malignant"].mean()) < 1.5 / len(val)
    info = json.loads((public / "competition.json").read_text())
    assert info["id_column"] == "id" and info["target_columns"] == ["malignant"]
    assert info["prediction"] == "probability" and info["higher_is_better"] is True
    assert task.private not in [public, *public.parents]


def test_cache_is_reused_and_rebuilt_when_stale(user_benchmark, rlab_cache_home, capfd) -> None:
    root = rlab_cache_home / "mle"
    first = user_benchmark.prepare("wine-cultivar", root)
    stamp = (first.data_dir / "train.csv").stat().st_mtime_ns
    again = user_benchmark.prepare("wine-cultivar", root)
    assert (again.data_dir / "train.csv").stat().st_mtime_ns == stamp
    other = MleBenchmark(user_benchmark.config.model_copy(update={"split_seed": 1}))
    moved = other.prepare("wine-cultivar", root)
    assert moved.root != first.root  # other settings, another folder
    sample = first.competition.sample_submission
    os.utime(sample, ns=(stamp, stamp + 10**9))  # the competition's files changed
    user_benchmark.prepare("wine-cultivar", root)
    assert (
        "rebuilding mle:wine-cultivar (the competition's files changed)" in capfd.readouterr().err
    )


def test_multiclass_labels_and_strata(prepare) -> None:
    task = prepare("wine-cultivar")
    info = json.loads((task.data_dir / "competition.json").read_text())
    assert info["prediction"] == "label" and info["target_columns"] == ["cultivar"]
    answers = pd.read_csv(task.private / "val_answers.csv")
    train = pd.read_csv(task.data_dir / "train.csv")
    for cultivar in ("barolo", "grignolino", "barbera"):  # every class on both sides
        assert (answers["cultivar"] == cultivar).any() and (train["cultivar"] == cultivar).any()


def test_rows_sharing_a_plane_stay_on_one_side(prepare) -> None:
    task = prepare("flights-late-by-plane")
    assert task.facts["split"]["group_column"] == "tailnum"  # found: test planes are unseen
    train = pd.read_csv(task.data_dir / "train.csv")
    val = pd.read_csv(task.data_dir / "val.csv")
    assert not set(train["tailnum"]) & set(val["tailnum"])
    assert 0.1 < len(val) / (len(train) + len(val)) < 0.35


def test_digits_submission_one_hot_encodes_the_label(prepare) -> None:
    task = prepare("uci-handwritten-digits")
    info = task.facts
    assert info["label_column"] == "label" and info["target_columns"] == [str(d) for d in range(10)]
    answers = pd.read_csv(task.private / "val_answers.csv")
    assert list(answers.columns) == ["id", *info["target_columns"]]
    assert (answers.drop(columns="id").sum(axis=1) == 1).all()


def copy_competition(user_folders: dict[str, Path], tmp_path: Path, cid: str) -> tuple[Path, Path]:
    definitions, data = tmp_path / "competitions", tmp_path / "data"
    shutil.copytree(user_folders["definitions"] / cid, definitions / cid)
    shutil.copytree(user_folders["data"] / cid, data / cid)
    return definitions, data


def test_answers_that_do_not_match_the_public_test(user_folders, tmp_path) -> None:
    definitions, data = copy_competition(user_folders, tmp_path, "wine-cultivar")
    bench = MleBenchmark(MleOptions(data_dir=data, competitions_dir=definitions))
    answers = data / "wine-cultivar" / "prepared" / "private" / "test.csv"
    frame = pd.read_csv(answers)
    frame.iloc[1:].to_csv(answers, index=False)
    with pytest.raises(
        ConfigError,
        match=r"do not match its public test: 0 answer ids .* 1 sample ids have no answer",
    ):
        bench.prepare("wine-cultivar", tmp_path / "cache")
    frame.drop(columns="cultivar").to_csv(answers, index=False)
    with pytest.raises(ConfigError, match=r"lack the target columns \['cultivar'\]"):
        bench.prepare("wine-cultivar", tmp_path / "cache")
    frame.rename(columns={"id": "key"}).to_csv(answers, index=False)
    with pytest.raises(ConfigError, match=r"have no 'id' column"):
        bench.prepare("wine-cultivar", tmp_path / "cache")


def test_train_without_the_targets_is_refused(user_folders, tmp_path) -> None:
    definitions, data = copy_competition(user_folders, tmp_path, "wine-cultivar")
    train = data / "wine-cultivar" / "prepared" / "public" / "train.csv"
    pd.read_csv(train).drop(columns="cultivar").to_csv(train, index=False)
    bench = MleBenchmark(MleOptions(data_dir=data, competitions_dir=definitions))
    with pytest.raises(ConfigError, match="Cannot hold out validation rows for wine-cultivar"):
        bench.prepare("wine-cultivar", tmp_path / "cache")


def test_unknown_grader_fails_before_building(user_folders, tmp_path) -> None:
    definitions, data = copy_competition(user_folders, tmp_path, "wine-cultivar")
    config = definitions / "wine-cultivar" / "config.yaml"
    config.write_text(config.read_text().replace("name: accuracy", "name: levenshtein-distance"))
    bench = MleBenchmark(MleOptions(data_dir=data, competitions_dir=definitions))
    with pytest.raises(ConfigError, match="no grader named 'levenshtein-distance'"):
        bench.prepare("wine-cultivar", tmp_path / "cache")
    assert not (tmp_path / "cache" / "tasks").exists() or not any(
        (tmp_path / "cache" / "tasks").iterdir()
    )


def test_stale_reason_names_the_change(prepare) -> None:
    task = prepare("wdbc-breast-cancer")
    options = MleOptions()
    assert build.stale_reason(task.root, task.competition, options) is None
    changed = options.model_copy(update={"val_fraction": 0.3})
    assert build.stale_reason(task.root, task.competition, changed) == "split settings changed"
