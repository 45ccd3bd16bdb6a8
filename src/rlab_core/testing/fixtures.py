"""Pytest fixtures for plugin authors: a fresh plugin host, inline registration, the toy
task, a temporary cache, run folders."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rlab_core.plugins import PluginHost, PluginRecord
from rlab_core.run_folder import RunFolder


@pytest.fixture(autouse=True, scope="module")
def module_knowledge_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each test module's own knowledge base, for module-scoped fixtures that make runs."""
    path = tmp_path_factory.mktemp("knowledge-module") / "knowledge.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_KNOWLEDGE", str(path))
        # a test that starts rlab with the RLAB_ variables stripped still keeps this, so its
        # run writes under the module's folder (the default base), never the user's
        patch.setenv("XDG_DATA_HOME", str(path.parent / "data"))
        yield path


@pytest.fixture(autouse=True)
def isolated_knowledge_base(
    module_knowledge_base: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """Each test's own knowledge base (``RLAB_KNOWLEDGE``): runs write back their lessons and
    the playbook agent reads them, so a shared base would make one test's run steer the next
    one's, and a suite must never write the user's own base.

    Autouse where it is imported into a ``conftest.py`` together with
    ``module_knowledge_base`` (``from rlab_core.testing.fixtures import
    isolated_knowledge_base, module_knowledge_base``). Beside ``tmp_path``, not in it, so
    tests that list their folder find only their own files.
    """
    path = tmp_path_factory.mktemp("knowledge") / "knowledge.sqlite"
    monkeypatch.setenv("RLAB_KNOWLEDGE", str(path))
    monkeypatch.setenv("XDG_DATA_HOME", str(path.parent / "data"))  # for RLAB_-stripped starts
    return path


@pytest.fixture
def plugin_host() -> PluginHost:
    """A plugin host with only the core's built-ins (no installed plugin leaks in)."""
    return PluginHost(use_entry_points=False, strict=True)


@pytest.fixture
def register_plugin(plugin_host: PluginHost) -> Callable[..., PluginRecord]:
    """Register a module or object of hook implementations on ``plugin_host``."""

    def register(plugin: Any, name: str | None = None) -> PluginRecord:
        return plugin_host.register(plugin, name=name or getattr(plugin, "__name__", "inline"))

    return register


@pytest.fixture
def toy_host(plugin_host: PluginHost) -> PluginHost:
    """``plugin_host`` with the toy benchmark (``toy:line``) and the ``scripted`` agent."""
    from rlab_core.testing.toy import plugin as toy_plugin

    plugin_host.register(toy_plugin, name="toy")
    return plugin_host


@pytest.fixture
def rlab_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point rlab's user cache at a temporary folder."""
    cache = tmp_path / "rlab-cache"
    monkeypatch.setenv("RLAB_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def run_folder(tmp_path: Path) -> Iterator[RunFolder]:
    """A fresh, empty run folder."""
    yield RunFolder.create(tmp_path / "runs", "test:task")
