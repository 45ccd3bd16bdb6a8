"""Plugin discovery with per-plugin failure isolation, and the typed registry.

Plugins are modules named by entry points in the group ``rlab``. Each is imported and
registered on its own: one that fails to import, or whose registration hook raises, is
recorded with its error and skipped, unless ``RLAB_STRICT_PLUGINS=1`` makes that fatal.
``RLAB_LOAD_PLUGINS`` (allow-list) and ``RLAB_DISABLE_PLUGINS`` (block-list) take
comma-separated entry-point names; the core's own ``builtin`` plugin is always loaded.
``RLAB_PLUGIN_MODULES`` registers importable modules as plugins without packaging them
(plugin development, tests); they are isolated the same way.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any, Generic, Literal, TypeVar

import pluggy
from pydantic import BaseModel, ValidationError

from rlab_core.errors import ConfigError, PluginError, UnknownNameError
from rlab_core.hookspecs import (
    ENTRY_POINT_GROUP,
    PROJECT,
    AgentInfo,
    BenchmarkInfo,
    ModeInfo,
    RlabHookSpecs,
    SandboxInfo,
    StrategyInfo,
)
from rlab_core.interfaces import Agent, Benchmark, Sandbox, Strategy

log = logging.getLogger(__name__)

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
BUILTIN = "builtin"
InfoT = TypeVar("InfoT", BenchmarkInfo, AgentInfo, StrategyInfo, SandboxInfo, ModeInfo)
ImplT = TypeVar("ImplT")


@dataclass
class PluginRecord:
    """What ``rlab plugins`` shows for one plugin."""

    name: str
    distribution: str
    version: str
    module: str
    status: Literal["loaded", "failed", "disabled"] = "loaded"
    error: str | None = None
    provides: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Registered(Generic[InfoT]):
    """An ``*Info`` record together with the plugin that registered it."""

    info: InfoT
    owner: PluginRecord


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _strict_from_env() -> bool:
    return os.environ.get("RLAB_STRICT_PLUGINS", "").strip().lower() in {"1", "true", "yes"}


class PluginHost:
    """Loads plugins, isolates their failures and answers "which implementation is X?"."""

    def __init__(self, *, strict: bool | None = None, use_entry_points: bool = True) -> None:
        self.strict = _strict_from_env() if strict is None else strict
        self.manager = pluggy.PluginManager(PROJECT)
        self.manager.add_hookspecs(RlabHookSpecs)
        self.records: dict[str, PluginRecord] = {}
        self._registry: dict[str, dict[str, Registered]] | None = None
        if use_entry_points:
            self._discover()
            self._register_env_modules()
        if BUILTIN not in self.records:
            from rlab_core.builtin import plugin as builtin_plugin

            self.register(builtin_plugin, name=BUILTIN, distribution="rlab-core")
        self._check_pending()

    def _check_pending(self) -> None:
        """A plugin implementing a hook rlab does not define (a typo, an older rlab) fails."""
        while True:
            try:
                self.manager.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self.manager.get_name(exc.plugin)
                record = self.records.get(name or "")
                if record is None or name is None:
                    raise
                self.manager.unregister(name=name)
                self._registry = None
                self._fail(record, f"{exc}; rlab-core {_core_version()} defines no such hook")

    # ------------------------------------------------------------------ discovery

    def _discover(self) -> None:
        allow = _env_list("RLAB_LOAD_PLUGINS")
        block = _env_list("RLAB_DISABLE_PLUGINS") or set()
        seen: set[str] = set()
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in seen:
                continue  # the same distribution seen twice on sys.path
            seen.add(ep.name)
            record = self._record_for(ep)
            if ep.name != BUILTIN and (
                ep.name in block or (allow is not None and ep.name not in allow)
            ):
                record.status = "disabled"
                self.records[ep.name] = record
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not break rlab
                self._fail(record, f"{type(exc).__name__}: {exc}")
                continue
            self._register_module(module, record)

    def _register_env_modules(self) -> None:
        for module_name in sorted(_env_list("RLAB_PLUGIN_MODULES") or ()):
            record = PluginRecord(
                name=module_name, distribution="RLAB_PLUGIN_MODULES", version="", module=module_name
            )
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:
                self._fail(record, f"{type(exc).__name__}: {exc}")
                continue
            self._register_module(module, record)

    @staticmethod
    def _record_for(ep: EntryPoint) -> PluginRecord:
        dist = getattr(ep, "dist", None)
        return PluginRecord(
            name=ep.name,
            distribution=dist.name if dist else "?",
            version=dist.version if dist else "?",
            module=ep.value,
        )

    def _fail(self, record: PluginRecord, error: str) -> None:
        record.status = "failed"
        record.error = error
        self.records[record.name] = record
        if self.strict:
            raise PluginError(
                f"Plugin '{record.name}' ({' '.join(filter(None, (record.distribution, record.version)))}) failed to load: "
                f"{error}; fix or uninstall it, or unset RLAB_STRICT_PLUGINS to skip it."
            )
        log.warning("plugin %s failed to load and is skipped: %s", record.name, error)

    def _register_module(self, module: ModuleType | object, record: PluginRecord) -> None:
        try:
            self.manager.register(module, name=record.name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            self._fail(record, f"{type(exc).__name__}: {exc}")
            return
        self.records[record.name] = record
        self._registry = None

    def register(
        self,
        plugin: ModuleType | object,
        *,
        name: str,
        distribution: str = "inline",
        version: str = "",
    ) -> PluginRecord:
        """Register a plugin object directly (tests, notebooks, embedding rlab)."""
        if not version and distribution == "rlab-core":
            from rlab_core import __version__

            version = __version__
        record = PluginRecord(
            name=name,
            distribution=distribution,
            version=version,
            module=getattr(plugin, "__name__", type(plugin).__name__),
        )
        self._register_module(plugin, record)
        self._check_pending()
        return record

    # ------------------------------------------------------------------ registry

    def _collect(self) -> dict[str, dict[str, Registered[Any]]]:
        registry: dict[str, dict[str, Registered[Any]]] = {kind: {} for kind in KINDS}
        for kind in KINDS:
            hook = getattr(self.manager.hook, _HOOK_OF_KIND[kind])
            for impl in reversed(hook.get_hookimpls()):  # registration order
                record = self.records.get(impl.plugin_name)
                if record is None or record.status != "loaded":
                    continue
                try:
                    infos = list(impl.function() or ())
                    self._check_infos(kind, infos)
                except Exception as exc:
                    self._fail(record, f"{_HOOK_OF_KIND[kind]} raised {type(exc).__name__}: {exc}")
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
        return registry

    @staticmethod
    def _check_infos(kind: str, infos: Iterable[Any]) -> None:
        for info in infos:
            if not isinstance(info, _INFO_TYPE[kind]):
                raise TypeError(f"expected {_INFO_TYPE[kind].__name__}, got {type(info).__name__}")

    @property
    def registry(self) -> dict[str, dict[str, Registered[Any]]]:
        if self._registry is None:
            for record in self.records.values():
                record.provides = {}
            self._registry = self._collect()
        return self._registry

    def available(self, kind: Kind) -> dict[str, Registered[Any]]:
        """Every registered implementation of ``kind`` by name."""
        return dict(sorted(self.registry[kind].items()))

    def benchmarks(self) -> dict[str, Registered[BenchmarkInfo]]:
        """Every registered benchmark by name."""
        return self.available("benchmarks")

    def agents(self) -> dict[str, Registered[AgentInfo]]:
        """Every registered agent by name."""
        return self.available("agents")

    def modes(self) -> dict[str, Registered[ModeInfo]]:
        """Every registered mode by name."""
        return self.available("modes")

    def get(self, kind: Kind, name: str) -> Registered[Any]:
        """Look up one implementation; an unknown name lists what exists."""
        found = self.registry[kind].get(name)
        if found is not None:
            return found
        singular = SINGULAR[kind]
        have = ", ".join(sorted(self.registry[kind])) or "none installed"
        # the core knows plugins only through their entry points: no table of who provides what
        hint = "; install the plugin that provides it (`rlab plugins` lists what is installed)"
        broken = [r.name for r in self.records.values() if r.status == "failed"]
        if broken:
            hint += (
                f" (plugins that failed to load: {', '.join(sorted(broken))}; see `rlab plugins`)"
            )
        raise UnknownNameError(f"Unknown {singular} '{name}'; available: {have}{hint}.")

    def make_config(self, kind: Kind, name: str, options: dict[str, Any] | None) -> BaseModel:
        """Validate ``options`` against the implementation's own options model, once."""
        reg = self.get(kind, name)
        try:
            return reg.info.config.model_validate(options or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}"
                for err in exc.errors()
            )
            fields = ", ".join(sorted(reg.info.config.model_fields)) or "none"
            raise ConfigError(
                f"Invalid options for {SINGULAR[kind]} "
                f"'{name}' (plugin '{reg.owner.name}'): {problems}; its options are: {fields}."
            ) from None

    def create(
        self, kind: Kind, name: str, options: dict[str, Any] | BaseModel | None = None
    ) -> Any:
        """Load and construct an implementation from raw options or an already validated model."""
        reg = self.get(kind, name)
        if isinstance(options, BaseModel):
            if not isinstance(options, reg.info.config):
                raise TypeError(f"{name} takes {reg.info.config.__name__}, not {type(options)}")
            config = options
        else:
            config = self.make_config(kind, name, options)
        return reg.info.load()(config)

    def _create_typed(
        self, kind: Kind, name: str, options: dict[str, Any] | BaseModel | None, base: type[ImplT]
    ) -> ImplT:
        made = self.create(kind, name, options)
        if not isinstance(made, base):
            owner = self.get(kind, name).owner
            raise PluginError(
                f"The {SINGULAR[kind]} '{name}' of plugin '{owner.name}' ({owner.distribution}) "
                f"is a {type(made).__name__}, not a {base.__name__}; fix or uninstall the plugin."
            )
        return made

    def create_benchmark(
        self, name: str, options: dict[str, Any] | BaseModel | None = None
    ) -> Benchmark[Any]:
        """The benchmark ``name``, constructed with its options."""
        return self._create_typed("benchmarks", name, options, Benchmark)

    def create_agent(
        self, name: str, options: dict[str, Any] | BaseModel | None = None
    ) -> Agent[Any]:
        """The agent ``name``, constructed with its options."""
        return self._create_typed("agents", name, options, Agent)

    def create_strategy(
        self, name: str, options: dict[str, Any] | BaseModel | None = None
    ) -> Strategy[Any]:
        """The strategy ``name``, constructed with its options."""
        return self._create_typed("strategies", name, options, Strategy)

    def create_sandbox(
        self, name: str, options: dict[str, Any] | BaseModel | None = None
    ) -> Sandbox[Any]:
        """The sandbox ``name``, constructed with its options."""
        return self._create_typed("sandboxes", name, options, Sandbox)

    # ------------------------------------------------------------------ observers

    def notify(self, event: dict[str, Any], run_dir: Any) -> None:
        """Send one event to every observer; a failing observer is logged, never fatal."""
        offered = {"event": event, "run_dir": run_dir}
        for impl in self.manager.hook.rlab_observe_event.get_hookimpls():
            try:
                # like pluggy, pass only the arguments the implementation declares
                impl.function(**{name: offered[name] for name in impl.argnames if name in offered})
            except Exception:  # an observer must never stop a run
                log.exception("observer %s failed on event %s", impl.plugin_name, event.get("type"))

    def versions(self) -> dict[str, str]:
        """Distribution versions of every loaded plugin, for ``run.json``."""
        return {
            f"{r.name} ({r.distribution})": r.version
            for r in self.records.values()
            if r.status == "loaded"
        }


def _core_version() -> str:
    from rlab_core import __version__

    return __version__


def validate_model(model: type[BaseModel], data: dict[str, Any], what: str) -> BaseModel:
    """Validate ``data`` against ``model``; a failure is one ConfigError sentence naming fields."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"Invalid {what}: {problems}.") from None
