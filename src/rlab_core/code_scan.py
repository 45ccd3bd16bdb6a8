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
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

SUBPROCESS = "subprocess"
PROCESS = "process spawning"
MULTIPROCESSING = "multiprocessing"
SOCKET = "socket"
NETWORK = "network"
DYNAMIC = "dynamic code"
NATIVE = "native code"
REFLECTION = "reflection"
LLM = "LLM API"

LABELS = (SUBPROCESS, PROCESS, MULTIPROCESSING, SOCKET, NETWORK, DYNAMIC, NATIVE, REFLECTION, LLM)


@dataclass(frozen=True, order=True)
class Hit:
    """One capability seen in a file: its label, what exactly was seen, and the line."""

    line: int
    label: str
    detail: str


def _w(text: str) -> list[str]:
    return text.split()


_OS_SPAWN = _w(
    "system popen fork forkpty startfile posix_spawn posix_spawnp "
    "execl execle execlp execlpe execv execve execvp execvpe "
    "spawnl spawnle spawnlp spawnlpe spawnv spawnve spawnvp spawnvpe"
)

#: Qualified names (a module, or an attribute of one) and their label; the longest dotted
#: prefix of a name decides, and ``None`` allows a submodule of a flagged module.
RULES: dict[str, str | None] = {
    "subprocess": SUBPROCESS,
    **{f"{mod}.{fn}": PROCESS for mod in ("os", "posix", "nt") for fn in _OS_SPAWN},
    **dict.fromkeys(
        _w(
            "pty _posixsubprocess asyncio.subprocess asyncio.create_subprocess_exec "
            "asyncio.create_subprocess_shell pexpect plumbum popen2 commands"
        ),
        PROCESS,
    ),
    **dict.fromkeys(
        _w("multiprocessing concurrent.futures.ProcessPoolExecutor concurrent.futures.process"),
        MULTIPROCESSING,
    ),
    **dict.fromkeys(
        _w(
            "socket _socket ssl _ssl socketserver asyncore asynchat asyncio.open_connection "
            "asyncio.start_server asyncio.open_unix_connection asyncio.start_unix_server"
        ),
        SOCKET,
    ),
    **dict.fromkeys(
        _w(
            "http urllib urllib2 urllib3 requests httpx aiohttp ftplib smtplib poplib imaplib "
            "nntplib telnetlib xmlrpc webbrowser pycurl httplib2 websocket websockets grpc paramiko "
            "boto3 botocore google.cloud azure huggingface_hub kaggle gdown wget tornado twisted "
            "zmq"
        ),
        NETWORK,
    ),
    "urllib.parse": None,
    "urllib.error": None,
    **dict.fromkeys(
        _w(
            "builtins.eval builtins.exec builtins.compile builtins.__import__ builtins.breakpoint "
            "importlib imp runpy pkgutil pkg_resources pydoc code codeop marshal zipimport site "
            "types.CodeType types.FunctionType types.LambdaType pickle.loads _pickle.loads "
            "cPickle.loads dill.loads cloudpickle.loads timeit.timeit timeit.repeat timeit.Timer "
            "cProfile.run cProfile.runctx profile.run profile.runctx pdb bdb doctest trace "
            "typing.get_type_hints typing.ForwardRef typing._eval_type inspect.get_annotations "
            "logging.config IPython"
        ),
        DYNAMIC,
    ),
    **dict.fromkeys(
        _w(
            "ctypes _ctypes cffi _cffi_backend numpy.ctypeslib cython Cython pyximport cppyy "
            "torch.utils.cpp_extension"
        ),
        NATIVE,
    ),
    **dict.fromkeys(
        _w(
            "builtins sys.modules sys._getframe sys._current_frames inspect.getmembers "
            "inspect.getmembers_static inspect.currentframe inspect.stack inspect.trace "
            "inspect.getouterframes inspect.getinnerframes inspect.getattr_static gc.get_objects "
            "gc.get_referrers gc.get_referents operator.attrgetter operator.methodcaller"
        ),
        REFLECTION,
    ),
    **dict.fromkeys(
        _w(
            "openai anthropic google.generativeai google.genai vertexai cohere mistralai litellm "
            "groq together langchain langchain_openai langchain_anthropic langchain_community "
            "llama_index"
        ),
        LLM,
    ),
}

#: Callables that are fine when every name they take is a string literal.
CONDITIONAL = frozenset({"operator.attrgetter", "operator.methodcaller"})

#: Attribute names flagged on any object: distinctive enough that ordinary code does not use
#: them, so reaching them through an object the scan cannot type still counts.
ANY_ATTR: dict[str, str] = {
    **dict.fromkeys(
        [n for n in _OS_SPAWN if n not in ("system", "fork")]
        + _w("create_subprocess_exec create_subprocess_shell fork_exec pty"),
        PROCESS,
    ),
    **dict.fromkeys(
        _w("subprocess Popen check_output check_call getoutput getstatusoutput"), SUBPROCESS
    ),
    **dict.fromkeys(_w("multiprocessing ProcessPoolExecutor"), MULTIPROCESSING),
    **dict.fromkeys(_w("socket create_connection open_connection open_unix_connection"), SOCKET),
    **dict.fromkeys(
        _w("urlopen urlretrieve HTTPConnection HTTPSConnection urllib urllib3 requests httpx"),
        NETWORK,
    ),
    **dict.fromkeys(
        _w(
            "import_module resolve_name run_path run_module exec_module load_module __import__ "
            "importlib runpy pkgutil marshal get_type_hints"
        ),
        DYNAMIC,
    ),
    **dict.fromkeys(
        _w(
            "ctypes ctypeslib CDLL PyDLL cdll pydll windll oledll LoadLibrary dlopen cffi "
            "load_inline cpp_extension"
        ),
        NATIVE,
    ),
    **dict.fromkeys(
        _w(
            "os posix nt sys builtins pickle __builtins__ _getframe getmembers currentframe "
            "get_objects get_referrers get_referents f_globals f_locals f_builtins attrgetter "
            "methodcaller __dict__ __subclasses__ __globals__ __code__ __self__ __getattribute__ "
            "__getattr__ __loader__ __spec__"
        ),
        REFLECTION,
    ),
}

#: Attribute names flagged unless the object is a module imported by name: ``platform.system()``
#: is fine, ``sys.modules["os"].system`` and ``shutil.os.system`` are not.
UNKNOWN_ATTR = {"system": PROCESS, "fork": PROCESS}

#: Builtins and module globals watched by bare name, and their label when used as a value.
#: ``getattr``/``vars`` used as a direct call are judged by their arguments instead.
BUILTIN_WATCH: dict[str, str | None] = {
    **dict.fromkeys(_w("eval exec compile __import__ breakpoint"), DYNAMIC),
    **dict.fromkeys(_w("getattr vars globals locals __builtins__ __loader__ __spec__"), REFLECTION),
    **dict.fromkeys(_w("setattr delattr hasattr"), None),
}

#: What a watched bare name stands for in an attribute chain (``__builtins__.eval``).
_BUILTIN_BASE = {
    name: "builtins" if name == "__builtins__" else f"builtins.{name}"
    for name in BUILTIN_WATCH
    if name not in ("__loader__", "__spec__")
}

_BUILTIN_DETAIL = {
    "getattr": "getattr as a value",
    "vars": "vars as a value",
    "globals": "globals()",
    "locals": "locals()",
}

#: A module (or callable) whose use as a plain value hides what is later done with it.
VALUE_SENSITIVE = (
    frozenset(
        _w(
            "os posix nt sys builtins asyncio concurrent.futures inspect gc operator types pickle "
            "timeit typing"
        )
    )
    | CONDITIONAL
)

_INTERESTING = frozenset(
    {key.rsplit(".", 1)[1] for key in RULES if "." in key} | set(ANY_ATTR) | set(UNKNOWN_ATTR)
)

_STRING_RX = re.compile(
    r"__(import|builtins|globals|subclasses|code|getattribute|self|loader)__"
    r"|\b(os|posix|nt|sys|subprocess|builtins|importlib|ctypes|pty|runpy|marshal|pickle)"
    r"\s*[.:]\s*([A-Za-z_]\w*)"
)

_SKIP_FIELDS = frozenset(
    {"ctx", "op", "ops", "type_comment", "kind", "id", "attr", "arg", "module", "level", "name"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}

Name, Attribute, Constant, Call, Load = ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Load
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def rule_label(qualname: str) -> str | None:
    """The label of a qualified name: its longest dotted prefix in :data:`RULES` decides."""
    name = qualname
    while True:
        if name in RULES:
            return RULES[name]
        cut = name.rfind(".")
        if cut < 0:
            return None
        name = name[:cut]


def _subtree_labels(module: str) -> set[str]:
    """Labels a ``from module import *`` can bring in."""
    own = rule_label(module)
    if own:
        return {own}
    prefix = module + "."
    return {label for key, label in RULES.items() if key.startswith(prefix) and label}


class _Scope:
    """Marker pushed on the walk stack: enter (fn set) or leave (fn None) a function scope."""

    __slots__ = ("fn",)

    def __init__(self, fn: ast.AST | None) -> None:
        self.fn = fn


_LEAVE = _Scope(None)


def _target_names(node: ast.AST | None) -> Iterable[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for elt in node.elts:
            yield from _target_names(elt)
    elif isinstance(node, ast.Starred):
        yield from _target_names(node.value)


def _import_bindings(node: ast.Import | ast.ImportFrom) -> Iterable[tuple[str, str | None]]:
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


def _function_locals(fn: ast.AST) -> frozenset[str]:
    """Names a function, lambda or comprehension binds in its own scope."""
    if isinstance(fn, _COMPREHENSIONS):
        return frozenset(n for gen in fn.generators for n in _target_names(gen.target))
    args = fn.args  # type: ignore[attr-defined]
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    if isinstance(fn, ast.Lambda):
        return frozenset(names)
    declared: set[str] = set()
    stack: list[ast.AST] = list(fn.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue  # its body is another scope (decorators rarely bind anything)
        elif isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(bound for bound, _ in _import_bindings(node))
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared)


class _Scanner:
    def __init__(self, tree: ast.Module) -> None:
        self.hits: set[Hit] = set()
        self.imports: dict[str, set[str]] = {}  # name -> qualified names it is bound to
        self.assigned: dict[str, list[ast.expr]] = {}  # name -> simple alias right-hand sides
        self.module_bound: dict[str, int] = {}  # name -> first top-level statement binding it
        self.module_defs: set[str] = set()  # bound at module level by def, class or import
        self.bound_anywhere: set[str] = set()
        self.scopes: list[ast.AST] = []
        self.locals_cache: dict[int, frozenset[str]] = {}
        self.top = 0
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
                for bound, qual in _import_bindings(stmt):
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
                    if isinstance(target, ast.Name) and isinstance(value, Name | Attribute):
                        self.assigned.setdefault(target.id, []).append(value)
                    for name in _target_names(target):
                        self._bind(name, index, in_function, False)
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
                for name in _target_names(stmt.target):
                    self._bind(name, index, in_function, False)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                for item in stmt.items:
                    for name in _target_names(item.optional_vars):
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

    def _expr_quals(self, expr: ast.AST, seen: set[str]) -> set[str]:
        attrs: list[str] = []
        while type(expr) is Attribute:
            attrs.append(expr.attr)  # type: ignore[attr-defined]
            expr = expr.value  # type: ignore[attr-defined]
        if type(expr) is not Name:
            return set()
        name = expr.id  # type: ignore[attr-defined]
        if name in self.imports or name in self.assigned:
            bases = set(self._alias_quals(name, seen))
        elif name in _BUILTIN_BASE and name not in self.bound_anywhere:
            bases = {_BUILTIN_BASE[name]}
        else:
            return set()
        suffix = "".join(f".{a}" for a in reversed(attrs))
        return {base + suffix for base in bases}

    def _resolve(self, expr: ast.AST) -> set[str]:
        """Qualified names ``expr`` may stand for; empty when the scan cannot tell."""
        attrs: list[str] = []
        while type(expr) is Attribute:
            attrs.append(expr.attr)  # type: ignore[attr-defined]
            expr = expr.value  # type: ignore[attr-defined]
        if type(expr) is not Name:
            return set()
        name = expr.id  # type: ignore[attr-defined]
        if name in _BUILTIN_BASE and self._is_builtin(name):
            bases = {_BUILTIN_BASE[name]}
        else:
            bases = set(self.quals.get(name, ()))
        if not bases:
            return bases
        suffix = "".join(f".{a}" for a in reversed(attrs))
        return {base + suffix for base in bases}

    def _is_builtin(self, name: str) -> bool:
        """Whether a bare ``name`` here refers to the builtin (not to a binding of the file)."""
        for fn in reversed(self.scopes):
            names = self.locals_cache.get(id(fn))
            if names is None:
                names = self.locals_cache[id(fn)] = _function_locals(fn)
            if name in names:
                return False
        if self.scopes:
            return name not in self.module_defs
        first = self.module_bound.get(name)
        return first is None or first >= self.top

    # -- the walk ---------------------------------------------------------------------------

    def add(self, label: str | None, detail: str, node: ast.AST) -> None:
        if label:
            self.hits.add(Hit(getattr(node, "lineno", 0), label, detail))

    def run(self, tree: ast.Module) -> None:
        for index, stmt in enumerate(tree.body):
            self.top = index
            self._walk(stmt)

    def _walk(self, root: ast.AST) -> None:
        stack: list[object] = [root]
        pop, push = stack.pop, stack.append
        watch, interesting, string_rx = self.watch, _INTERESTING, _STRING_RX
        while stack:
            node = pop()
            kind = type(node)
            if kind is Name:
                if node.id in watch and type(node.ctx) is Load:  # type: ignore[attr-defined]
                    self._name_value(node)  # type: ignore[arg-type]
                continue
            if kind is Attribute:
                if node.attr in interesting:  # type: ignore[attr-defined]
                    self._attribute(node, node.attr, node.value)  # type: ignore[attr-defined]
                base = node.value  # type: ignore[attr-defined]
                if type(base) is Name:
                    if base.id in BUILTIN_WATCH:
                        self._name_base(base)
                else:
                    push(base)
                continue
            if kind is Constant:
                value = node.value  # type: ignore[attr-defined]
                if type(value) is str and string_rx.search(value):
                    self._string(node, value)  # type: ignore[arg-type]
                continue
            if kind is _Scope:
                if node.fn is None:  # type: ignore[attr-defined]
                    self.scopes.pop()
                else:
                    self.scopes.append(node.fn)  # type: ignore[attr-defined]
                continue
            special = _SPECIAL.get(kind)
            if special is not None and special(self, node, push):
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

    def _name_value(self, node: ast.Name) -> None:
        name = node.id
        if name in BUILTIN_WATCH:
            self._name_base(node)
            return
        for qual in sorted(self.quals.get(name, ()) & VALUE_SENSITIVE):
            self.add(REFLECTION, f"{qual} passed as a value", node)

    def _name_base(self, node: ast.Name) -> None:
        """A bare name used as an attribute's object, an alias's value or getattr's object."""
        name = node.id
        if name in BUILTIN_WATCH and self._is_builtin(name):
            self.add(BUILTIN_WATCH[name], _BUILTIN_DETAIL.get(name, name), node)

    def _attribute(self, node: ast.AST, attr: str, obj: ast.AST) -> None:
        """``obj.attr`` (or ``getattr(obj, "attr")``) with an interesting ``attr``."""
        quals = self._resolve(obj)
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
        elif attr in UNKNOWN_ATTR and not (quals and type(obj) is Name):  # shutil.os.system
            self.add(UNKNOWN_ATTR[attr], f"a .{attr} attribute", node)

    def _string(self, node: ast.Constant, text: str) -> None:
        for match in _STRING_RX.finditer(text):
            if match.group(1):
                dunder = f"__{match.group(1)}__"
                self.add(ANY_ATTR.get(dunder, REFLECTION), f'"{dunder}" in a string', node)
            else:
                qual = f"{match.group(2)}.{match.group(3)}"
                label = rule_label(qual)
                if label:
                    self.add(label, f'"{match.group(0)}" in a string', node)

    def _literal_names(self, node: ast.Call, label_fn: str, names: list[ast.expr]) -> None:
        """attrgetter / methodcaller: every name a literal, each checked like an attribute."""
        for arg in names:
            if not (type(arg) is Constant and type(arg.value) is str):
                self.add(REFLECTION, f"{label_fn} with a computed name", node)
                continue
            for part in arg.value.split("."):
                label = ANY_ATTR.get(part) or UNKNOWN_ATTR.get(part)
                if label:
                    self.add(label, f'{label_fn}("{arg.value}")', node)


def _visit_call(scanner: _Scanner, node: ast.Call, push) -> bool:
    func, args = node.func, node.args
    special: str | None = None
    if type(func) is Name:
        name = func.id
        if name in ("getattr", "setattr", "delattr", "hasattr", "vars"):
            if scanner._is_builtin(name):
                special = name
        elif name in scanner.value_names:
            quals = scanner.quals[name] & CONDITIONAL
            special = next(iter(quals)) if quals else None
    elif type(func) is Attribute and func.attr in ("attrgetter", "methodcaller"):
        quals = scanner._resolve(func) & CONDITIONAL
        special = next(iter(quals)) if quals else None
    if special is None:
        return False
    rest: list[ast.AST] = [*args, *node.keywords]
    if special in ("getattr", "setattr", "delattr", "hasattr") and args:
        obj, rest = args[0], rest[1:]
        literal = len(args) > 1 and type(args[1]) is Constant and type(args[1].value) is str
        if literal:
            attr = args[1].value  # type: ignore[union-attr]
            if special == "getattr":
                scanner._attribute(node, attr, obj)
            elif attr.startswith("__") and ANY_ATTR.get(attr):
                scanner.add(REFLECTION, f'{special}(..., "{attr}")', node)
        elif special == "getattr":
            scanner.add(REFLECTION, "getattr with a computed name", node)
        if literal and type(obj) is Name:
            scanner._name_base(obj)  # getattr(os, "path") is os.path: os is not a value here
        else:
            push(obj)
    elif special == "vars":
        if not args:
            scanner.add(REFLECTION, "vars()", node)
        elif type(args[0]) in (Name, Attribute):
            if scanner._resolve(args[0]):
                scanner.add(REFLECTION, "vars() of a module", node)
        else:
            scanner.add(REFLECTION, "vars() of a computed object", node)
    elif special == "operator.attrgetter":
        scanner._literal_names(node, "attrgetter", args)
    elif special == "operator.methodcaller":
        scanner._literal_names(node, "methodcaller", args[:1])
    for child in rest:
        push(child)
    return True


def _is_sys_modules(scanner: _Scanner, expr: ast.AST) -> bool:
    return (
        type(expr) is Attribute
        and expr.attr == "modules"
        and "sys.modules" in scanner._resolve(expr)
    )


def _visit_expr(scanner: _Scanner, node: ast.Expr, push) -> bool:
    value = node.value
    if type(value) is Constant:
        return True  # a docstring or a bare string: documentation, never executed
    if (  # sys.modules.setdefault("sklearn", None): blocks an import, reads nothing back
        type(value) is Call
        and type(value.func) is Attribute
        and value.func.attr in ("setdefault", "pop")
        and _is_sys_modules(scanner, value.func.value)
    ):
        for child in (*value.args, *value.keywords):
            push(child)
        return True
    return False


def _visit_subscript(scanner: _Scanner, node: ast.Subscript, push) -> bool:
    if type(node.ctx) is not Load and _is_sys_modules(scanner, node.value):
        push(node.slice)  # sys.modules[name] = None / del sys.modules[name]
        return True
    return False


def _visit_assign(scanner: _Scanner, node: ast.Assign, push) -> bool:
    value = node.value
    if len(node.targets) == 1 and type(node.targets[0]) is Name and type(value) is Name:
        scanner._name_base(value)  # `o = os` is an alias, followed by the alias map
        return True
    return False


def _visit_import(scanner: _Scanner, node: ast.Import, push) -> bool:
    for alias in node.names:
        label = rule_label(alias.name)
        if label and alias.name not in CONDITIONAL:
            scanner.add(label, f"import {alias.name}", node)
    return True


def _visit_import_from(scanner: _Scanner, node: ast.ImportFrom, push) -> bool:
    if node.level or not node.module:
        return True  # a relative import: one of the candidate's own files
    for alias in node.names:
        if alias.name == "*":
            for label in sorted(_subtree_labels(node.module)):
                scanner.add(label, f"from {node.module} import *", node)
            continue
        qual = f"{node.module}.{alias.name}"
        label = rule_label(qual)
        if label and qual not in CONDITIONAL:
            scanner.add(label, qual, node)
    return True


def _visit_function(scanner: _Scanner, node: ast.AST, push) -> bool:
    """Defaults, decorators and annotations run outside the function; its body inside."""
    push(_LEAVE)
    if isinstance(node, ast.Lambda):
        push(node.body)
    else:
        for stmt in node.body:  # type: ignore[attr-defined]
            push(stmt)
    push(_Scope(node))
    args = node.args  # type: ignore[attr-defined]
    for default in (*args.defaults, *args.kw_defaults):
        if default is not None:
            push(default)
    if not isinstance(node, ast.Lambda):
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.annotation is not None:
                push(arg.annotation)
        for expr in (*node.decorator_list, node.returns):  # type: ignore[attr-defined]
            if expr is not None:
                push(expr)
    return True


def _visit_comprehension(scanner: _Scanner, node: ast.AST, push) -> bool:
    """The first iterable runs outside the comprehension; the rest inside its own scope."""
    generators = node.generators  # type: ignore[attr-defined]
    push(_LEAVE)
    for field in ("elt", "key", "value"):
        if hasattr(node, field):
            push(getattr(node, field))
    for index, gen in enumerate(generators):
        for cond in gen.ifs:
            push(cond)
        if index:
            push(gen.iter)
    push(_Scope(node))
    push(generators[0].iter)
    return True


_SPECIAL = {
    ast.Call: _visit_call,
    ast.Expr: _visit_expr,
    ast.Subscript: _visit_subscript,
    ast.Assign: _visit_assign,
    ast.Import: _visit_import,
    ast.ImportFrom: _visit_import_from,
    ast.FunctionDef: _visit_function,
    ast.AsyncFunctionDef: _visit_function,
    ast.Lambda: _visit_function,
    **dict.fromkeys(_COMPREHENSIONS, _visit_comprehension),
}


@lru_cache(maxsize=256)
def scan_python(source: str) -> tuple[Hit, ...] | None:
    """The capabilities a Python file reaches for, sorted by line; ``None`` if it does not parse.

    Results are cached by source text, so a parent scanned when it was a child is free.
    """
    try:
        tree = ast.parse(source)
        scanner = _Scanner(tree)
        scanner.run(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the caller falls back to the text check
    return tuple(sorted(scanner.hits))
