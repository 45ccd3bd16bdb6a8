"""The plugin-author kit: conformance suites per kind and pytest fixtures.

Use the fixtures by adding ``pytest_plugins = ["rlab_core.testing.fixtures"]`` to a
``conftest.py``; call the ``check_*`` functions of :mod:`rlab_core.testing.conformance`
from your tests.
"""

from rlab_core.testing.conformance import (
    check_agent,
    check_benchmark,
    check_sandbox,
    check_strategy,
    run_candidate,
)

__all__ = ["check_agent", "check_benchmark", "check_sandbox", "check_strategy", "run_candidate"]
