"""Shared fixtures of the RelBench plugin's tests."""

from rlab_core.testing.fixtures import (  # noqa: F401  (autouse: each test's own base)
    isolated_knowledge_base,
    module_knowledge_base,
)
