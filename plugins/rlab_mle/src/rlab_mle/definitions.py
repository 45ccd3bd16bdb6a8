"""Competition definitions: mle-bench's ``config.yaml`` / ``description.md`` / ``leaderboard.csv``.

A definition folder is named by the competition id and holds the three files, as in
``mlebench/competitions/<id>/``. ``dataset.answers`` and ``dataset.sample_submission`` are
paths relative to the data folder, which holds ``<id>/prepared/public`` (what a
competitor sees) and ``<id>/prepared/private`` (the answers). An optional ``rlab:``
section may name ``train_file`` and ``group_column`` for the validation split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlab_core.api import ConfigError

#: The 22 competitions of MLE-bench Lite ("low complexity").
LITE_IDS = (
    "aerial-cactus-identification",
    "aptos2019-blindness-detection",
    "denoising-dirty-documents",
    "detecting-insults-in-social-commentary",
    "dog-breed-identification",
    "dogs-vs-cats-redux-kernels-edition",
    "histopathologic-cancer-detection",
    "jigsaw-toxic-comment-classification-challenge",
    "leaf-classification",
    "mlsp-2013-birds",
    "new-york-city-taxi-fare-prediction",
    "nomad2018-predict-transparent-conductors",
    "plant-pathology-2020-fgvc7",
    "random-acts-of-pizza",
    "ranzcr-clip-catheter-line-classification",
    "siim-isic-melanoma-classification",
    "spooky-author-identification",
    "tabular-playground-series-dec-2021",
    "tabular-playground-series-may-2022",
    "text-normalization-challenge-english-language",
    "text-normalization-challenge-russian-language",
    "the-icml-2013-whale-challenge-right-whale-redux",
)
REQUIRED = (
    "id",
    "name",
    "competition_type",
    "grader.name",
    "dataset.answers",
    "dataset.sample_submission",
)


@dataclass(frozen=True)
class Competition:
    """One competition: where its data lies, how it is graded, its leaderboard."""

    id: str
    name: str
    source: str  # "builtin", "folder" or "mlebench"
    grader_name: str
    description: str
    data_dir: Path
    answers: Path
    sample_submission: Path
    leaderboard: Path | None = None
    competition_type: str = "simple"
    definition_dir: Path | None = None
    preparer: str | None = None
    grade_fn_spec: str = ""
    grade_fn: Callable[..., Any] | None = field(default=None, compare=False)
    train_file: str | None = None
    group_column: str | None = None

    @property
    def root(self) -> Path:
        """``<data_dir>/<id>``: raw, prepared public and private data."""
        return self.data_dir / self.id

    @property
    def public_dir(self) -> Path:
        """What a competitor sees."""
        return self.root / "prepared" / "public"

    @property
    def private_dir(self) -> Path:
        """The answers; never shown to a candidate."""
        return self.root / "prepared" / "private"

    def is_prepared(self) -> bool:
        """True when the public folder, the sample submission and the answers exist."""
        return (
            self.public_dir.is_dir()
            and any(self.public_dir.iterdir())
            and self.sample_submission.is_file()
            and self.answers.is_file()
        )

    def prepare_command(self) -> str:
        """The exact mle-bench command that prepares this competition's data."""
        return f"mlebench prepare -c {self.id} --data-dir {self.data_dir}"


def _get(config: dict[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def read_config(path: Path) -> dict[str, Any]:
    """A competition's ``config.yaml``, checked for the fields mle-bench requires."""
    try:
        config = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"The competition folder {path.parent} has no config.yaml.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"The competition config {path} is not valid YAML ({exc}).") from None
    if not isinstance(config, dict):
        raise ConfigError(f"The competition config {path} is not a YAML mapping.")
    missing = [key for key in REQUIRED if _get(config, key) in (None, "")]
    if missing:
        raise ConfigError(
            f"The competition config {path} lacks {', '.join(missing)}; an mle-bench config names "
            f"{', '.join(REQUIRED)}."
        )
    if str(config["id"]) != path.parent.name:
        raise ConfigError(
            f"The competition config {path} has id '{config['id']}' but lies in a folder named "
            f"'{path.parent.name}'; the folder must be named by the id."
        )
    extras = config.get("rlab") or {}
    if not isinstance(extras, dict) or set(extras) - {"train_file", "group_column"}:
        raise ConfigError(
            f"The 'rlab' section of {path} may only name train_file and group_column."
        )
    return config


def _description(folder: Path, config: dict[str, Any]) -> str:
    local = folder / "description.md"
    if local.is_file():
        return local.read_text()
    named = config.get("description")
    if named:
        for candidate in (Path(named), folder / named, folder.parent / named):
            if candidate.is_file():
                return candidate.read_text()
    raise ConfigError(
        f"The competition folder {folder} has no description.md (nor the file its config names)."
    )


def load_definition(folder: Path, data_dir: Path, source: str) -> Competition:
    """The competition defined by ``folder`` with its data under ``data_dir``."""
    config = read_config(folder / "config.yaml")
    extras = config.get("rlab") or {}
    leaderboard = folder / "leaderboard.csv"
    return Competition(
        id=str(config["id"]),
        name=str(config["name"]),
        source=source,
        grader_name=str(_get(config, "grader.name")),
        description=_description(folder, config),
        data_dir=data_dir,
        answers=data_dir / str(_get(config, "dataset.answers")),
        sample_submission=data_dir / str(_get(config, "dataset.sample_submission")),
        leaderboard=leaderboard if leaderboard.is_file() else None,
        competition_type=str(config["competition_type"]),
        definition_dir=folder,
        preparer=config.get("preparer") if source == "builtin" else None,
        grade_fn_spec=str(_get(config, "grader.grade_fn") or ""),
        train_file=extras.get("train_file"),
        group_column=extras.get("group_column"),
    )


def definition_folders(root: Path) -> dict[str, Path]:
    """Competition id -> definition folder, for every ``<id>/config.yaml`` under ``root``."""
    if not root.is_dir():
        raise ConfigError(f"The competitions folder {root} does not exist.")
    return {p.parent.name: p.parent for p in sorted(root.glob("*/config.yaml"))}
