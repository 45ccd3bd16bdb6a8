"""Plugin discovery with per-plugin failure isolation.

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
import time
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Literal

import pluggy

from rlab_core.errors import PluginError
from rlab_core.hookspecs import ENTRY_POINT_GROUP, PROJECT, RlabHookSpecs

log = logging.getLogger("rlab_core.plugins")  # the plugin host's logger, one for all its parts

BUILTIN = "builtin"


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


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _strict_from_env() -> bool:
    return os.environ.get("RLAB_STRICT_PLUGINS", "").strip().lower() in {"1", "true", "yes"}


def _core_version() -> str:
    from rlab_core import __version__

    return __version__


class PluginLoader:
    """Finds and registers plugins on a pluggy manager; one that fails is recorded and skipped."""

    def __init__(self, *, strict: bool | None = None, use_entry_points: bool = True) -> None:
        self.strict = _strict_from_env() if strict is None else strict
        self.manager = pluggy.PluginManager(PROJECT)
        self.manager.add_hookspecs(RlabHookSpecs)
        self.records: dict[str, PluginRecord] = {}
        if use_entry_points:
            self._discover()
            self._register_env_modules()
        if BUILTIN not in self.records:
            from rlab_core.builtin import plugin as builtin_plugin

            self.register(builtin_plugin, name=BUILTIN, distribution="rlab-core")
        self._check_pending()

    def _plugins_changed(self) -> None:
        """Called whenever a plugin is registered or dropped (the host's registry is stale)."""

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
                self._plugins_changed()
                self._fail(record, f"{exc}; rlab-core {_core_version()} defines no such hook")

    def _discover(self) -> None:
        allow = _env_list("RLAB_LOAD_PLUGINS")
        block = _env_list("RLAB_DISABLE_PLUGINS") or set()
        seen: set[str] = set()
        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        log.debug(
            "entry points in group '%s': %s",
            ENTRY_POINT_GROUP,
            ", ".join(f"{ep.name} = {ep.value}" for ep in found) or "none",
        )
        for ep in found:
            if ep.name in seen:
                continue  # the same distribution seen twice on sys.path
            seen.add(ep.name)
            record = self._record_for(ep)
            if ep.name != BUILTIN and (
                ep.name in block or (allow is not None and ep.name not in allow)
            ):
                record.status = "disabled"
                self.records[ep.name] = record
                log.debug(
                    "plugin %s: disabled by RLAB_LOAD_PLUGINS / RLAB_DISABLE_PLUGINS", ep.name
                )
                continue
            started = time.perf_counter()
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not break rlab
                self._fail(record, f"{type(exc).__name__}: {exc}")
                continue
            log.debug(
                "plugin %s: imported %s (%s %s) in %.3f s",
                ep.name,
                ep.value,
                record.distribution,
                record.version,
                time.perf_counter() - started,
            )
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
            log.debug("plugin %s: imported from RLAB_PLUGIN_MODULES", module_name)
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
            origin = " ".join(filter(None, (record.distribution, record.version)))
            raise PluginError(
                f"Plugin '{record.name}' ({origin}) failed to load: "
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
        self._plugins_changed()

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
            version = _core_version()
        record = PluginRecord(
            name=name,
            distribution=distribution,
            version=version,
            module=getattr(plugin, "__name__", type(plugin).__name__),
        )
        self._register_module(plugin, record)
        self._check_pending()
        return record

    def versions(self) -> dict[str, str]:
        """Distribution versions of every loaded plugin, for ``run.json``."""
        return {
            f"{r.name} ({r.distribution})": r.version
            for r in self.records.values()
            if r.status == "loaded"
        }
