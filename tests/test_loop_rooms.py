"""The loop in rooms: small modules with one job each (no import cycle: test_import_cycles), and a
loop that knows neither the dashboard, the plugin host nor the whole run configuration."""

from __future__ import annotations

import ast
from pathlib import Path

import rlab_core

CORE = Path(rlab_core.__file__).parent
#: the loop's rooms: the decision cycle, scheduling, agent calls, building nodes and
#: children, recording typed events, and the settings the loop reads
LOOP_ROOMS = (
    "loop",
    "scheduling",
    "agent_calls",
    "node_builder",
    "child",
    "recorder",
    "events",
    "loop_settings",
    "stopping",
    "acceptance",
    "finalists",
)
MAX_LINES = 300


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run_time_imports(path: Path) -> set[str]:
    """Modules a file imports when it is imported (not in functions, not for type checkers)."""
    found: set[str] = set()
    for statement in ast.parse(path.read_text()).body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_loops_rooms_are_small():
    sizes = {room: len((CORE / f"{room}.py").read_text().splitlines()) for room in LOOP_ROOMS}
    assert all(lines <= MAX_LINES for lines in sizes.values()), sizes


def test_the_loop_knows_neither_the_dashboard_the_plugin_host_nor_the_run_config():
    banned = ("rlab_core.report", "rlab_core.plugins", "rlab_core.config", "rlab_core.runner")
    problems = [
        f"{room}.py imports {module}"
        for room in LOOP_ROOMS
        for module in _run_time_imports(CORE / f"{room}.py")
        if module.startswith(banned)
    ]
    # the runner and `rlab final` leave the dashboard to its observer too
    problems += [
        f"{name}.py imports {module}"
        for name in ("runner", "final")
        for module in _run_time_imports(CORE / f"{name}.py")
        if module.startswith("rlab_core.report")
    ]
    assert not problems, "\n".join(problems)
