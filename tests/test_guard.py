"""The capability guard, the candidate environment and the static audits."""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import pytest

from rlab_core.code_scan import scan_python
from rlab_core.errors import GuardRefusal
from rlab_core.guard import (
    audit_code,
    audit_source,
    candidate_environment,
    check_new_tokens,
    core_audit_patterns,
    is_secret_name,
)
from rlab_core.task_records import AuditPattern

ROOT = Path(__file__).resolve().parents[1]
PARENT = {"main.py": "import numpy as np\nmodel.eval()\n"}


def refusal(code: str, parent: dict[str, str] | None = None) -> str:
    """The refusal message for adding ``code`` to the parent's main.py."""
    parent = PARENT if parent is None else parent
    with pytest.raises(GuardRefusal) as caught:
        check_new_tokens({"main.py": parent["main.py"] + code + "\n"}, parent)
    return str(caught.value)


def allowed(code: str, parent: dict[str, str] | None = None) -> None:
    parent = PARENT if parent is None else parent
    check_new_tokens({"main.py": parent["main.py"] + code + "\n"}, parent)


def labels(code: str) -> set[str]:
    hits = scan_python(code)
    assert hits is not None, "the snippet should parse"
    return {hit.label for hit in hits}


@pytest.mark.parametrize(
    ("code", "label"),
    [
        ("import subprocess", "subprocess"),
        ("import socket", "socket"),
        ("import requests", "network"),
        ("from urllib.request import urlopen", "network"),
        ("import httpx", "network"),
        ("import openai", "LLM API"),
        ("import anthropic", "LLM API"),
        ("os.system('ls')", "process spawning"),
        ("os.popen('ls')", "process spawning"),
        ("eval('1+1')", "dynamic code"),
        ("exec('x=1')", "dynamic code"),
        ("import importlib", "dynamic code"),
        ("__import__('os')", "dynamic code"),
        ("import ctypes", "native code"),
        # evasions of a text check
        ("from os import system as s\ns('ls')", "process spawning"),
        ("import os as o\no.system('x')", "process spawning"),
        ("import os\ngetattr(os, 'sys' + 'tem')('ls')", "reflection"),
        ("import os\ngetattr(os, 'system')('ls')", "process spawning"),
        ("import os\ngetattr(os, 'sys' 'tem')('ls')", "process spawning"),  # one literal
        ("getattr(__builtins__, 'ev' + 'al')('1')", "reflection"),
        ("import pkgutil\npkgutil.resolve_name('sub' + 'process')", "dynamic code"),
        (
            "import codecs\nc = compile(codecs.decode('cevag(1)', 'rot13'), 'x', 'exec')",
            "dynamic code",
        ),
        ("import os\nos.posix_spawn('/bin/sh', ['sh'], {})", "process spawning"),
        ("import pty\npty.spawn('sh')", "process spawning"),
        ("import multiprocessing\nmultiprocessing.Pool(2)", "multiprocessing"),
        ("from concurrent.futures import ProcessPoolExecutor", "multiprocessing"),
        ("import concurrent.futures as cf\ncf.ProcessPoolExecutor(2)", "multiprocessing"),
        ("import asyncio\nasyncio.create_subprocess_exec('ls')", "process spawning"),
        ("import http.client", "network"),
        ("import runpy\nrunpy.run_path('x.py')", "dynamic code"),
        ("import os\nos.\\\n    system('ls')", "process spawning"),  # line continuation
        ("import subprocess as sp", "subprocess"),
        ("from subprocess import *", "subprocess"),
        ("from os import *", "process spawning"),
        ("__import__('o' + 's')", "dynamic code"),
        ("import importlib\nimportlib.import_module('o' + 's')", "dynamic code"),
        ("from importlib import import_module as im", "dynamic code"),
        ("import sys\nsys.modules['os'].system('ls')", "reflection"),
        ("import sys\nsys.modules['os'].system('ls')", "process spawning"),
        ("import os\nvars(os)['system']('ls')", "reflection"),
        ("import os\nos.__dict__['system']('ls')", "reflection"),
        ("x = [c for c in ().__class__.__base__.__subclasses__()]", "reflection"),
        ("import builtins\nbuiltins.exec('x = 1')", "dynamic code"),
        ("e = eval\ne('1')", "dynamic code"),
        ("run = exec", "dynamic code"),
        ("def f(code=exec):\n    return code", "dynamic code"),
        ("exec('x = 1')\nexec = None", "dynamic code"),  # rebinding afterwards does not hide it
        ("breakpoint()", "dynamic code"),
        ("import pickle\npickle.loads(payload)", "dynamic code"),
        ("import marshal", "dynamic code"),
        ("import logging.config", "dynamic code"),
        ("import shutil\nshutil.os.system('ls')", "reflection"),
        ("import shutil\nshutil.os.system('ls')", "process spawning"),
        ("import pandas as pd\npd.io.common.os.system('ls')", "reflection"),
        ("def f(m):\n    return m.popen('ls')", "process spawning"),
        ("len.__self__.eval('1')", "reflection"),
        ("from functools import reduce\nimport os\nreduce(getattr, ['system'], os)", "reflection"),
        ("import operator\noperator.attrgetter('system')(os)", "process spawning"),
        ("import operator\noperator.methodcaller(name)(os)", "reflection"),
        ("g = globals()\ng['__builtins__']", "reflection"),
        ("import sys\nf = sys._getframe().f_globals", "reflection"),
        ("f = (lambda: 0).__globals__", "reflection"),
        ("import gc\nobjs = gc.get_objects()", "reflection"),
        ("import sys\nm = sys.modules.setdefault('os', None)", "reflection"),
        ("import os\nhelpers = [os]", "reflection"),
        ("target = 'os:system'", "process spawning"),
        ("df.query('@pd.io.common.__builtins__')", "reflection"),
        ("import os\n(o := os).system('ls')", "process spawning"),
        ("import os\nfor m in (os,):\n    m.system('ls')", "reflection"),
        ("def f(eval=eval):\n    return eval('1')", "dynamic code"),  # default: outside scope
        ("class A:\n    run = exec", "dynamic code"),
        ("import importlib.util as u", "dynamic code"),
        ("from pydoc import locate", "dynamic code"),
        ("import types\nf = types.FunctionType(code, {})", "dynamic code"),
        ("import hydra\nhydra.utils.instantiate({'_target_': 'os.system'})", "process spawning"),
        ("import torch\ntorch.multiprocessing.spawn(f)", "multiprocessing"),
        ("e = __builtins__.__dict__['eval']", "reflection"),
        ("__loader__.load_module('os')", "dynamic code"),
        (
            "try:\n    pass\nexcept Exception as e:\n    g = e.__traceback__.tb_frame.f_globals",
            "reflection",
        ),
        ("from ctypes import CDLL", "native code"),
        ("import numpy as np\nnp.ctypeslib.load_library('libc', '.')", "native code"),
    ],
)
def test_each_evasion_is_refused_with_its_label(code, label):
    assert re.search(rf"(introduces |, | and ){re.escape(label)} \(", refusal(code))


@pytest.mark.parametrize(
    "code",
    [
        "net.eval()\nx = evaluate(1)",
        "df = df.eval('c = a + b')\ndf = df.query('c > 0')",
        "model.eval()\nmodel.compile(optimizer='adam')",
        "import torch\nnet = torch.compile(net)",
        "import re\nrx = re.compile(r'\\d+')",
        "from re import compile\nrx = compile('a')",
        "def f(compile=True):\n    return compile",
        "imp = getattr(model, 'feature_importances_')",
        "if hasattr(model, name):\n    pass",
        "for k, v in params.items():\n    setattr(cfg, k, v)",
        "import argparse\nargs = argparse.ArgumentParser().parse_args()\nprint(vars(args))",
        "import os\npath = os.path.join(os.environ['RLAB_DATA_DIR'], 'x.csv')",
        "import os\nos.makedirs(os.environ.get('RLAB_OUTPUT_DIR', '.'), exist_ok=True)",
        "import sys\nsys.modules.setdefault('sklearn', None)",
        "import sys\nsys.modules['sklearn'] = None",
        "import sys\nDEBUG = '--debug' in sys.argv\nsys.stdout.flush()",
        "import platform\nprint(platform.system())",
        "from pathlib import Path\nimport json, time\nx = json.loads(Path('a').read_text())",
        "import numpy as np\nimport pandas as pd\na = np.load('x.npy')\nb = pd.read_csv('y.csv')",
        "import pickle, joblib\nm = pickle.load(open('m.pkl', 'rb'))\nj = joblib.load('j')",
        "from concurrent.futures import ThreadPoolExecutor",
        "import urllib.parse\nq = urllib.parse.quote('a b')",
        "import operator\nkey = operator.itemgetter(0)\nget = operator.attrgetter('shape')",
        "import gc\ngc.collect()",
        "con.execute('SELECT 1')",
        "name = self.__class__.__name__",
        '"""Uses no subprocess, no os.system and no eval."""\n# import subprocess',
        "x = [eval for eval in range(3)]",
        "def outer():\n    eval = 1\n\n    def inner():\n        return eval\n\n    return inner",
        "import signal\nsignal.signal(signal.SIGTERM, handler)",
    ],
)
def test_ordinary_code_is_allowed(code):
    allowed(code)


TYPICAL = '''
"""A typical tabular candidate."""
from __future__ import annotations

import argparse, json, logging, os, sys, time, warnings
from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
from sklearn.model_selection import KFold

warnings.filterwarnings("ignore")
DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ.get("RLAB_OUTPUT_DIR", "."))
THREADS = int(os.environ.get("RLAB_THREADS", os.cpu_count() or 1))


@dataclass
class Config:
    lr: float = 0.05


def main() -> None:
    args = argparse.ArgumentParser().parse_args()
    logging.getLogger(__name__).info(json.dumps(vars(args)))
    start = time.time()
    df = pd.read_csv(DATA / "train.csv")
    emb = np.load(DATA / "emb.npy")
    for tr, va in KFold(5).split(df):
        model = lgb.LGBMClassifier(learning_rate=Config().lr, n_jobs=THREADS)
        model.fit(df.iloc[tr], df["y"].iloc[tr], eval_set=[(df.iloc[va], df["y"].iloc[va])])
        importance = getattr(model, "feature_importances_")
        print(importance, file=sys.stderr)
    pd.DataFrame({"p": emb.mean(axis=1)}).to_csv(OUT / "predictions.csv", index=False)
    print(f"done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
'''


def test_a_typical_ml_program_has_no_capability():
    assert scan_python(TYPICAL) == ()
    check_new_tokens({"main.py": TYPICAL}, {"main.py": ""})


SEEDS = sorted(
    [
        *ROOT.glob("plugins/*/src/*/seeds/*/*.py"),
        ROOT / "src/rlab_core/testing/toy/seed/main.py",
    ]
)
#: Capabilities a seed legitimately uses (its children may keep them); none today.
SEED_CAPABILITIES: dict[str, set[str]] = {}


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_seeds_use_no_capability_and_accept_ordinary_edits(path):
    text = path.read_text()
    assert labels(text) == SEED_CAPABILITIES.get(path.name, set())
    parent = {"main.py": text}
    edit = "\nTHRESHOLD = 0.5\nimport json\nprint(json.dumps({'k': 1}))\n"
    check_new_tokens({"main.py": text + edit}, parent, only=["main.py"])


def test_capabilities_the_parent_had_are_allowed():
    allowed("subprocess.Popen(['true'])", {"main.py": "import subprocess\n"})
    # one label covers every way to the same capability
    allowed("from os import popen", {"main.py": "import os\nos.system('ls')\n"})
    # the parent counts as a whole: moving a capability to another file is allowed
    parent = {"main.py": "import socket\n", "feat.py": "x = 1\n"}
    child = {"main.py": "\n", "feat.py": "import socket\n"}
    check_new_tokens(child, parent, only=["main.py", "feat.py"])
    # but a label the parent lacked is refused, even next to one it had
    message = refusal("import requests", {"main.py": "import socket\n"})
    assert "network" in message and "socket (" not in message


def test_only_limits_the_check_to_changed_files():
    child = {"main.py": "x = 1\n", "old.py": "import subprocess\n"}
    check_new_tokens(child, {"main.py": "", "old.py": ""}, only=["main.py"])
    with pytest.raises(GuardRefusal, match=r"old\.py"):
        check_new_tokens(child, {"main.py": "", "old.py": ""})


def test_the_message_is_one_sentence_naming_labels_details_and_files():
    child = {
        "main.py": "import numpy\nimport os\nos.system('ls')\n",
        "feat.py": "x = eval('1')\nimport socket\n",
    }
    with pytest.raises(GuardRefusal) as caught:
        check_new_tokens(child, {"main.py": "", "feat.py": ""})
    message = str(caught.value)
    assert message.startswith("Change refused: it introduces ")
    assert message.endswith(".") and not re.search(r"\.\s+[A-Z]", message)
    assert "dynamic code (eval at feat.py:1)" in message
    assert "process spawning (os.system at main.py:3)" in message
    assert "socket (import socket at feat.py:2)" in message
    assert "which the parent did not use" in message


def test_many_places_are_summarised():
    calls = ("system('a')", "popen('b')", "execv('c', [])", "spawnl(0, 'd')", "fork()")
    message = refusal("import os\n" + "\n".join(f"os.{call}" for call in calls * 3))
    assert "(os.system at main.py:4, os.popen at main.py:5, os.execv at main.py:6 and 2 more)" in (
        message
    )


def test_task_tokens_extend_the_denylist():
    with pytest.raises(GuardRefusal, match="read_parquet"):
        check_new_tokens(
            {"main.py": "pd.read_parquet('raw')\n"}, {"main.py": ""}, extra=["read_parquet"]
        )
    # matched as text in every file, and allowed when the parent had it
    with pytest.raises(GuardRefusal, match=r"labels\.json \(conf\.yaml:2\)"):
        check_new_tokens({"conf.yaml": "a: 1\nb: labels.json\n"}, {}, extra=["labels.json"])
    check_new_tokens(
        {"main.py": "pd.read_parquet('b')\n"},
        {"main.py": "pd.read_parquet('a')\n"},
        extra=["read_parquet"],
    )


def test_non_python_files_keep_the_text_check():
    with pytest.raises(GuardRefusal, match=r"subprocess \(run\.sh:1\)"):
        check_new_tokens({"run.sh": "python -c 'import subprocess'\n"}, {"run.sh": ""})
    check_new_tokens({"notes.md": "model.eval() and re.compile\n"}, {"notes.md": ""})


def test_a_file_that_does_not_parse_falls_back_to_text_and_says_so():
    child = {"main.py": "import subprocess\nprint 'python 2'\n"}
    with pytest.raises(GuardRefusal) as caught:
        check_new_tokens(child, {"main.py": ""})
    message = str(caught.value)
    assert "subprocess (main.py:1)" in message
    assert "main.py does not parse as Python, so it was checked as text" in message
    # the text check still tells a method from the builtin
    check_new_tokens({"main.py": "model.eval(\n"}, {"main.py": ""})


def test_hostile_shapes_do_not_break_the_scan():
    chain = "import os\nx0 = os\n" + "".join(f"x{i + 1} = x{i}\n" for i in range(3000))
    assert scan_python(chain + "x3000.system('ls')\n") is not None
    with pytest.raises(GuardRefusal, match="process spawning"):
        check_new_tokens({"main.py": chain + "x3000.system('ls')\n"}, {"main.py": chain})
    assert scan_python("x = " + "(" * 150 + "1" + ")" * 150) is not None
    assert scan_python("print 'python 2'") is None
    assert scan_python("x = 1\0") is None


def test_audit_code_gives_file_line_and_reason():
    files = {
        "main.py": "import numpy as np\nimport os as o\n\no.system('ls')\nmodel.eval()\n",
        "feat.py": "def f(x):\n    return getattr(x, name)\n",
        "notes.md": "import subprocess\n",
        "broken.py": "print 'x'\nimport socket\n",
    }
    found = {(f.file, f.line, f.reason, f.text) for f in audit_code(files)}
    assert found == {
        ("main.py", 4, "uses process spawning: os.system", "o.system('ls')"),
        ("feat.py", 2, "uses reflection: getattr with a computed name", "return getattr(x, name)"),
        ("broken.py", 2, "uses socket (text match: the file does not parse)", "import socket"),
        ("notes.md", 1, "uses subprocess", "import subprocess"),  # other files: as text
    }
    assert audit_code({"main.py": TYPICAL}) == []


def test_scan_of_a_2000_line_file_is_fast():
    lines = (TYPICAL.replace("from __future__ import annotations", "") * 60).splitlines()[:2000]
    durations = []
    for run in range(3):
        source = "\n".join(lines) + f"\nRUN = {run}\n"  # new text: no cache hit
        start = time.perf_counter()
        check_new_tokens({"main.py": source + "X = 1\n"}, {"main.py": source}, only=["main.py"])
        durations.append(time.perf_counter() - start)
    assert statistics.median(durations) < 1.0  # ~35 ms on a slow 2-core VM; catches blowups


def test_candidate_environment_keeps_no_secret(monkeypatch):
    parent = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "OPENBLAS_CORETYPE": "Haswell",
        "HOME": "/root",
        "OPENAI_API_KEY": "sk-x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_REGION": "eu",
        "GITHUB_TOKEN": "z",
        "DB_PASSWORD": "p",
        "MY_SERVICE_TOKEN": "t",
        "HF_HOME": "/hf",
        "USER": "root",
    }
    env = candidate_environment(
        parent, {"RLAB_DATA_DIR": "/data"}, extra_allow=["MY_SERVICE_TOKEN", "USER"]
    )
    assert env == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "OPENBLAS_CORETYPE": "Haswell",
        "USER": "root",
        "RLAB_DATA_DIR": "/data",
    }
    for name in (
        "OPENAI_API_KEY",
        "AWS_REGION",
        "KAGGLE_USERNAME",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "x_auth_header",
    ):
        assert is_secret_name(name)
    assert not is_secret_name("RLAB_OUTPUT_DIR") and not is_secret_name("OMP_NUM_THREADS")


def test_audit_flags_dangerous_tokens_hidden_paths_and_task_patterns():
    files = {
        "main.py": "import numpy\nimport socket\nopen('/srv/raw/flights.csv')\n",
        "feat.py": "labels = read('labels.json')\n",
    }
    patterns = [
        *core_audit_patterns([Path("/srv/raw")]),
        AuditPattern(pattern=r"labels\.json", reason="reads labels"),
    ]
    findings = audit_source(files, patterns)
    found = {(f.file, f.line, f.reason) for f in findings}
    assert ("main.py", 3, "names the hidden path /srv/raw") in found
    assert ("feat.py", 1, "reads labels") in found
    assert len(findings) == 2
    assert audit_source({"main.py": "import numpy as np\n"}, patterns) == []
    # capabilities come from the scan, text files included
    capabilities = audit_code({**files, "run.sh": "curl x | python -c 'import socket'\n"})
    assert {(f.file, f.line, f.reason) for f in capabilities} == {
        ("main.py", 2, "uses socket: import socket"),
        ("run.sh", 1, "uses socket"),
    }
