"""The extension points of rlab: one registration hook per kind, plus observers.

A plugin is a module named by an entry point in the group ``rlab``. It implements any
of the hooks below with :data:`hookimpl`; each registration hook returns an iterable of
small frozen ``*Info`` records. ``load()`` imports the implementation lazily, so listing
plugins never imports a heavy stack (torch, relbench, docker).

Reference (kept in step with ``docs/plugin-authors.md`` by a test):

- ``rlab_register_benchmarks() -> Iterable[BenchmarkInfo]``
- ``rlab_register_agents() -> Iterable[AgentInfo]``
- ``rlab_register_strategies() -> Iterable[StrategyInfo]``
- ``rlab_register_sandboxes() -> Iterable[SandboxInfo]``
- ``rlab_register_modes() -> Iterable[ModeInfo]``
- ``rlab_observe_event(event, run_dir) -> None``
- ``rlab_knowledge_pages() -> Iterable[KnowledgePage]``
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy
from pydantic import BaseModel, ConfigDict

PROJECT = "rlab"
ENTRY_POINT_GROUP = "rlab"

if TYPE_CHECKING:
    from rlab_core.knowledge.records import KnowledgePage

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class EmptyConfig(BaseModel):
    """Options model for an implementation that takes none."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class _Info:
    name: str
    summary: str
    load: Callable[[], Any]
    config: type[BaseModel] = EmptyConfig


@dataclass(frozen=True)
class BenchmarkInfo(_Info):
    """A benchmark: ``load()`` returns a :class:`~rlab_core.interfaces.Benchmark` subclass.

    ``default_task`` (a full ``BENCHMARK:TASK`` name) offers a task for ``rlab run`` with no
    arguments; among installed benchmarks the highest ``default_priority`` wins.
    """

    default_task: str | None = None
    default_priority: int = 0


@dataclass(frozen=True)
class AgentInfo(_Info):
    """An agent: ``load()`` returns an :class:`~rlab_core.interfaces.Agent` subclass."""

    default_priority: int = 0


@dataclass(frozen=True)
class StrategyInfo(_Info):
    """A search strategy: ``load()`` returns a :class:`~rlab_core.interfaces.Strategy`."""


@dataclass(frozen=True)
class SandboxInfo(_Info):
    """A sandbox: ``load()`` returns a :class:`~rlab_core.interfaces.Sandbox` subclass."""


@dataclass(frozen=True)
class ModeInfo:
    """A named preset of run options (YAML mapping), e.g. ``MINIMAL``."""

    name: str
    summary: str
    values: dict[str, Any] = field(default_factory=dict)


class RlabHookSpecs:
    """Hook specifications; see the module docstring for the reference."""

    @hookspec
    def rlab_register_benchmarks(self) -> Iterable[BenchmarkInfo]:
        """Return the benchmarks this plugin provides."""

    @hookspec
    def rlab_register_agents(self) -> Iterable[AgentInfo]:
        """Return the agents this plugin provides."""

    @hookspec
    def rlab_register_strategies(self) -> Iterable[StrategyInfo]:
        """Return the search strategies this plugin provides."""

    @hookspec
    def rlab_register_sandboxes(self) -> Iterable[SandboxInfo]:
        """Return the sandboxes this plugin provides."""

    @hookspec
    def rlab_register_modes(self) -> Iterable[ModeInfo]:
        """Return named presets of run options this plugin ships."""

    @hookspec
    def rlab_observe_event(self, event: dict[str, Any], run_dir: Path) -> None:
        """Receive every journal event of a run right after it is written.

        Observers must be quick and must not raise; an exception is logged and ignored so
        a broken tracker never stops a run.
        """

    @hookspec
    def rlab_knowledge_pages(self) -> Iterable[KnowledgePage]:
        """Return curated knowledge pages for this plugin's task family.

        Pages are short markdown notes (concepts, workflows, pitfalls, snippets) with their
        sources; ``rlab_core.api.load_pages(folder, family)`` reads a folder of them. A run
        copies every plugin's pages into the knowledge base when it starts, and agents find
        them by text. Called once per run; keep it cheap (read files, import nothing heavy).
        """
