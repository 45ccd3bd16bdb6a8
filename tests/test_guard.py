"""The token guard, the candidate environment and the static audit."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlab_core.errors import GuardRefusal
from rlab_core.guard import (
    audit_source,
    candidate_environment,
    check_new_tokens,
    core_audit_patterns,
    is_secret_name,
)
from rlab_core.interfaces import AuditPattern

PARENT = {"main.py": "import numpy as np\nmodel.eval()\n"}


@pytest.mark.parametrize(
    "code",
    [
        "import subprocess",
        "import socket",
        "import requests",
        "from urllib.request import urlopen",
        "import httpx",
        "import openai",
        "import anthropic",
        "os.system('ls')",
        "os.popen('ls')",
        "eval('1+1')",
        "exec('x=1')",
        "import importlib",
        "__import__('os')",
        "import ctypes",
    ],
)
def test_new_dangerous_tokens_are_refused(code):
    with pytest.raises(GuardRefusal, match="introduces"):
        check_new_tokens({"main.py": PARENT["main.py"] + code + "\n"}, PARENT)


def test_tokens_the_parent_had_are_allowed_and_method_calls_are_not_eval():
    parent = {"main.py": "import subprocess\n"}
    check_new_tokens({"main.py": "import subprocess\nsubprocess.run(['true'])\n"}, parent)
    check_new_tokens({"main.py": PARENT["main.py"] + "net.eval()\nx = evaluate(1)\n"}, PARENT)


def test_task_tokens_extend_the_denylist():
    with pytest.raises(GuardRefusal, match="read_parquet"):
        check_new_tokens(
            {"main.py": "pd.read_parquet('raw')\n"}, {"main.py": ""}, extra=["read_parquet"]
        )


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
    assert ("main.py", 2, "uses socket") in found
    assert ("main.py", 3, "names the hidden path /srv/raw") in found
    assert ("feat.py", 1, "reads labels") in found
    assert len(findings) == 3
    assert audit_source({"main.py": "import numpy as np\n"}, patterns) == []
