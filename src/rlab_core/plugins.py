"""The plugin host: loaded plugins, the typed registry, and creating implementations.

:class:`PluginHost` loads plugins with per-plugin failure isolation
(:mod:`rlab_core.plugin_loading`), answers "which implementation is X?" from the typed
registry (:mod:`rlab_core.plugin_registry`), validates an implementation's options once and
constructs it, and sends events to observers.
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

from pydantic import BaseModel

from rlab_core.errors import PluginError, UnknownNameError
from rlab_core.hookspecs import AgentInfo, BenchmarkInfo, ModeInfo
from rlab_core.interfaces import Agent, Benchmark, Sandbox, Strategy
from rlab_core.plugin_loading import BUILTIN, PluginLoader, PluginRecord
from rlab_core.plugin_registry import (
    KINDS,
    SINGULAR,
    Kind,
    Registered,
    Registry,
    collect_registry,
    validate_model,
    validate_options,
)

log = logging.getLogger(__name__)
ImplT = TypeVar("ImplT")


class PluginHost(PluginLoader):
    """Loads plugins, isolates their failures and answers "which implementation is X?"."""

    def __init__(self, *, strict: bool | None = None, use_entry_points: bool = True) -> None:
        self._registry: Registry | None = None
        super().__init__(strict=strict, use_entry_points=use_entry_points)

    def _plugins_changed(self) -> None:
        self._registry = None

    # ------------------------------------------------------------------ registry

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = collect_registry(self.manager, self.records, self._fail)
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

    # ------------------------------------------------------------------ creation

    def make_config(self, kind: Kind, name: str, options: dict[str, Any] | None) -> BaseModel:
        """Validate ``options`` against the implementation's own options model, once."""
        return validate_options(kind, name, self.get(kind, name), options)

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
        started = time.perf_counter()
        implementation = reg.info.load()
        log.debug(
            "%s '%s' of plugin %s: loaded %s.%s in %.3f s",
            SINGULAR[kind],
            name,
            reg.owner.name,
            implementation.__module__,
            implementation.__qualname__,
            time.perf_counter() - started,
        )
        return implementation(config)

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


__all__ = [
    "BUILTIN",
    "KINDS",
    "SINGULAR",
    "Kind",
    "PluginHost",
    "PluginRecord",
    "Registered",
    "validate_model",
]
