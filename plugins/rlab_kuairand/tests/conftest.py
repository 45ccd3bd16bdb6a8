"""Shared fixtures: a small synthetic sample in a temporary rlab cache, a fake real folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from rlab_kuairand import schema
from rlab_kuairand.benchmark import KuaiRandBenchmark
from rlab_kuairand.options import KuaiRandOptions
from rlab_kuairand.task import KuaiRandTask

from rlab_core.api import LocalSandbox, LocalSandboxConfig, cache_home
from rlab_core.testing.fixtures import (  # noqa: F401  (autouse: each test's own base)
    isolated_knowledge_base,
    module_knowledge_base,
)

SMALL = {"sample_users": 250, "sample_videos": 700}


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(tmp_path_factory.mktemp("rlab-cache")))
        patch.delenv("RLAB_KUAIRAND_DIR", raising=False)
        yield cache_home() / "kuairand"


@pytest.fixture(scope="module")
def benchmark() -> KuaiRandBenchmark:
    return KuaiRandBenchmark(KuaiRandOptions(**SMALL))


@pytest.fixture(scope="module")
def task(benchmark: KuaiRandBenchmark, cache_root: Path) -> KuaiRandTask:
    prepared = benchmark.prepare("sample", cache_root)
    assert isinstance(prepared, KuaiRandTask)
    return prepared


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    """The local sandbox, as ``rlab run`` uses by default."""
    return LocalSandbox(LocalSandboxConfig())


def log_row(user: int, video: int, date: int, long_view: int, tab: int = 1) -> dict[str, int]:
    """One log row in the real column order; outcomes follow ``long_view``."""
    row = dict.fromkeys(schema.LOG_COLUMNS, 0)
    row.update(user_id=user, video_id=video, date=date, hourmin=1230, time_ms=1649390000000)
    row.update(long_view=long_view, duration_ms=9000, play_time_ms=9500 if long_view else 100)
    row["tab"] = tab
    return row


def write_fake_real_folder(folder: Path, variant: str = "pure") -> dict[str, list[tuple[int, int]]]:
    """Tiny files in the real format; returns the expected (user, video) rows per split."""
    folder.mkdir(parents=True, exist_ok=True)
    first = [
        log_row(3, 30, 20220407, 1),  # before the task: dropped
        log_row(2, 21, 20220408, 1),
        log_row(1, 10, 20220421, 0),
        log_row(2, 21, 20220409, 0),  # a repeated pair, out of date order: kept in file order
    ]
    second = [
        log_row(1, 11, 20220428, 1),
        log_row(2, 20, 20220422, 0),
        log_row(1, 12, 20220429, 1),
        log_row(2, 21, 20220508, 0),
        log_row(1, 12, 20220501, 0),
        log_row(3, 31, 20220509, 1),  # after the task: dropped
    ]
    names = schema.standard_logs(variant)
    pd.DataFrame(first)[schema.LOG_COLUMNS].to_csv(folder / names[0], index=False)
    pd.DataFrame(second)[schema.LOG_COLUMNS].to_csv(folder / names[1], index=False)
    features = schema.feature_files(variant)
    users = pd.DataFrame(
        {c: [1, 2, 3] if c == "user_id" else [0, 0, 0] for c in schema.USER_COLUMNS}
    )
    users.to_csv(folder / features["user_features.csv"], index=False)
    videos = pd.DataFrame(
        {
            c: [10, 11, 12, 20, 21, 30, 31] if c == "video_id" else [1] * 7
            for c in schema.VIDEO_BASIC_COLUMNS
        }
    )
    videos.to_csv(folder / features["video_features_basic.csv"], index=False)
    stats = pd.DataFrame(
        {
            c: [10, 11, 12, 20, 21, 30, 31] if c == "video_id" else [1.0] * 7
            for c in schema.VIDEO_STAT_COLUMNS
        }
    )
    stats.to_csv(folder / features["video_features_statistic.csv"], index=False)
    return {
        "train": [(2, 21), (1, 10), (2, 21)],
        "val": [(1, 11), (2, 20)],
        "test": [(1, 12), (2, 21), (1, 12)],
    }


@pytest.fixture
def fake_real_folder():
    """``write_fake_real_folder`` as a fixture (test modules cannot import conftest)."""
    return write_fake_real_folder
