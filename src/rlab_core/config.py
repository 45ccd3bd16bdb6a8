"""Run configuration, named modes and their precedence.

Precedence, highest first: command line (and its ``RLAB_*`` variables) > config file >
mode > plugin and core defaults. A mode is a named mapping of the same keys as a config
file; plugins ship modes through ``rlab_register_modes`` and users add their own as YAML
files in ``~/.config/rlab/modes/`` or ``$RLAB_MODES_DIR``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from rlab_core.errors import ConfigError, UnknownNameError
from rlab_core.plugins import PluginHost, validate_model

PLUGIN_SECTIONS = ("agent_options", "strategy_options", "sandbox_options", "benchmark_options")
#: Core option sections that ``-o SECTION.OPTION=VALUE`` sets by their own name.
CORE_SECTIONS = ("knowledge",)
#: Options of observer plugins, one mapping per observer: ``{"mlflow": {"enabled": true}}``.
OBSERVER_SECTION = "observer_options"
#: What a number option must be, where inf or nan would otherwise get pydantic's bare words.
_FINITE = {
    "time_budget_s": "a finite number of seconds greater than 0",
    "timeout_s": "a finite number of seconds greater than 0",
    "max_cost": "a finite amount in USD greater than 0",
    "max_output_mb": "a finite number of MiB greater than 0",
    "outputs_mb": "a finite number of MiB greater than 0",
    "target_val": "a finite number",
    "epsilon": "a finite number, 0 or more",
}


class KnowledgeSettings(BaseModel):
    """The knowledge base across runs (``-o knowledge.enabled=false``, ``--no-kg``)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=True, description="Agents see lessons of earlier runs and curated pages."
    )
    record: bool = Field(default=True, description="Write this run's lessons back when it ends.")
    path: Path | None = Field(
        default=None,
        description="The knowledge base file; default $RLAB_KNOWLEDGE, else "
        "~/.local/share/rlab/knowledge.sqlite.",
    )
    budget_chars: int = Field(
        default=4000, ge=200, description="Largest knowledge section an agent is shown, characters."
    )

    @field_validator("path", mode="after")
    @classmethod
    def _expand_home(cls, value: Path | None) -> Path | None:
        return None if value is None else value.expanduser()


class RunConfig(BaseModel):
    """Everything that shapes one run; stored whole in ``run.json``."""

    # inf and nan are never a budget, a limit or a target
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    task: str | None = Field(
        default=None, description="BENCHMARK:TASK; default: the installed default task."
    )
    agent: str | None = Field(
        default=None, description="Agent name; default: the preferred installed agent."
    )
    strategy: str = Field(default="best-first", description="Search strategy name.")
    sandbox: str = Field(default="local", description="Sandbox name.")
    iterations: int | None = Field(
        default=10, ge=0, description="Agent iterations (repairs included)."
    )
    time_budget_s: float | None = Field(
        default=None, gt=0, description="Wall-clock budget, seconds."
    )
    max_tokens: int | None = Field(
        default=None, gt=0, description="Token budget over all agent calls."
    )
    max_cost: float | None = Field(default=None, gt=0, description="Cost budget, USD.")
    target_val: float | None = Field(default=None, description="Stop once validation reaches this.")
    epsilon: float = Field(
        default=0.002, ge=0, description="Convergence: smallest gain that counts."
    )
    window: int = Field(
        default=3,
        ge=1,
        description="Convergence: evaluated changes of the code looked back (tuning trials aside).",
    )
    min_iterations: int = Field(default=3, ge=0, description="Never converge before this many.")
    acceptance: Literal["significant", "any"] = Field(
        default="significant",
        description="Which gains count: `significant` (beyond the noise, by a paired "
        "bootstrap) or `any` (every gain in the score).",
    )
    confidence: float = Field(
        default=0.9,
        gt=0.5,
        lt=1,
        description="Level of the one-sided interval a significant gain must clear.",
    )
    resamples: int = Field(
        default=1000, ge=50, le=100_000, description="Bootstrap resamples per node."
    )
    finalists: int = Field(
        default=3, ge=0, description="Best nodes re-run with other seeds before the run ends."
    )
    finalist_seeds: int = Field(
        default=2, ge=0, description="Other RLAB_SEED values each finalist runs with."
    )
    noise_seeds: int = Field(
        default=2,
        ge=0,
        description="Other RLAB_SEED values the best seed runs with first; the spread of its "
        "scores (training-seed noise) is counted in every verdict (0: not measured).",
    )
    debug_tries: int = Field(default=1, ge=0, description="Repair attempts for a failed node.")
    seed: int = Field(default=0, description="Seed for the strategy, agent and candidates.")
    seed_candidate: Path | None = Field(default=None, description="Start from this program folder.")
    workers: int = Field(default=1, ge=1, description="Candidates evaluated at once.")
    parallel_order: Literal["reproducible", "as-completed"] = Field(
        default="reproducible",
        description="With several workers: decisions see results in dispatch order "
        "(same candidates on every rerun) or as soon as they finish.",
    )
    threads: int | None = Field(default=None, ge=1, description="RLAB_THREADS for candidates.")
    out: Path = Field(default=Path("runs"), description="Folder that holds run folders.")
    rebuild_cache: bool = Field(default=False, description="Rebuild the task's prepared data.")
    timeout_s: float | None = Field(default=None, gt=0, description="Candidate wall-clock limit.")
    memory_mb: int | None = Field(default=None, gt=0, description="Candidate memory limit, MiB.")
    max_output_mb: float | None = Field(default=None, gt=0, description="Candidate log limit, MiB.")
    disk_mb: int | None = Field(
        default=None, gt=0, description="Candidate disk limit (work, outputs, cache), MiB."
    )
    outputs_mb: float | None = Field(
        default=None, gt=0, description="Largest total size of a node's taken outputs, MiB."
    )
    smoke_run: bool | None = Field(default=None, description="Run `main.py --debug` first.")
    env_allow: list[str] = Field(
        default_factory=list, description="Extra variables for candidates."
    )
    agent_options: dict[str, Any] = Field(default_factory=dict)
    strategy_options: dict[str, Any] = Field(default_factory=dict)
    sandbox_options: dict[str, Any] = Field(default_factory=dict)
    benchmark_options: dict[str, Any] = Field(default_factory=dict)
    observer_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Options of observer plugins by observer name, e.g. "
        "{mlflow: {enabled: true}}; each observer reads and checks its own.",
    )
    knowledge: KnowledgeSettings = Field(
        default_factory=KnowledgeSettings,
        description="Memory across runs: retrieval for agents, writing lessons back.",
    )

    @field_validator(*_FINITE, mode="before")
    @classmethod
    def _finite(cls, value: Any, info: ValidationInfo) -> Any:
        # `--time-budget inf` is no budget and nan no number: say what the option takes
        if isinstance(value, bool) or value is None:
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            return value  # not a number at all: pydantic's own message says so
        what = _FINITE[str(info.field_name)]
        if not math.isfinite(number) or ("greater than 0" in what and number <= 0):
            raise PydanticCustomError("finite_number", "Input should be {what}", {"what": what})
        return value

    @field_validator("out", "seed_candidate", mode="after")
    @classmethod
    def _expand_home(cls, value: Path | None) -> Path | None:
        # `out: ~/runs` in a config file means the home folder, as it would on a shell
        return None if value is None else value.expanduser()


class _DuplicateKey(yaml.YAMLError):
    """A mapping in a YAML file gives one key twice."""

    def __init__(self, key: Any, first_line: int, second_line: int) -> None:
        super().__init__(f"the key {key!r} is given twice")
        self.key, self.lines = key, (first_line, second_line)


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice (plain YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _DuplicateKey(key, seen[key], line)
            except TypeError:
                continue  # an unhashable key: the safe loader says so itself
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML config file into a mapping; errors name the file and the way out."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"Config file {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8."
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"Cannot read config file {path}: {exc.strerror}; check the path."
        ) from None
    try:
        data = yaml.load(text, Loader=_StrictLoader) or {}
    except _DuplicateKey as exc:
        first, second = exc.lines
        raise ConfigError(
            f"Config file {path} is not valid YAML at line {second} (the key {exc.key!r} is "
            f"given twice); keep one of lines {first} and {second}."
        ) from None
    except yaml.YAMLError as exc:
        where = (
            f" at line {exc.problem_mark.line + 1}" if getattr(exc, "problem_mark", None) else ""
        )
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            f"Config file {path} is not valid YAML{where} ({problem}); fix it."
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"Config file {path} must hold a mapping of options, not {type(data).__name__}."
        )
    return data


def user_mode_dirs() -> list[Path]:
    """Folders searched for user-defined modes (``NAME.yaml``), the first one winning."""
    dirs = []
    if os.environ.get("RLAB_MODES_DIR"):
        dirs.append(Path(os.environ["RLAB_MODES_DIR"]).expanduser())
    config_home = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    dirs.append(Path(config_home).expanduser() / "rlab" / "modes")
    return dirs


@dataclass(frozen=True)
class Mode:
    """One named preset: its values, where it comes from, and why it is broken (if it is)."""

    name: str
    summary: str
    values: dict[str, Any] = field(default_factory=dict)
    #: ``plugin NAME`` or the user file it was read from.
    source: str = ""
    #: Why the mode cannot be used (a user file that could not be read), else None.
    problem: str | None = None


def available_modes(host: PluginHost) -> dict[str, Mode]:
    """Every mode by name. User files override plugin modes of the same name.

    A user file that cannot be read makes a broken mode (its ``problem`` says why) instead of
    an error: one bad file must not stop every other mode, built-in ones included.
    """
    modes = {
        name: Mode(name, reg.info.summary, dict(reg.info.values), f"plugin {reg.owner.name}")
        for name, reg in host.available("modes").items()
    }
    for folder in reversed(user_mode_dirs()):
        try:
            files = sorted(folder.glob("*.y*ml")) if folder.is_dir() else []
        except OSError:
            continue  # an unreadable modes folder holds no mode we could use
        for file in files:
            try:
                values = read_config_file(file)
            except ConfigError as exc:
                modes[file.stem] = Mode(file.stem, "", source=str(file), problem=str(exc))
                continue
            summary = str(values.pop("summary", f"user mode from {file}"))
            modes[file.stem] = Mode(file.stem, summary, values, str(file))
    return modes


def resolve_mode(host: PluginHost, name: str) -> dict[str, Any]:
    """The values of mode ``name``; an unknown name lists the modes that exist."""
    modes = available_modes(host)
    for key in (name, name.upper(), name.lower()):
        if key in modes:
            mode = modes[key]
            if mode.problem is not None:
                raise ConfigError(f"Mode '{key}' cannot be used: {mode.problem}")
            return dict(mode.values)
    raise UnknownNameError(
        f"Unknown mode '{name}'; available: {', '.join(sorted(modes)) or 'none'}."
    )


def merge_layers(*layers: dict[str, Any]) -> dict[str, Any]:
    """Merge option layers, later ones winning; plugin option sections merge key by key."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if (key in PLUGIN_SECTIONS or key in CORE_SECTIONS) and isinstance(value, dict):
                merged[key] = {**merged.get(key, {}), **value}
            elif key == OBSERVER_SECTION and isinstance(value, dict):
                # one level deeper: each observer's own options merge key by key
                below = dict(merged.get(key) or {})
                for name, options in value.items():
                    earlier = below.get(name)
                    both = isinstance(options, dict) and isinstance(earlier, dict)
                    below[name] = {**earlier, **options} if both else options
                merged[key] = below
            else:
                merged[key] = value  # an explicit null (e.g. iterations: null) lifts a limit
    return merged


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn ``agent.model=gpt-4o`` style overrides into option sections (values are YAML).

    An observer's option names the observer too: ``observer.mlflow.uri=...`` sets
    ``observer_options["mlflow"]["uri"]``; a core section is set by its own name:
    ``knowledge.enabled=false`` sets ``knowledge["enabled"]``.
    """
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, option = key.partition(".")
        section_key = f"{section}_options"
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        if section in CORE_SECTIONS:
            if sep and dot and option:
                result.setdefault(section, {})[option] = value
                continue
        elif section_key == OBSERVER_SECTION:
            observer, dot, option = option.partition(".")
            if sep and dot and observer and option:
                result.setdefault(section_key, {}).setdefault(observer, {})[option] = value
                continue
        elif sep and dot and section_key in PLUGIN_SECTIONS and option:
            result.setdefault(section_key, {})[option] = value
            continue
        raise ConfigError(
            f"Cannot read the override '{pair}'; write it as SECTION.OPTION=VALUE with SECTION "
            "one of agent, strategy, sandbox, benchmark, knowledge (e.g. agent.temperature=0.2, "
            "knowledge.enabled=false), or observer.NAME.OPTION=VALUE for an observer plugin "
            "(e.g. observer.mlflow.enabled=true)."
        )
    return result


def build_run_config(
    host: PluginHost,
    *,
    cli: dict[str, Any],
    config_file: Path | None = None,
    mode: str | None = None,
) -> RunConfig:
    """Combine the layers by precedence and validate the result."""
    file_values = read_config_file(config_file) if config_file else {}
    mode_name = mode or file_values.pop("mode", None)
    file_values.pop("mode", None)
    mode_values = resolve_mode(host, mode_name) if mode_name else {}
    merged = merge_layers(mode_values, file_values, cli)
    where = "run options (command line, config file or mode)"
    return validate_model(RunConfig, merged, where)
