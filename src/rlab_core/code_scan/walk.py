"""The walk: every node of the file once, iteratively, in the scope it runs in.

The loop tests the node kinds it meets most (names, attributes, constants) by exact class
before anything else, hands the kinds with a rule of their own to
:data:`~rlab_core.code_scan.node_rules.NODE_RULES`, and otherwise walks the node's fields
(the ones that can hold code).
"""

from __future__ import annotations

import ast
from ast import Attribute, Constant, Load, Name

from rlab_core.code_scan.bindings import ScopeMark
from rlab_core.code_scan.capabilities import BUILTIN_WATCH, INTERESTING, STRING_RX
from rlab_core.code_scan.checks import CapabilityChecks
from rlab_core.code_scan.node_rules import NODE_RULES

#: Fields that never hold code (contexts, operators, names as text).
_SKIP_FIELDS = frozenset(
    {"ctx", "op", "ops", "type_comment", "kind", "id", "attr", "arg", "module", "level", "name"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}


class Scanner(CapabilityChecks):
    """Scans one parsed file; :attr:`hits` holds what it found after :meth:`run`."""

    def run(self, tree: ast.Module) -> None:
        for index, stmt in enumerate(tree.body):
            self.top = index
            self._walk(stmt)

    def _walk(self, root: ast.AST) -> None:
        stack: list[object] = [root]  # nodes, scope marks, and the odd int or str field
        pop, push = stack.pop, stack.append
        watch, interesting, string_rx, rules = self.watch, INTERESTING, STRING_RX, NODE_RULES
        while stack:
            node = pop()
            if isinstance(node, Name):
                if node.id in watch and isinstance(node.ctx, Load):
                    self.name_value(node)
                continue
            if isinstance(node, Attribute):
                if node.attr in interesting:
                    self.attribute(node, node.attr, node.value)
                base = node.value
                if isinstance(base, Name):
                    if base.id in BUILTIN_WATCH:
                        self.name_base(base)
                else:
                    push(base)
                continue
            if isinstance(node, Constant):
                value = node.value
                if isinstance(value, str) and string_rx.search(value):
                    self.string(node, value)
                continue
            if isinstance(node, ScopeMark):
                if node.fn is None:
                    self.scopes.pop()
                else:
                    self.scopes.append(node.fn)
                continue
            kind = type(node)
            rule = rules.get(kind)
            if rule is not None and rule(self, node, push):
                continue
            fields = _FIELDS.get(kind)
            if fields is None:
                fields = _FIELDS[kind] = tuple(
                    f for f in getattr(kind, "_fields", ()) if f not in _SKIP_FIELDS
                )
            for field in fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    stack.extend(value)
                elif value is not None:
                    push(value)
