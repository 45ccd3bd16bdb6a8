"""No import cycle among the core's modules: read from the source, and by importing each one.

The graph holds the imports that run when a module is imported (module level and class
bodies, not ``if TYPE_CHECKING:`` blocks, not function bodies: an import inside a function
is a deliberate lazy load). An edge goes to the module that provides the names, so
``from rlab_core.builtin import docker_daemon`` points at ``rlab_core.builtin.docker_daemon``
and ``from rlab_core.code_scan import scan_python`` at the package's ``__init__``.
"""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from pathlib import Path

import rlab_core

ROOT = Path(rlab_core.__file__).parent
PACKAGE = "rlab_core"


def _module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _in_packages(path: Path) -> bool:
    """Whether ``path`` is importable as a module (not a candidate's file shipped as data)."""
    folder = path.parent
    while folder != ROOT:
        if not (folder / "__init__.py").is_file():
            return False
        folder = folder.parent
    return True


MODULES = {_module_name(path): path for path in sorted(ROOT.rglob("*.py")) if _in_packages(path)}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time_statements(body: list[ast.stmt]):
    """Statements that run when the module is imported."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _import_time_statements(stmt.body)
            yield from _import_time_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                yield from _import_time_statements(block)
            for handler in stmt.handlers:
                yield from _import_time_statements(handler.body)
        elif isinstance(stmt, ast.With | ast.ClassDef):
            yield from _import_time_statements(stmt.body)


def _imports_of(name: str, path: Path) -> set[str]:
    """The core modules ``name`` imports when it is imported."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for stmt in _import_time_statements(ast.parse(path.read_text()).body):
        if isinstance(stmt, ast.Import):
            found.update(alias.name for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:
                anchor = package.split(".")[: len(package.split(".")) - stmt.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in stmt.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in MODULES else base)
    return {target for target in found if target in MODULES and target != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_reader_sees_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_follows_submodules_and_names():
    graph = {name: _imports_of(name, path) for name, path in MODULES.items()}
    assert "rlab_core.code_scan" in graph["rlab_core.guard"]
    assert "rlab_core.builtin.docker_daemon" in graph["rlab_core.builtin.docker_sandbox"]
    assert "rlab_core.plugins" in graph["rlab_core.cli.common"]


def test_no_import_cycle_among_core_modules():
    graph = {name: _imports_of(name, path) for name, path in MODULES.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_every_core_module_imports_in_a_fresh_interpreter_in_random_order():
    names = sorted(MODULES)
    seed = random.randrange(2**32)
    random.Random(seed).shuffle(names)
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"seed {seed}: {done.stderr[-2000:]}"
