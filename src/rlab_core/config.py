"""Run configuration, named modes and their precedence.

Precedence, highest first: command line (and its ``RLAB_*`` variables) > config file >
mode > plugin and core defaults. A mode is a named mapping of the same keys as a config
file; plugins ship modes through ``rlab_register_modes`` and users add their own as YAML
files in ``~/.config/rlab/modes/`` or ``$RLAB_MODES_DIR``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlab_core.errors import ConfigError, UnknownNameError
from rlab_core.plugins import PluginHost, validate_model

PLUGIN_SECTIONS = ("agent_options", "strategy_options", "sandbox_options", "benchmark_options")
#: Marks a user mode whose file could not be read (its values hold the reason).
_BROKEN = "__broken__"


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
        default=3, ge=1, description="Convergence: evaluated iterations looked back."
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

    @field_validator("out", "seed_candidate", mode="after")
    @classmethod
    def _expand_home(cls, value: Path | None) -> Path | None:
        # `out: ~/runs` in a config file means the home folder, as it would on a shell
        return None if value is None else value.expanduser()


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice (plain YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML config file into a mapping; errors name the file and the way out."""
    try:
        text = Path(path).read_text(encoding="utf-8")
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
    """Folders searched for user-defined modes (``NAME.yaml``)."""
    dirs = []
    if os.environ.get("RLAB_MODES_DIR"):
        dirs.append(Path(os.environ["RLAB_MODES_DIR"]))
    dirs.append(Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "rlab" / "modes")
    return dirs


def available_modes(host: PluginHost) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every mode by name: (summary, values). User files override plugin modes of the same name."""
    modes = {
        name: (reg.info.summary, dict(reg.info.values))
        for name, reg in host.available("modes").items()
    }
    for folder in reversed(user_mode_dirs()):
        if folder.is_dir():
            for file in sorted(folder.glob("*.y*ml")):
                try:
                    values = read_config_file(file)
                except ConfigError as exc:
                    # one broken file spoils only its own mode: using it says why
                    modes[file.stem] = (f"BROKEN: {exc}", {_BROKEN: str(exc)})
                    continue
                modes[file.stem] = (str(values.pop("summary", f"user mode from {file}")), values)
    return modes


def resolve_mode(host: PluginHost, name: str) -> dict[str, Any]:
    """The values of mode ``name``; an unknown name lists the modes that exist."""
    modes = available_modes(host)
    for key in (name, name.upper(), name.lower()):
        if key in modes:
            values = modes[key][1]
            if _BROKEN in values:
                raise ConfigError(f"Mode '{key}' cannot be used: {values[_BROKEN]}")
            return values
    raise UnknownNameError(
        f"Unknown mode '{name}'; available: {', '.join(sorted(modes)) or 'none'}."
    )


def merge_layers(*layers: dict[str, Any]) -> dict[str, Any]:
    """Merge option layers, later ones winning; plugin option sections merge key by key."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key in PLUGIN_SECTIONS and isinstance(value, dict):
                merged[key] = {**merged.get(key, {}), **value}
            else:
                merged[key] = value  # an explicit null (e.g. iterations: null) lifts a limit
    return merged


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn ``agent.model=gpt-4o`` style overrides into option sections (values are YAML)."""
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, option = key.partition(".")
        section_key = f"{section}_options"
        if not sep or not dot or section_key not in PLUGIN_SECTIONS or not option:
            raise ConfigError(
                f"Cannot read the override '{pair}'; write it as SECTION.OPTION=VALUE with SECTION "
                "one of agent, strategy, sandbox, benchmark (e.g. agent.temperature=0.2)."
            )
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        result.setdefault(section_key, {})[option] = value
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
