"""What a name in the scanned file stands for: import aliases, assignments and scopes.

:class:`Bindings` reads the file's statements once before the walk: which names imports bind
to which qualified names (``import os as o``, ``from os import system as s``), simple
aliases (``o = os``, ``run = o.system``), and where each name is bound, so that a bare
``eval`` or ``getattr`` counts only when it still means the builtin. During the walk it
keeps the stack of function scopes the walk is in.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TypeAlias

from rlab_core.code_scan.capabilities import BUILTIN_BASE, BUILTIN_WATCH, VALUE_SENSITIVE

COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)

#: A node with a scope of its own.
ScopeNode: TypeAlias = (
    ast.FunctionDef
    | ast.AsyncFunctionDef
    | ast.Lambda
    | ast.ListComp
    | ast.SetComp
    | ast.GeneratorExp
    | ast.DictComp
)


class ScopeMark:
    """Marker pushed on the walk stack: enter (fn set) or leave (fn None) a function scope."""

    __slots__ = ("fn",)

    def __init__(self, fn: ScopeNode | None) -> None:
        self.fn = fn


LEAVE = ScopeMark(None)


def target_names(node: ast.AST | None) -> Iterable[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for elt in node.elts:
            yield from target_names(elt)
    elif isinstance(node, ast.Starred):
        yield from target_names(node.value)


def import_bindings(node: ast.Import | ast.ImportFrom) -> Iterable[tuple[str, str | None]]:
    """(bound name, qualified name or None) for each name an import binds."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                top = alias.name.split(".", 1)[0]
                yield top, top
        return
    for alias in node.names:
        if alias.name == "*":
            continue
        qual = f"{node.module}.{alias.name}" if node.module and not node.level else None
        yield alias.asname or alias.name, qual


def function_locals(fn: ScopeNode) -> frozenset[str]:
    """Names a function, lambda or comprehension binds in its own scope."""
    if isinstance(fn, COMPREHENSIONS):
        return frozenset(n for gen in fn.generators for n in target_names(gen.target))
    args = fn.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    if isinstance(fn, ast.Lambda):
        return frozenset(names)
    declared: set[str] = set()
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue  # its body is another scope (decorators rarely bind anything)
        elif isinstance(node, (ast.Lambda, *COMPREHENSIONS)):
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(bound for bound, _ in import_bindings(node))
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared)


class Bindings:
    """The file's import aliases and bindings, and the scopes the walk is in."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: dict[str, set[str]] = {}  # name -> qualified names it is bound to
        self.assigned: dict[str, list[ast.expr]] = {}  # name -> simple alias right-hand sides
        self.module_bound: dict[str, int] = {}  # name -> first top-level statement binding it
        self.module_defs: set[str] = set()  # bound at module level by def, class or import
        self.bound_anywhere: set[str] = set()
        self.scopes: list[ScopeNode] = []
        self.locals_cache: dict[int, frozenset[str]] = {}
        self.top = 0  # index of the top-level statement being walked
        self._prepass(tree.body, None, in_function=False)
        self.quals = {
            name: self._alias_quals(name, set()) for name in {*self.imports, *self.assigned}
        }
        self.value_names = {
            name for name, quals in self.quals.items() if quals & VALUE_SENSITIVE
        } - set(BUILTIN_WATCH)
        self.watch = self.value_names | set(BUILTIN_WATCH)

    # -- pre-pass over statements: imports, aliases, module-level bindings -----------------

    def _bind(self, name: str, index: int | None, in_function: bool, definition: bool) -> None:
        self.bound_anywhere.add(name)
        if in_function or index is None:
            return
        self.module_bound.setdefault(name, index)
        if definition:
            self.module_defs.add(name)

    def _prepass(self, body: list[ast.stmt], top: int | None, in_function: bool) -> None:
        for i, stmt in enumerate(body):
            index = i if top is None else top
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                for bound, qual in import_bindings(stmt):
                    if qual:
                        self.imports.setdefault(bound, set()).add(qual)
                    self._bind(bound, index, in_function, True)
                continue
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self._bind(stmt.name, index, in_function, True)
                self._prepass(stmt.body, index, in_function=True)
                continue
            if isinstance(stmt, ast.Assign):
                value = stmt.value
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and isinstance(value, ast.Name | ast.Attribute):
                        self.assigned.setdefault(target.id, []).append(value)
                    for name in target_names(target):
                        self._bind(name, index, in_function, False)
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
                for name in target_names(stmt.target):
                    self._bind(name, index, in_function, False)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                for item in stmt.items:
                    for name in target_names(item.optional_vars):
                        self._bind(name, index, in_function, False)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if inner:
                    self._prepass(inner, index, in_function)
            for handler in getattr(stmt, "handlers", ()):
                if handler.name:
                    self._bind(handler.name, index, in_function, False)
                self._prepass(handler.body, index, in_function)
            for case in getattr(stmt, "cases", ()):
                self._prepass(case.body, index, in_function)

    def _alias_quals(self, name: str, seen: set[str]) -> frozenset[str]:
        if name in seen or len(seen) > 50:  # a cycle, or a chain too long to be innocent
            return frozenset()
        seen.add(name)
        quals = set(self.imports.get(name, ()))
        for expr in self.assigned.get(name, ()):
            quals |= self._expr_quals(expr, seen)
        return frozenset(quals)

    def _expr_quals(self, expr: ast.expr, seen: set[str]) -> set[str]:
        attrs: list[str] = []
        while isinstance(expr, ast.Attribute):
            attrs.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return set()
        name = expr.id
        if name in self.imports or name in self.assigned:
            bases = set(self._alias_quals(name, seen))
        elif name in BUILTIN_BASE and name not in self.bound_anywhere:
            bases = {BUILTIN_BASE[name]}
        else:
            return set()
        suffix = "".join(f".{a}" for a in reversed(attrs))
        return {base + suffix for base in bases}

    # -- during the walk --------------------------------------------------------------------

    def resolve(self, expr: ast.expr) -> set[str]:
        """Qualified names ``expr`` may stand for; empty when the scan cannot tell."""
        attrs: list[str] = []
        while isinstance(expr, ast.Attribute):
            attrs.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return set()
        name = expr.id
        if name in BUILTIN_BASE and self.is_builtin(name):
            bases = {BUILTIN_BASE[name]}
        else:
            bases = set(self.quals.get(name, ()))
        if not bases:
            return bases
        suffix = "".join(f".{a}" for a in reversed(attrs))
        return {base + suffix for base in bases}

    def is_builtin(self, name: str) -> bool:
        """Whether a bare ``name`` here refers to the builtin (not to a binding of the file)."""
        for fn in reversed(self.scopes):
            names = self.locals_cache.get(id(fn))
            if names is None:
                names = self.locals_cache[id(fn)] = function_locals(fn)
            if name in names:
                return False
        if self.scopes:
            return name not in self.module_defs
        first = self.module_bound.get(name)
        return first is None or first >= self.top
