"""The public API of rlab-core: everything a plugin may import, in one place.

Plugins (ours included) import from here, from :mod:`rlab_core` itself (``hookimpl``,
``__version__``) and, in their tests, from :mod:`rlab_core.testing` — nothing else of the
core, which may change without notice (a test in the core's suite enforces it). Groups:

- **hooks**: ``hookimpl`` and the ``*Info`` records a registration hook returns;
- **contracts**: the abstract bases of the four extension points, generic over their
  options model (``class MyBenchmark(Benchmark[MyOptions])``), and what strategies are told;
- **records**: what flows between them (nodes, proposals, executions, scores, task and
  agent-context records, the sandbox request);
- **errors**: the exceptions a plugin raises or handles;
- **editing**: reading and writing candidate sources, anchored edits, the edit boundary,
  diffs, and building a child from a proposal exactly as the loop does (``build_child``,
  for an agent's dry run);
- **guard and environment**: the capability check and the candidate environment allow-list;
- **budgets and stop rules**: stages by budget progress, budget stop reasons, the
  convergence rule;
- **sandboxes**: taking outputs as data, the local sandbox (for sandboxes that run
  candidates on other machines), the process supervisor's pieces and the log-tail reader;
- **cache**: rlab's cache folder and the one prepared-folder builder;
- **knowledge**: curated pages a plugin ships (``load_pages``, ``KnowledgePage``), the task
  fingerprint, and the digest of earlier runs an agent sees (``KnowledgeDigest``,
  ``order_by_knowledge`` for playbook agents);
- **events**: the journal's typed events and ``parse_event``, for observers
  (``rlab_observe_event`` receives each event as its journal line);
- **command line**: running an ``rlab`` command in-process.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any


def _exports() -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute), read from the stub ``api.pyi`` beside this file.

    The stub is the one list of the public API: type checkers read its types, and this
    module loads each name from it on first use, so a plugin module that imports
    ``hookimpl`` and an ``*Info`` from here stays as cheap to import as ``rlab --help`` needs.
    """
    stub = ast.parse(Path(__file__).with_suffix(".pyi").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: (statement.module, alias.name)
        for statement in stub.body
        if isinstance(statement, ast.ImportFrom)
        and statement.module
        and statement.module.startswith("rlab_core")
        for alias in statement.names
    }


_EXPORTS = _exports()


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"rlab_core.api has no {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*_EXPORTS, "run_cli"])


def run_cli(args: list[str]) -> int:
    """Run one ``rlab`` command (``["run", "mle:x", "-i", "3"]``) in this process; its exit code.

    For plugins that offer a command line of their own on top of rlab's (``rlab-mle``).
    """
    import typer

    from rlab_core.cli.app import app

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="rlab", standalone_mode=False)
    except SystemExit as exc:  # user errors and interrupts end with their own code
        return int(exc.code or 0)
    return code if isinstance(code, int) else 0


__all__ = sorted([*_EXPORTS, "run_cli"])
