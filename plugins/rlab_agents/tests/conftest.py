"""Fixtures for the agents' tests: the core's toy benchmark and the fake LLM server."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORE_TESTS = HERE.parents[2] / "tests"  # the toy benchmark lives with the core's tests
for folder in (HERE, CORE_TESTS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
