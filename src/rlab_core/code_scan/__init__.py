"""Static capability scan of candidate Python code (the AST half of the guard).

:func:`scan_python` parses a file once and reports the *capabilities* it reaches for, each
a :class:`Hit` with a label, what exactly was seen and the line: starting processes,
opening sockets or the network, loading code or native libraries at run time, calling an
LLM API, and the reflection that would let code reach any of these without naming them.

This is a reviewer's aid, not a security boundary: isolation (the sandbox jail) is the
boundary. The scan resolves import aliases (``import os as o``, ``from os import system as
s``, ``o = os``), attribute chains, ``from x import *``, ``getattr`` and ``attrgetter`` with
literal names, line continuations, builtins shadowed by the file's own names, and dotted
names hidden in strings (``"os:system"`` for a name resolver). It refuses the tools that
defeat a static check: ``getattr`` with a computed name, ``__builtins__``, ``builtins``,
``globals()``, ``vars()`` of a module, ``__dict__``, ``__subclasses__``, ``__globals__``,
frames, ``sys.modules`` (except blocking an import), ``gc.get_objects``, and a dangerous
module (``os``, ``sys``...) passed around as a value.

Decisions: ``eval``/``exec``/``compile`` count only as the builtins (bare, or through
``builtins``), never as methods (``model.eval()``, ``df.eval(...)``, ``re.compile``).
``pickle.loads`` (bytes in the program: code in disguise) is dynamic code; ``pickle.load``,
``joblib.load``, ``np.load`` of files are ordinary caching and allowed. ``hasattr``, and
``setattr``/``delattr`` with computed names, are allowed: they cannot hand a capability
back. Worker pools that libraries start (``n_jobs``, DataLoader workers) are not flagged.

What it cannot see: a value followed through data (a module fetched from a container or a
library object and then called by an innocent method name), a ``.py`` file the candidate
writes and then imports, a crafted pickle file it loads, libraries that evaluate strings or
resolve dotted names internally (``pandas.eval``/``query``, ``hydra.utils.instantiate``,
pydantic forward references, template engines), and native extensions it builds.

The package: :mod:`~rlab_core.code_scan.capabilities` (the labels and what each is made
of), :mod:`~rlab_core.code_scan.bindings` (aliases and scopes),
:mod:`~rlab_core.code_scan.checks` (names, attributes, strings),
:mod:`~rlab_core.code_scan.node_rules` (calls, imports, functions, comprehensions) and
:mod:`~rlab_core.code_scan.walk` (the walk).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from rlab_core.code_scan.capabilities import (
    DYNAMIC,
    LABELS,
    LLM,
    MULTIPROCESSING,
    NATIVE,
    NETWORK,
    PROCESS,
    REFLECTION,
    RULES,
    SOCKET,
    SUBPROCESS,
    Hit,
    rule_label,
)
from rlab_core.code_scan.walk import Scanner


@lru_cache(maxsize=256)
def scan_python(source: str) -> tuple[Hit, ...] | None:
    """The capabilities a Python file reaches for, sorted by line; ``None`` if it does not parse.

    Results are cached by source text, so a parent scanned when it was a child is free.
    """
    try:
        tree = ast.parse(source)
        scanner = Scanner(tree)
        scanner.run(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the caller falls back to the text check
    return tuple(sorted(scanner.hits))


__all__ = [
    "DYNAMIC",
    "LABELS",
    "LLM",
    "MULTIPROCESSING",
    "NATIVE",
    "NETWORK",
    "PROCESS",
    "REFLECTION",
    "RULES",
    "SOCKET",
    "SUBPROCESS",
    "Hit",
    "rule_label",
    "scan_python",
]
