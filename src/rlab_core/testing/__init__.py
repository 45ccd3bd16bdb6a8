"""The plugin-author kit: conformance suites per kind, a toy task and agents, pytest fixtures.

- :mod:`rlab_core.testing.conformance`: the ``check_*`` functions (and ``run_candidate``)
  to call from your tests;
- :mod:`rlab_core.testing.toy`: the ``toy`` benchmark (``toy:line``) and the ``scripted``
  agent, registered by :mod:`rlab_core.testing.toy.plugin`: a real loop in seconds, to test
  an agent, a strategy, a sandbox or an observer against;
- :mod:`rlab_core.testing.playbook`: the ``ranked-playbook`` agent, which plays a task's
  playbook moves in rank order: to run a benchmark's moves through a real loop;
- :mod:`rlab_core.testing.knowledge_pages`: ``check_knowledge_pages``, a benchmark's curated
  pages (``rlab_knowledge_pages``) read as agents will read them;
- :mod:`rlab_core.testing.fixtures`: pytest fixtures; enable them with
  ``pytest_plugins = ["rlab_core.testing.fixtures"]`` in a ``conftest.py``.
"""

from rlab_core.testing.conformance import (
    check_agent,
    check_benchmark,
    check_sandbox,
    check_strategy,
    run_candidate,
)
from rlab_core.testing.knowledge_pages import check_knowledge_pages
from rlab_core.testing.playbook import RankedPlaybookAgent
from rlab_core.testing.toy import SEED_DIR as TOY_SEED_DIR
from rlab_core.testing.toy.agent import ScriptedAgent, ScriptedOptions
from rlab_core.testing.toy.benchmark import ToyBenchmark, ToyOptions

__all__ = [
    "TOY_SEED_DIR",
    "RankedPlaybookAgent",
    "ScriptedAgent",
    "ScriptedOptions",
    "ToyBenchmark",
    "ToyOptions",
    "check_agent",
    "check_benchmark",
    "check_knowledge_pages",
    "check_sandbox",
    "check_strategy",
    "run_candidate",
]
