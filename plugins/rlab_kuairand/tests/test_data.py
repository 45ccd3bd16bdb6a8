"""The organizers' split on a tiny real-format folder, the sample build, finding real data."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rlab_kuairand import sample, schema, source
from rlab_kuairand.benchmark import KuaiRandBenchmark
from rlab_kuairand.options import KuaiRandOptions
from rlab_kuairand.task import KuaiRandTask

from rlab_core.api import DataUnavailableError, UnknownNameError
from rlab_core.testing import run_candidate


def _pairs(frame: pd.DataFrame) -> list[tuple[int, int]]:
    return list(zip(frame["user_id"].tolist(), frame["video_id"].tolist(), strict=True))


def test_split_keeps_file_order_filters_dates_and_numbers_rows(
    tmp_path: Path, fake_real_folder
) -> None:
    expected = fake_real_folder(tmp_path / "real")
    bench = KuaiRandBenchmark(KuaiRandOptions(data_dir=tmp_path / "real", download=False))
    task = bench.prepare("pure", tmp_path / "cache")
    assert task.name == "kuairand:pure" and not task.synthetic
    for split in ("train", "val", "test"):
        frame = pd.read_csv(task.data_dir / f"{split}.csv")
        assert _pairs(frame) == expected[split], split
        assert frame["row_id"].tolist() == list(range(len(expected[split])))
    keys = np.load(task.private / "test_keys.npz")
    assert keys["label"].tolist() == [1, 0, 0]
    assert task.reference_baselines()["FM (official)"] == pytest.approx(0.6016)


def test_env_var_points_at_a_nested_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_real_folder
) -> None:
    fake_real_folder(tmp_path / "KuaiRand-1K" / "data", variant="1k")
    monkeypatch.setenv(source.ENV_VAR, str(tmp_path))
    bench = KuaiRandBenchmark(KuaiRandOptions(download=False))
    assert [t.available for t in bench.list_tasks()] == [False, True, True]
    task = bench.prepare("1k", tmp_path / "cache")
    assert len(pd.read_csv(task.data_dir / "val.csv")) == 2


@pytest.mark.parametrize("variant", ["pure", "1k"])
def test_a_folder_with_the_real_file_names_runs_end_to_end(
    variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox
) -> None:
    # the sample generator writes small files under the real names, columns and dtypes
    folder = tmp_path / "unpacked" / f"KuaiRand-{variant}" / "data"
    sample.generate(folder, 60, 200, seed=11, variant=variant)
    if variant == "pure":  # the option ...
        options = KuaiRandOptions(data_dir=tmp_path / "unpacked", download=False)
    else:  # ... and the environment variable
        monkeypatch.setenv(source.ENV_VAR, str(tmp_path / "unpacked"))
        options = KuaiRandOptions(download=False)
    task = KuaiRandBenchmark(options).prepare(variant, tmp_path / "cache")
    assert task.name == f"kuairand:{variant}" and not task.synthetic
    assert task.raw_dir == folder and task.raw_dir in task.hidden_paths()
    logs = pd.concat([pd.read_csv(folder / name) for name in schema.standard_logs(variant)])
    for split, (first, last) in schema.SPLITS.items():
        expected = logs[(logs["date"] >= first) & (logs["date"] <= last)]
        assert task.facts["counts"][split] == len(expected) > 0, split
    popularity = next(s for s in task.seed_candidates() if s.name == "popularity")
    execution, out = run_candidate(task, popularity.path, sandbox, tmp_path / "run")
    assert execution.ok, execution.log_tail
    assert 0.5 < task.score(out, "val").primary < 1.0
    path = task.write_submission(out, out, tmp_path)
    frame = pd.read_csv(path)
    assert len(frame) == task.facts["counts"]["test"] and np.isfinite(frame["score"]).all()


def test_a_folder_without_the_files_names_what_is_missing(tmp_path: Path, fake_real_folder) -> None:
    fake_real_folder(tmp_path / "real")
    (tmp_path / "real" / "user_features_pure.csv").unlink()
    bench = KuaiRandBenchmark(KuaiRandOptions(data_dir=tmp_path / "real", download=False))
    with pytest.raises(DataUnavailableError, match=r"lacks user_features_pure\.csv"):
        bench.prepare("pure", tmp_path / "cache")


def test_offline_without_data_is_one_sentence_with_the_way_out(tmp_path: Path) -> None:
    bench = KuaiRandBenchmark(KuaiRandOptions(download=False))
    with pytest.raises(DataUnavailableError) as caught:
        bench.prepare("pure", tmp_path / "cache")
    message = str(caught.value)
    for fragment in (
        "10439422",
        "KuaiRand-Pure.tar.gz",
        *schema.expected_files("pure"),
        "RLAB_KUAIRAND_DIR",
        "benchmark.data_dir",
    ):
        assert fragment in message
    assert message.count(". ") == 0 and message.endswith(".")


def test_download_offline_is_the_same_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args, **kwargs):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(source.urllib.request, "urlopen", no_network)
    with pytest.raises(DataUnavailableError, match=r"offline: .*no route to host.*10439422"):
        KuaiRandBenchmark(KuaiRandOptions()).prepare("1k", tmp_path / "cache")


def _archive(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname="KuaiRand-Pure/data")
    return buffer.getvalue()


@pytest.mark.parametrize("good_checksum", [True, False])
def test_download_verifies_the_record_checksum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good_checksum: bool, fake_real_folder
) -> None:
    fake_real_folder(tmp_path / "real")
    payload = _archive(tmp_path / "real")
    md5 = hashlib.md5(payload).hexdigest() if good_checksum else "0" * 32
    record = {"files": [{"key": "KuaiRand-Pure.tar.gz", "checksum": f"md5:{md5}"}]}

    def fake_urlopen(url: str, timeout: float = 0):
        assert "zenodo.org" in url and "10439422" in url
        return io.BytesIO(json.dumps(record).encode() if "/api/" in url else payload)

    monkeypatch.setattr(source.urllib.request, "urlopen", fake_urlopen)
    bench = KuaiRandBenchmark(KuaiRandOptions())
    if good_checksum:
        task = bench.prepare("pure", tmp_path / "cache")
        assert len(pd.read_csv(task.data_dir / "train.csv")) == 3
        assert (tmp_path / "cache" / "download-pure" / "unpacked" / "KuaiRand-Pure").is_dir()
    else:
        with pytest.raises(DataUnavailableError, match="failed its MD5 check"):
            bench.prepare("pure", tmp_path / "cache")


def test_unknown_task_lists_the_tasks(benchmark: KuaiRandBenchmark, cache_root: Path) -> None:
    with pytest.raises(UnknownNameError, match="kuairand:pure, kuairand:1k, kuairand:sample"):
        benchmark.prepare("27k", cache_root)


def test_sample_has_the_real_files_columns_and_dates(task: KuaiRandTask) -> None:
    raw = task.raw_dir
    for name in [*schema.expected_files("pure"), schema.random_log("pure")]:
        assert (raw / name).is_file(), name
    first, second = (pd.read_csv(raw / n) for n in schema.standard_logs("pure"))
    assert list(first.columns) == schema.LOG_COLUMNS
    assert all(first[c].dtype == np.int64 for c in schema.LOG_COLUMNS)
    assert (first["date"].min(), first["date"].max()) == (20220408, 20220421)
    assert (second["date"].min(), second["date"].max()) == (20220422, 20220508)
    rand = pd.read_csv(raw / schema.random_log("pure"))
    assert set(rand["is_rand"]) == {1} and rand["date"].min() >= 20220422
    assert list(pd.read_csv(raw / "user_features_pure.csv").columns) == schema.USER_COLUMNS
    assert (
        list(pd.read_csv(raw / "video_features_basic_pure.csv").columns)
        == schema.VIDEO_BASIC_COLUMNS
    )
    logs = pd.concat([first, second])
    # long_view is derived from play time exactly as in the real logs
    short = logs["duration_ms"] <= 18000
    rule = np.where(
        short, logs["play_time_ms"] >= logs["duration_ms"], logs["play_time_ms"] >= 18000
    )
    assert (logs["long_view"].to_numpy() == rule).all()
    # structure: skewed activity, power-law popularity, a few % repeated pairs, user-time order
    per_user = logs.groupby("user_id").size()
    assert per_user.max() > 4 * per_user.median()
    shows = logs["video_id"].value_counts()
    assert shows.iloc[: len(shows) // 10].sum() > 0.3 * len(logs)  # uniform would be 0.1
    assert shows.iloc[0] > 5 * shows.median()
    # about 3% at the default size; this small catalogue (700 videos) forces a few more
    assert 0.005 < logs.duplicated(["user_id", "video_id"]).mean() < 0.12
    assert logs["tab"].nunique() > 8
    assert (first.groupby("user_id")["time_ms"].diff().dropna() >= 0).all()


def test_outcome_columns_are_the_references_except_the_video_length() -> None:
    # KUAIRAND.md: "every column from is_click to is_profile_enter is an outcome"; duration_ms
    # lies in that range in file order but is the video's length (see schema.OUTCOME_COLUMNS)
    span = schema.LOG_COLUMNS[
        schema.LOG_COLUMNS.index("is_click") : schema.LOG_COLUMNS.index("is_profile_enter") + 1
    ]
    reference = [c for c in span if c != "duration_ms"]
    assert reference == schema.OUTCOME_COLUMNS
    assert schema.LABEL in schema.OUTCOME_COLUMNS and "play_time_ms" in schema.OUTCOME_COLUMNS
    assert schema.IMPRESSION_COLUMNS == [
        "user_id",
        "video_id",
        "date",
        "hourmin",
        "time_ms",
        "duration_ms",
        "is_rand",
        "tab",
    ]


def test_candidate_view_has_no_outcome_on_test_rows(task: KuaiRandTask) -> None:
    files = sorted(p.name for p in task.data_dir.iterdir())
    assert files == [
        "test.csv",
        "train.csv",
        "user_features.csv",
        "val.csv",
        "video_features_basic.csv",
        "video_features_statistic.csv",
    ]
    test_columns = list(pd.read_csv(task.data_dir / "test.csv", nrows=1).columns)
    assert test_columns == [
        "row_id",
        "user_id",
        "video_id",
        "date",
        "hourmin",
        "time_ms",
        "duration_ms",
        "is_rand",
        "tab",
    ]
    assert not set(test_columns) & set(schema.OUTCOME_COLUMNS)
    test = pd.read_csv(task.data_dir / "test.csv")
    keys = np.load(task.private / "test_keys.npz")
    assert len(test) == len(keys["label"]) and test["user_id"].tolist() == keys["user_id"].tolist()
    # duration_ms is the video's length: the same for every impression of a video
    assert (
        pd.read_csv(task.data_dir / "train.csv").groupby("video_id")["duration_ms"].nunique() == 1
    ).all()
    for split in ("train", "val"):
        assert list(pd.read_csv(task.data_dir / f"{split}.csv", nrows=1).columns) == [
            "row_id",
            *schema.LOG_COLUMNS,
        ]
    for path in task.data_dir.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) & 0o222 == 0, f"{path.name} is writable"
    hidden = task.hidden_paths()
    assert task.private in hidden and task.raw_dir in hidden
    assert all(task.data_dir.resolve() not in Path(h).resolve().parents for h in hidden)


def test_sample_says_it_is_synthetic_and_reuses_its_cache(
    benchmark: KuaiRandBenchmark, cache_root: Path, task: KuaiRandTask
) -> None:
    assert "SYNTHETIC DATA" in task.context()
    assert task.describe()["synthetic"] is True and "SYNTHETIC" in task.describe()["note"]
    assert task.reference_baselines() == {}
    assert "SYNTHETIC" in next(
        t.note for t in benchmark.list_tasks() if t.name == "kuairand:sample"
    )
    before = (task.root / "marker.json").stat().st_mtime_ns
    again = benchmark.prepare("sample", cache_root)
    assert again.root == task.root and (task.root / "marker.json").stat().st_mtime_ns == before
