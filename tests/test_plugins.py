"""Plugin discovery, failure isolation, duplicates, unknown names and option validation."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import RLAB, cli_env

from rlab_core.errors import ConfigError, PluginError, UnknownNameError
from rlab_core.hookspecs import SandboxInfo, StrategyInfo, hookimpl
from rlab_core.plugins import PluginHost


class _DuplicateStrategy:
    @hookimpl
    def rlab_register_strategies(self):
        return [StrategyInfo("best-first", "a second best-first", lambda: object)]


class _RaisingPlugin:
    @hookimpl
    def rlab_register_sandboxes(self):
        raise RuntimeError("cannot find my docker socket")


class _GoodPlugin:
    @hookimpl
    def rlab_register_sandboxes(self):
        return [SandboxInfo("nothing", "a sandbox", lambda: object)]


def test_builtins_register_through_the_same_hooks(plugin_host):
    assert set(plugin_host.available("strategies")) == {"best-first", "tree"}
    assert set(plugin_host.available("sandboxes")) == {"local", "docker"}
    assert {"MINIMAL", "THOROUGH"} <= set(plugin_host.available("modes"))
    assert plugin_host.get("strategies", "tree").owner.distribution == "rlab-core"


def test_duplicate_names_are_an_error_naming_both_owners(plugin_host):
    plugin_host.register(_DuplicateStrategy(), name="copycat", distribution="rlab-copycat")
    with pytest.raises(PluginError) as err:
        plugin_host.available("strategies")
    message = str(err.value)
    assert (
        "'best-first'" in message
        and "'builtin' (rlab-core)" in message
        and "'copycat' (rlab-copycat)" in message
    )


def test_a_plugin_whose_hook_raises_is_isolated_unless_strict():
    host = PluginHost(use_entry_points=False, strict=False)
    host.register(_RaisingPlugin(), name="broken")
    host.register(_GoodPlugin(), name="good")
    assert set(host.available("sandboxes")) == {"local", "docker", "nothing"}
    assert host.records["broken"].status == "failed"
    assert "cannot find my docker socket" in host.records["broken"].error
    strict = PluginHost(use_entry_points=False, strict=True)
    strict.register(_RaisingPlugin(), name="broken")
    with pytest.raises(PluginError, match=r"Plugin 'broken'.*cannot find my docker socket"):
        strict.available("sandboxes")


def test_unknown_names_list_what_exists_and_where_known_ones_come_from(plugin_host):
    with pytest.raises(
        UnknownNameError, match=r"Unknown strategy 'greedy'; available: best-first, tree; "
    ):
        plugin_host.get("strategies", "greedy")
    # the core keeps no table of plugins: it says how to find out, not who provides what
    with pytest.raises(
        UnknownNameError, match=r"install the plugin that provides it \(`rlab plugins`"
    ):
        plugin_host.get("benchmarks", "relbench")


class _MisspelledHook:
    @hookimpl
    def rlab_register_benchmark(self):  # singular: no such hook
        return []


def test_a_plugin_implementing_an_unknown_hook_fails_alone_unless_strict():
    host = PluginHost(use_entry_points=False, strict=False)
    host.register(_MisspelledHook(), name="typo")
    assert host.records["typo"].status == "failed"
    assert "rlab_register_benchmark" in (host.records["typo"].error or "")
    assert "local" in host.available("sandboxes")  # the rest still works
    strict = PluginHost(use_entry_points=False, strict=True)
    with pytest.raises(PluginError, match=r"Plugin 'typo'.*defines no such hook"):
        strict.register(_MisspelledHook(), name="typo")


def test_options_are_validated_by_the_plugins_own_model(plugin_host):
    with pytest.raises(ConfigError) as err:
        plugin_host.make_config("strategies", "tree", {"num_drafts": "many", "colour": "red"})
    message = str(err.value)
    assert "strategy 'tree' (plugin 'builtin')" in message
    assert "num_drafts" in message and "colour" in message and "node_expansion_limit" in message
    assert plugin_host.make_config("strategies", "tree", {"num_drafts": 5}).num_drafts == 5


def _install_broken_plugin(site: Path) -> None:
    """A real installed distribution (dist-info with an entry point) whose module fails to import."""
    dist = site / "rlab_broken-0.3.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rlab-broken\nVersion: 0.3.1\n")
    (dist / "entry_points.txt").write_text("[rlab]\nbroken = rlab_broken.plugin\n")
    package = site / "rlab_broken"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text("import this_dependency_is_not_installed\n")


def test_rlab_plugins_lists_versions_and_survives_a_broken_installed_plugin(tmp_path):
    site = tmp_path / "site"
    _install_broken_plugin(site)
    env = cli_env(tmp_path, PYTHONPATH=f"{site}")
    env.pop("RLAB_PLUGIN_MODULES")
    done = subprocess.run([RLAB, "plugins"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "builtin" in out and "rlab-core" in out and "best-first" in out and "local" in out
    assert "broken" in out and "rlab-broken" in out and "0.3.1" in out and "failed" in out
    assert "this_dependency_is_not_installed" in out
    # strict mode makes the same failure fatal, as one sentence with exit code 2
    strict = subprocess.run(
        [RLAB, "plugins"],
        env={**env, "RLAB_STRICT_PLUGINS": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert strict.returncode == 2 and "Traceback" not in strict.stderr
    assert "Plugin 'broken' (rlab-broken 0.3.1) failed to load" in strict.stderr
    # the block-list skips it entirely
    blocked = subprocess.run(
        [RLAB, "plugins"],
        env={**env, "RLAB_DISABLE_PLUGINS": "broken"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "disabled" in blocked.stdout and "this_dependency_is_not_installed" not in blocked.stdout


def test_allow_list_loads_only_the_named_plugins(tmp_path):
    env = cli_env(tmp_path, RLAB_LOAD_PLUGINS="agents")
    done = subprocess.run([RLAB, "plugins"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    lines = {
        line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") > 3
    }
    assert (
        "loaded" in lines["agents"]
        and "loaded" in lines["builtin"]
        and "disabled" in lines["example"]
    )


def test_discovery_imports_nothing_heavy():
    code = textwrap.dedent(
        """
        import sys
        from rlab_core.plugins import PluginHost
        from rlab_core.cli.app import app
        host = PluginHost()
        for kind in ("benchmarks", "agents", "strategies", "sandboxes", "modes"):
            host.available(kind)
        heavy = [m for m in ("numpy", "pandas", "torch", "relbench", "docker", "ray", "lightgbm") if m in sys.modules]
        print(heavy)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
