"""The judgements of the scan: what a bare name, an attribute or a string reaches for.

:class:`CapabilityChecks` adds to the file's :class:`~rlab_core.code_scan.bindings.Bindings`
the hits found so far and the checks the walk calls on a name, an attribute (or a
``getattr`` with a literal name), a string, and the literal names an ``attrgetter`` or
``methodcaller`` takes.
"""

from __future__ import annotations

import ast

from rlab_core.code_scan.bindings import Bindings
from rlab_core.code_scan.capabilities import (
    ANY_ATTR,
    BUILTIN_DETAIL,
    BUILTIN_WATCH,
    REFLECTION,
    STRING_RX,
    UNKNOWN_ATTR,
    VALUE_SENSITIVE,
    Hit,
    rule_label,
)


class CapabilityChecks(Bindings):
    """The file's bindings, the hits found so far and the checks that add to them."""

    def __init__(self, tree: ast.Module) -> None:
        super().__init__(tree)
        self.hits: set[Hit] = set()

    def add(self, label: str | None, detail: str, node: ast.AST) -> None:
        if label:
            self.hits.add(Hit(getattr(node, "lineno", 0), label, detail))

    def name_value(self, node: ast.Name) -> None:
        """A watched bare name loaded as a value."""
        name = node.id
        if name in BUILTIN_WATCH:
            self.name_base(node)
            return
        for qual in sorted(self.quals[name] & VALUE_SENSITIVE):  # a watched non-builtin
            self.add(REFLECTION, f"{qual} passed as a value", node)

    def name_base(self, node: ast.Name) -> None:
        """A bare name used as an attribute's object, an alias's value or getattr's object."""
        name = node.id
        if name in BUILTIN_WATCH and self.is_builtin(name):
            self.add(BUILTIN_WATCH[name], BUILTIN_DETAIL.get(name, name), node)

    def attribute(self, node: ast.AST, attr: str, obj: ast.expr) -> None:
        """``obj.attr`` (or ``getattr(obj, "attr")``) with an interesting ``attr``."""
        quals = self.resolve(obj)
        hit = False
        for qual in sorted(quals):
            full = f"{qual}.{attr}"
            label = rule_label(full)
            if label:
                self.add(label, full, node)
                hit = True
        if hit:
            return
        label = ANY_ATTR.get(attr)
        if label:
            self.add(label, f"a .{attr} attribute", node)
        elif attr in UNKNOWN_ATTR and not (quals and isinstance(obj, ast.Name)):  # shutil.os.system
            self.add(UNKNOWN_ATTR[attr], f"a .{attr} attribute", node)

    def string(self, node: ast.Constant, text: str) -> None:
        """Dunder names and dotted names of dangerous modules in a string (a name resolver's)."""
        for match in STRING_RX.finditer(text):
            if match.group(1):
                dunder = f"__{match.group(1)}__"
                self.add(ANY_ATTR.get(dunder, REFLECTION), f'"{dunder}" in a string', node)
            else:
                qual = f"{match.group(2)}.{match.group(3)}"
                label = rule_label(qual)
                if label:
                    self.add(label, f'"{match.group(0)}" in a string', node)

    def literal_names(self, node: ast.Call, label_fn: str, names: list[ast.expr]) -> None:
        """attrgetter / methodcaller: every name a literal, each checked like an attribute."""
        for arg in names:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                self.add(REFLECTION, f"{label_fn} with a computed name", node)
                continue
            for part in arg.value.split("."):
                label = ANY_ATTR.get(part) or UNKNOWN_ATTR.get(part)
                if label:
                    self.add(label, f'{label_fn}("{arg.value}")', node)
