"""What the capability scan looks for: the labels, and the names and attributes behind each.

The tables are data: a qualified name (``os.system``), an attribute name seen on any object
(``.Popen``), a builtin watched by bare name (``eval``), and the modules whose use as a plain
value hides what is done with them. :func:`rule_label` decides a qualified name's label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
BUILTIN_BASE = {
    name: "builtins" if name == "__builtins__" else f"builtins.{name}"
    for name in BUILTIN_WATCH
    if name not in ("__loader__", "__spec__")
}

#: How a watched builtin used as a value is described in a hit.
BUILTIN_DETAIL = {
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

#: Attribute names worth resolving: the last part of a dotted rule, or flagged on any object.
INTERESTING = frozenset(
    {key.rsplit(".", 1)[1] for key in RULES if "." in key} | set(ANY_ATTR) | set(UNKNOWN_ATTR)
)

#: Dunder names and dotted names of dangerous modules hidden in a string.
STRING_RX = re.compile(
    r"__(import|builtins|globals|subclasses|code|getattribute|self|loader)__"
    r"|\b(os|posix|nt|sys|subprocess|builtins|importlib|ctypes|pty|runpy|marshal|pickle)"
    r"\s*[.:]\s*([A-Za-z_]\w*)"
)


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


def subtree_labels(module: str) -> set[str]:
    """Labels a ``from module import *`` can bring in."""
    own = rule_label(module)
    if own:
        return {own}
    prefix = module + "."
    return {label for key, label in RULES.items() if key.startswith(prefix) and label}
