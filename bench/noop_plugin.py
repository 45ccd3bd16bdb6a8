"""An inline rlab plugin for the benchmarks: a do-nothing benchmark and a constant-bumping agent.

The benchmark ``noop:tick`` has one seed whose ``main.py`` only writes one tiny prediction
file (the value of its constant ``VALUE``); its validation score is that value, higher is
better. The agent ``noop-bump`` answers every proposal with a real anchored edit that raises
``VALUE`` by one, so each iteration is a real, evaluated node that improves on its parent and
convergence never stops the run early. Everything else the loop does is the real thing.
"""

from __future__ import annotations

import re
from pathlib import Path

from rlab_core.agent_context import AgentContext
from rlab_core.errors import AgentError, ContractError, UnknownNameError
from rlab_core.hookspecs import AgentInfo, BenchmarkInfo, hookimpl
from rlab_core.interfaces import Agent, Benchmark, PreparedTask, Split
from rlab_core.records import Edit, Proposal, Score
from rlab_core.task_records import CandidateLimits, SeedCandidate, TaskListing

BENCHMARK = "noop"
TASK = "tick"
AGENT = "noop-bump"
PREDICTION_FILE = "prediction.txt"

#: The seed candidate: no imports beyond ``os``, one tiny file written, nothing else.
SEED_MAIN = f'''"""Do-nothing candidate: write VALUE as the prediction."""
import os

VALUE = 0

with open(os.path.join(os.environ["RLAB_OUTPUT_DIR"], "{PREDICTION_FILE}"), "w") as out:
    out.write(str(VALUE))
'''

_VALUE_LINE = re.compile(r"^VALUE = (\d+)\n", re.MULTILINE)


class NoopBenchmark(Benchmark):
    """The ``noop`` benchmark: one task, ``tick``, prepared in milliseconds."""

    def list_tasks(self) -> list[TaskListing]:
        return [
            TaskListing(name=f"{BENCHMARK}:{TASK}", summary="Do nothing, fast.", available=True)
        ]

    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        if task != TASK:
            raise UnknownNameError(f"Unknown noop task '{task}'; available: {BENCHMARK}:{TASK}.")
        root = Path(cache_root) / TASK
        for folder in (root / "public", root / "private", root / "seed"):
            folder.mkdir(parents=True, exist_ok=True)
        (root / "public" / "README.txt").write_text("nothing to read\n")
        (root / "seed" / "main.py").write_text(SEED_MAIN)
        return NoopTask(root)


class NoopTask(PreparedTask):
    """The prepared ``noop:tick`` task: the score is the number the candidate wrote."""

    name = f"{BENCHMARK}:{TASK}"
    primary_metric = "value"
    higher_is_better = True
    editable_files = ("*.py",)
    limits = CandidateLimits(
        timeout_s=60.0, memory_mb=1024, max_output_mb=1.0, smoke_timeout_s=60.0
    )

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data_dir = root / "public"
        self.private = root / "private"

    def context(self) -> str:
        return f"Write a number into {PREDICTION_FILE}; larger is better."

    def seed_candidates(self) -> list[SeedCandidate]:
        return [SeedCandidate(name="noop-seed", path=self.root / "seed", description="writes 0")]

    def hidden_paths(self) -> list[Path]:
        return [self.private]

    def validate_outputs(self, output_dir: Path, split: Split = "val") -> list[str]:
        path = Path(output_dir) / PREDICTION_FILE
        if not path.is_file():
            return [f"{PREDICTION_FILE} is missing"]
        try:
            float(path.read_text())
        except ValueError:
            return [f"{PREDICTION_FILE} does not hold a number"]
        return []

    def score(self, output_dir: Path, split: Split) -> Score:
        problems = self.validate_outputs(output_dir, split)
        if problems:
            raise ContractError("; ".join(problems))
        value = float((Path(output_dir) / PREDICTION_FILE).read_text())
        return Score(metrics={"value": value}, primary=value, primary_metric="value")


class BumpAgent(Agent):
    """Proposes ``VALUE = n + 1`` for a parent holding ``VALUE = n``: one anchored edit."""

    def propose(self, context: AgentContext) -> Proposal:
        source = context.parent_source["main.py"]
        match = _VALUE_LINE.search(source)
        if match is None:
            raise AgentError("the parent's main.py has no 'VALUE = <n>' line")
        value = int(match.group(1)) + 1
        return Proposal(
            hypothesis=f"Raising VALUE to {value} raises the score by one.",
            edits=[Edit(file="main.py", anchor=match.group(0), replacement=f"VALUE = {value}\n")],
            move_id=f"bump-{value}",
        )


@hookimpl
def rlab_register_benchmarks():
    return [BenchmarkInfo(BENCHMARK, "Do-nothing benchmark (bench).", lambda: NoopBenchmark)]


@hookimpl
def rlab_register_agents():
    return [AgentInfo(AGENT, "Raises a constant by one (bench).", lambda: BumpAgent)]
