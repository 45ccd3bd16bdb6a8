"""Node kinds the walk judges as a whole instead of walking every field.

Each rule gets the scanner, the node and ``push`` (to walk a child later) and returns
whether it handled the node; ``False`` lets the walk visit every field as usual. Calls to
``getattr``/``vars``/``attrgetter`` are judged by their arguments, docstrings are skipped,
blocking an import through ``sys.modules`` is allowed, imports are checked by name, and
functions, lambdas and comprehensions open a scope of their own (defaults, decorators,
annotations and a comprehension's first iterable run outside it).
"""

from __future__ import annotations

import ast
from ast import Attribute, Constant, Load, Name
from collections.abc import Callable
from typing import Any, TypeAlias

from rlab_core.code_scan.bindings import COMPREHENSIONS, LEAVE, ScopeMark
from rlab_core.code_scan.capabilities import (
    ANY_ATTR,
    CONDITIONAL,
    REFLECTION,
    rule_label,
    subtree_labels,
)
from rlab_core.code_scan.checks import CapabilityChecks

Push: TypeAlias = Callable[[ast.AST | ScopeMark], None]
NodeRule: TypeAlias = Callable[[CapabilityChecks, Any, Push], bool]

_NAMED_ATTR = frozenset({"getattr", "setattr", "delattr", "hasattr"})
_JUDGED_BUILTINS = _NAMED_ATTR | {"vars"}
_CALLERS = frozenset({"attrgetter", "methodcaller"})


def _literal_str(args: list[ast.expr], index: int) -> str | None:
    """The string literal at ``args[index]``, or None when absent or computed."""
    if len(args) > index:
        arg = args[index]
        if isinstance(arg, Constant) and isinstance(arg.value, str):
            return arg.value
    return None


def visit_call(scanner: CapabilityChecks, node: ast.Call, push: Push) -> bool:
    """``getattr``/``vars``/``attrgetter``/``methodcaller``: judged by their arguments."""
    func, args = node.func, node.args
    special: str | None = None  # which callable judged by its arguments this is, if any
    if isinstance(func, Name):
        name = func.id
        if name in _JUDGED_BUILTINS:
            if scanner.is_builtin(name):
                special = name
        elif name in scanner.value_names:
            special = next(iter(scanner.quals[name] & CONDITIONAL), None)
    elif isinstance(func, Attribute) and func.attr in _CALLERS:
        special = next(iter(scanner.resolve(func) & CONDITIONAL), None)
    if special is None:
        return False
    rest: list[ast.AST] = [*args, *node.keywords]
    if special in _NAMED_ATTR and args:
        obj, rest = args[0], rest[1:]
        attr = _literal_str(args, 1)
        if attr is not None:
            if special == "getattr":
                scanner.attribute(node, attr, obj)
            elif attr.startswith("__") and ANY_ATTR.get(attr):
                scanner.add(REFLECTION, f'{special}(..., "{attr}")', node)
        elif special == "getattr":
            scanner.add(REFLECTION, "getattr with a computed name", node)
        if attr is not None and isinstance(obj, Name):
            scanner.name_base(obj)  # getattr(os, "path") is os.path: os is not a value here
        else:
            push(obj)
    elif special == "vars":
        if not args:
            scanner.add(REFLECTION, "vars()", node)
        elif isinstance(args[0], Name | Attribute):
            if scanner.resolve(args[0]):
                scanner.add(REFLECTION, "vars() of a module", node)
        else:
            scanner.add(REFLECTION, "vars() of a computed object", node)
    elif special == "operator.attrgetter":
        scanner.literal_names(node, "attrgetter", args)
    elif special == "operator.methodcaller":
        scanner.literal_names(node, "methodcaller", args[:1])
    for child in rest:
        push(child)
    return True


def _is_sys_modules(scanner: CapabilityChecks, expr: ast.expr) -> bool:
    return (
        isinstance(expr, Attribute)
        and expr.attr == "modules"
        and "sys.modules" in scanner.resolve(expr)
    )


def visit_expr(scanner: CapabilityChecks, node: ast.Expr, push: Push) -> bool:
    value = node.value
    if isinstance(value, Constant):
        return True  # a docstring or a bare string: documentation, never executed
    if (  # sys.modules.setdefault("sklearn", None): blocks an import, reads nothing back
        isinstance(value, ast.Call)
        and isinstance(value.func, Attribute)
        and value.func.attr in ("setdefault", "pop")
        and _is_sys_modules(scanner, value.func.value)
    ):
        for child in (*value.args, *value.keywords):
            push(child)
        return True
    return False


def visit_subscript(scanner: CapabilityChecks, node: ast.Subscript, push: Push) -> bool:
    if not isinstance(node.ctx, Load) and _is_sys_modules(scanner, node.value):
        push(node.slice)  # sys.modules[name] = None / del sys.modules[name]
        return True
    return False


def visit_assign(scanner: CapabilityChecks, node: ast.Assign, push: Push) -> bool:
    value = node.value
    if len(node.targets) == 1 and isinstance(node.targets[0], Name) and isinstance(value, Name):
        scanner.name_base(value)  # `o = os` is an alias, followed by the alias map
        return True
    return False


def visit_import(scanner: CapabilityChecks, node: ast.Import, push: Push) -> bool:
    for alias in node.names:
        label = rule_label(alias.name)
        if label and alias.name not in CONDITIONAL:
            scanner.add(label, f"import {alias.name}", node)
    return True


def visit_import_from(scanner: CapabilityChecks, node: ast.ImportFrom, push: Push) -> bool:
    if node.level or not node.module:
        return True  # a relative import: one of the candidate's own files
    for alias in node.names:
        if alias.name == "*":
            for brought in sorted(subtree_labels(node.module)):
                scanner.add(brought, f"from {node.module} import *", node)
            continue
        qual = f"{node.module}.{alias.name}"
        label = rule_label(qual)
        if label and qual not in CONDITIONAL:
            scanner.add(label, qual, node)
    return True


def visit_function(
    scanner: CapabilityChecks,
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    push: Push,
) -> bool:
    """Defaults, decorators and annotations run outside the function; its body inside."""
    push(LEAVE)
    if isinstance(node, ast.Lambda):
        push(node.body)
    else:
        for stmt in node.body:
            push(stmt)
    push(ScopeMark(node))
    args = node.args
    for default in (*args.defaults, *args.kw_defaults):
        if default is not None:
            push(default)
    if not isinstance(node, ast.Lambda):
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.annotation is not None:
                push(arg.annotation)
        for expr in (*node.decorator_list, node.returns):
            if expr is not None:
                push(expr)
    return True


def visit_comprehension(
    scanner: CapabilityChecks,
    node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
    push: Push,
) -> bool:
    """The first iterable runs outside the comprehension; the rest inside its own scope."""
    generators = node.generators
    push(LEAVE)
    for field in ("elt", "key", "value"):
        if hasattr(node, field):
            push(getattr(node, field))
    for index, gen in enumerate(generators):
        for cond in gen.ifs:
            push(cond)
        if index:
            push(gen.iter)
    push(ScopeMark(node))
    push(generators[0].iter)
    return True


#: The rule of each node kind that has one.
NODE_RULES: dict[type, NodeRule] = {
    ast.Call: visit_call,
    ast.Expr: visit_expr,
    ast.Subscript: visit_subscript,
    ast.Assign: visit_assign,
    ast.Import: visit_import,
    ast.ImportFrom: visit_import_from,
    ast.FunctionDef: visit_function,
    ast.AsyncFunctionDef: visit_function,
    ast.Lambda: visit_function,
    **dict.fromkeys(COMPREHENSIONS, visit_comprehension),
}
