"""The typed registry: which plugin registered which implementation of each kind.

:func:`collect_registry` asks every loaded plugin's ``rlab_register_*`` hooks for their
``*Info`` records, once; a hook that raises or returns something else fails its plugin
alone, and two plugins registering the same name is an error that names both. Options are
validated against an implementation's own model here too, with one sentence per failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import pluggy
from pydantic import BaseModel, ValidationError

from rlab_core.errors import ConfigError, PluginError
from rlab_core.hookspecs import AgentInfo, BenchmarkInfo, ModeInfo, SandboxInfo, StrategyInfo
from rlab_core.plugin_loading import PluginRecord

Kind = Literal["benchmarks", "agents", "strategies", "sandboxes", "modes"]
KINDS: tuple[Kind, ...] = ("benchmarks", "agents", "strategies", "sandboxes", "modes")
SINGULAR = {
    "benchmarks": "benchmark",
    "agents": "agent",
    "strategies": "strategy",
    "sandboxes": "sandbox",
    "modes": "mode",
}
_HOOK_OF_KIND = {kind: f"rlab_register_{kind}" for kind in KINDS}
_INFO_TYPE = {
    "benchmarks": BenchmarkInfo,
    "agents": AgentInfo,
    "strategies": StrategyInfo,
    "sandboxes": SandboxInfo,
    "modes": ModeInfo,
}
log = logging.getLogger("rlab_core.plugins")
ModelT = TypeVar("ModelT", bound=BaseModel)
InfoT = TypeVar("InfoT", BenchmarkInfo, AgentInfo, StrategyInfo, SandboxInfo, ModeInfo)


@dataclass(frozen=True)
class Registered(Generic[InfoT]):
    """An ``*Info`` record together with the plugin that registered it."""

    info: InfoT
    owner: PluginRecord


#: Kind -> name -> what registered it.
Registry = dict[str, dict[str, Registered[Any]]]


def _check_infos(kind: str, infos: Iterable[Any]) -> None:
    for info in infos:
        if not isinstance(info, _INFO_TYPE[kind]):
            raise TypeError(f"expected {_INFO_TYPE[kind].__name__}, got {type(info).__name__}")


def collect_registry(
    manager: pluggy.PluginManager,
    records: dict[str, PluginRecord],
    fail: Callable[[PluginRecord, str], None],
) -> Registry:
    """Each loaded plugin's registrations by kind and name; ``fail`` drops one whose hook raises."""
    for each in records.values():
        each.provides = {}
    registry: Registry = {kind: {} for kind in KINDS}
    for kind in KINDS:
        hook = getattr(manager.hook, _HOOK_OF_KIND[kind])
        for impl in reversed(hook.get_hookimpls()):  # registration order
            record = records.get(impl.plugin_name)
            if record is None or record.status != "loaded":
                continue
            try:
                infos = list(impl.function() or ())
                _check_infos(kind, infos)
            except Exception as exc:
                fail(record, f"{_HOOK_OF_KIND[kind]} raised {type(exc).__name__}: {exc}")
                continue
            for info in infos:
                existing = registry[kind].get(info.name)
                if existing is not None:
                    raise PluginError(
                        f"Two plugins register the {SINGULAR[kind]} '{info.name}': "
                        f"'{existing.owner.name}' ({existing.owner.distribution}) and "
                        f"'{record.name}' ({record.distribution}); uninstall or disable one "
                        "with RLAB_DISABLE_PLUGINS."
                    )
                registry[kind][info.name] = Registered(info, record)
                record.provides.setdefault(kind, []).append(info.name)
    # a plugin that failed during collection contributes nothing
    for kind in KINDS:
        registry[kind] = {n: r for n, r in registry[kind].items() if r.owner.status == "loaded"}
    for each in records.values():
        if each.status == "loaded":
            provides = "; ".join(f"{k}: {', '.join(names)}" for k, names in each.provides.items())
            log.debug("plugin %s registered %s", each.name, provides or "nothing")
    return registry


def validate_options(
    kind: Kind, name: str, found: Registered[Any], options: dict[str, Any] | None
) -> BaseModel:
    """Validate ``options`` against the implementation's own options model."""
    try:
        return found.info.config.model_validate(options or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}"
            for err in exc.errors()
        )
        fields = ", ".join(sorted(found.info.config.model_fields)) or "none"
        raise ConfigError(
            f"Invalid options for {SINGULAR[kind]} "
            f"'{name}' (plugin '{found.owner.name}'): {problems}; its options are: {fields}."
        ) from None


def validate_model(model: type[ModelT], data: dict[str, Any], what: str) -> ModelT:
    """Validate ``data`` against ``model``; a failure is one ConfigError sentence naming fields."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"Invalid {what}: {problems}.") from None
