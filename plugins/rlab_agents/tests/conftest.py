"""The agents' tests import their helpers (the fake LLM server, the stand-in tools) from here."""

from __future__ import annotations

import sys
from pathlib import Path

from rlab_core.testing.fixtures import (  # noqa: F401  (autouse: each test's own base)
    isolated_knowledge_base,
    module_knowledge_base,
)

HERE = Path(__file__).resolve().parent
# pytest's importlib mode puts no folder on sys.path; `from fake_llm import ...` needs this one
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
