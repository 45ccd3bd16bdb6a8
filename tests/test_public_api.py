"""The line between the core and plugins: one public API, enforced.

Plugins' sources import only :mod:`rlab_core` itself (``hookimpl``, ``__version__``) and
:mod:`rlab_core.api`; never another plugin. The core imports no plugin. The API's lazy table,
its stub (``api.pyi``, the one list) and ``__all__`` name the same things, and every name loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import rlab_core.api as api

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())
PUBLIC_MODULES = {"rlab_core", "rlab_core.api"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, relative ones skipped."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _sources(folder: Path) -> list[Path]:
    # candidate programs (seeds) are run, not imported by the plugin: they import no rlab
    return [p for p in sorted(folder.rglob("*.py")) if "seeds" not in p.parts]


def test_plugin_sources_import_only_the_public_api_and_no_other_plugin() -> None:
    own = {p.name for p in PLUGINS}  # rlab_agents, rlab_mle, ...
    problems = []
    for plugin in PLUGINS:
        for path in _sources(plugin / "src"):
            for line, module in _imports(path):
                top = module.split(".")[0]
                where = f"{path.relative_to(ROOT)}:{line}"
                if top == "rlab_core" and module not in PUBLIC_MODULES:
                    problems.append(f"{where} imports {module} (use rlab_core.api)")
                elif top in own and top != plugin.name:
                    problems.append(f"{where} imports another plugin, {module}")
    assert not problems, "\n".join(problems)


def test_every_name_a_plugin_takes_from_the_api_is_there() -> None:
    wanted = {
        (f"{path.relative_to(ROOT)}:{node.lineno}", alias.name)
        for plugin in PLUGINS
        for path in [*_sources(plugin / "src"), *sorted((plugin / "tests").rglob("*.py"))]
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "rlab_core.api"
        for alias in node.names
    }
    missing = sorted(f"{where} imports {name}" for where, name in wanted if name not in api.__all__)
    assert not missing, "\n".join(missing)


def test_the_core_imports_no_plugin() -> None:
    own = {p.name for p in PLUGINS}
    problems = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources(ROOT / "src")
        for line, module in _imports(path)
        if module.split(".")[0] in own
    ]
    assert not problems, "\n".join(problems)


def test_every_public_name_loads_from_the_one_list_in_the_stub() -> None:
    """``api.pyi`` is the list: type checkers read it, the module loads each name from it."""
    stub = ast.parse(Path(api.__file__).with_suffix(".pyi").read_text())
    imported = {
        alias.asname: (statement.module, alias.name)
        for statement in stub.body
        if isinstance(statement, ast.ImportFrom)
        and statement.module
        and statement.module.startswith("rlab_core")
        for alias in statement.names
    }
    # `name as name`: the re-export form type checkers honour in a stub (a renamed import is
    # not a re-export, and a linter's fix would silently drop it)
    assert all(module_attr[1] == name for name, module_attr in imported.items()), imported
    assert imported == api._EXPORTS and len(imported) > 90
    functions = [f.name for f in stub.body if isinstance(f, ast.FunctionDef)]
    assert functions == ["run_cli"]
    assert set(api.__all__) == {*api._EXPORTS, "run_cli"}
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert "api.pyi" in {p.name for p in Path(api.__file__).parent.iterdir()}


def test_importing_hooks_from_the_api_stays_light() -> None:
    """A plugin module imports hookimpl and *Info records: that must not pull the sandboxes in."""
    code = (
        "import sys\n"
        "from rlab_core.api import hookimpl, BenchmarkInfo, ConfigError\n"
        "heavy = [m for m in ('psutil', 'rlab_core.builtin.local_sandbox', 'rlab_core.loop')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
