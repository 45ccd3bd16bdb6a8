"""Conformance suites: call these from a plugin's tests to check it honours its contract.

Each ``check_*`` runs the real implementation and raises ``AssertionError`` naming the
broken rule. They need no pytest, so they also work in a notebook.
"""

from __future__ import annotations

import math
import os
import random
import tempfile
from pathlib import Path

from rlab_core.agent_context import AgentContext, BudgetProgress
from rlab_core.edits import apply_edits
from rlab_core.errors import ContractError, RlabUserError, UnknownNameError
from rlab_core.interfaces import (
    Agent,
    Benchmark,
    PreparedTask,
    Sandbox,
    StopRules,
    Strategy,
    StrategyState,
)
from rlab_core.records import (
    Execution,
    Failure,
    FailureStage,
    Node,
    NodeKind,
    NodeStatus,
    Proposal,
    Score,
)
from rlab_core.task_records import SandboxRequest
from rlab_core.testing.run_candidate import run_candidate
from rlab_core.tree import Tree


def _request(
    tmp: Path,
    program: str,
    *,
    timeout_s: float = 10,
    memory_mb: int = 512,
    max_output_mb: float = 1.0,
    env: dict[str, str] | None = None,
) -> SandboxRequest:
    work, data, out, cache = (tmp / n for n in ("work", "data", "out", "cache"))
    for folder in (work, data, out, cache):
        folder.mkdir(parents=True, exist_ok=True)
    (work / "main.py").write_text(program)
    (data / "input.txt").write_text("42")
    return SandboxRequest(
        workdir=work,
        command=["python", "main.py"],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "RLAB_DATA_DIR": str(data),
            "RLAB_OUTPUT_DIR": str(out),
            **(env or {}),
        },
        data_dir=data,
        output_dir=out,
        cache_dir=cache,
        log_path=tmp / "log.txt",
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        max_output_mb=max_output_mb,
    )


def check_sandbox(sandbox: Sandbox) -> None:
    """A sandbox runs candidates, reports exits, kills on timeout/output, passes only the given env."""
    assert isinstance(sandbox.isolation_level(), str) and sandbox.isolation_level(), (
        "isolation_level() must name a level"
    )
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        ok = _request(
            tmp / "ok",
            "import os, pathlib\n"
            "value = pathlib.Path(os.environ['RLAB_DATA_DIR'], 'input.txt').read_text()\n"
            "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'out.txt').write_text(value)\n"
            "print('leak' if 'RLAB_CONFORMANCE_SECRET' in os.environ else 'clean')\n",
        )
        os.environ["RLAB_CONFORMANCE_SECRET"] = "must-not-reach-the-candidate"
        try:
            execution = sandbox.run(ok)
        finally:
            del os.environ["RLAB_CONFORMANCE_SECRET"]
        assert isinstance(execution, Execution), "run() must return an Execution"
        assert execution.exit_code == 0 and execution.ok, (
            f"a clean candidate must exit 0: {execution.log_tail}"
        )
        assert (ok.output_dir / "out.txt").read_text() == "42", (
            "outputs written in the sandbox must reach output_dir"
        )
        assert "clean" in execution.log_tail, (
            "stdout must be captured in the log tail, and only request.env passed"
        )

        failing = sandbox.run(_request(tmp / "fail", "import sys\nprint('boom')\nsys.exit(3)\n"))
        assert failing.exit_code == 3 and not failing.ok, (
            "a non-zero exit code must be reported as is"
        )
        assert "boom" in failing.log_tail

        slow = sandbox.run(_request(tmp / "slow", "import time\ntime.sleep(60)\n", timeout_s=1.0))
        assert slow.timed_out and slow.killed_by == "timeout", (
            "a candidate past its timeout must be killed"
        )
        assert slow.wall_s < 15, f"the timeout must kill promptly (took {slow.wall_s:.1f}s)"

        flood = sandbox.run(
            _request(tmp / "flood", "while True:\n    print('x' * 1000)\n", max_output_mb=0.2)
        )
        assert flood.killed_by == "output", "a candidate flooding its output must be killed"

        _check_concurrent_runs(sandbox, tmp)


def _check_concurrent_runs(sandbox: Sandbox, tmp: Path) -> None:
    """Two ``run`` calls from two threads at once both succeed, and their candidates overlap."""
    from concurrent.futures import ThreadPoolExecutor

    program = (
        "import os, pathlib, time\n"
        "start = time.time()\n"
        "time.sleep(1.0)\n"
        "pathlib.Path(os.environ['RLAB_OUTPUT_DIR'], 'span.txt').write_text(f'{start} {time.time()}')\n"
    )
    requests = [_request(tmp / f"parallel{i}", program) for i in range(2)]
    with ThreadPoolExecutor(2) as pool:
        executions = list(pool.map(sandbox.run, requests))
    assert all(e.ok for e in executions), (
        f"run() must work from several threads at once: {[e.log_tail for e in executions]}"
    )
    (a0, a1), (b0, b1) = (
        map(float, (r.output_dir / "span.txt").read_text().split()) for r in requests
    )
    assert a0 < b1 and b0 < a1, "two candidates started together must run at the same time"


def check_benchmark(
    benchmark: Benchmark, task: str, cache_root: Path, sandbox: Sandbox | None = None
) -> PreparedTask:
    """A benchmark lists, prepares, hides its private data and scores its own seed."""
    listings = benchmark.list_tasks()
    assert listings, "list_tasks() must list at least one task"
    assert all(":" in t.name for t in listings), "task names must be BENCHMARK:TASK"
    try:
        benchmark.prepare("no-such-task-xyz", cache_root)
    except UnknownNameError:
        pass
    else:
        raise AssertionError("prepare() of an unknown task must raise UnknownNameError")
    prepared = benchmark.prepare(task, cache_root)
    assert prepared.data_dir.is_dir(), "data_dir must exist"
    assert prepared.primary_metric, "primary_metric must be named"
    for hidden in prepared.hidden_paths():
        assert prepared.data_dir.resolve() not in Path(hidden).resolve().parents, (
            f"hidden path {hidden} is inside data_dir"
        )
    seeds = prepared.seed_candidates()
    assert seeds and all((s.path / "main.py").is_file() for s in seeds), (
        "every seed needs a main.py"
    )
    ids = [m.id for m in prepared.playbook()]
    assert len(ids) == len(set(ids)), "playbook move ids must be unique"
    with tempfile.TemporaryDirectory() as raw:
        empty = Path(raw)
        try:
            problems = prepared.validate_outputs(empty, "val")
            if not problems:
                prepared.score(empty, "val")
                raise AssertionError("scoring an empty output folder must fail")
        except ContractError:
            pass
        if sandbox is not None:
            _score_seed(prepared, sandbox, Path(raw))
    return prepared


def _score_seed(prepared: PreparedTask, sandbox: Sandbox, tmp: Path) -> None:
    execution, out = run_candidate(prepared, prepared.seed_candidates()[0].path, sandbox, tmp)
    assert execution.ok, f"the first seed must run: {execution.log_tail[-500:]}"
    assert prepared.validate_outputs(out, "val") == [], (
        "the seed's outputs must satisfy the contract"
    )
    score = prepared.score(out, "val")
    assert isinstance(score, Score) and math.isfinite(score.primary), (
        "score() must return a finite primary score"
    )
    assert score.primary_metric == prepared.primary_metric
    _check_resampling(prepared, out, score)


def _check_resampling(prepared: PreparedTask, out: Path, score: Score) -> None:
    """An offered resampling gives the score itself when every unit is drawn once."""
    import numpy as np

    resampling = prepared.resampling(out, "val")
    if resampling is None:
        return
    assert resampling.units > 1 and resampling.unit, "a resampling names its unit and count"
    once = np.asarray(resampling.statistic(np.ones((2, resampling.units), dtype=np.int64)))
    assert once.shape == (2,), "the statistic returns one value per resample"
    assert np.allclose(once, score.primary, rtol=1e-9, atol=1e-12), (
        f"with every unit drawn once the statistic gives {once[0]!r}, "
        f"but score() gives {score.primary!r}"
    )


def check_agent(agent: Agent, context: AgentContext) -> Proposal:
    """An agent returns one hypothesis whose edits apply to the parent's source."""
    proposal = agent.propose(context)
    assert isinstance(proposal, Proposal), "propose() must return a Proposal"
    assert proposal.hypothesis.strip(), "a proposal needs a one-sentence hypothesis"
    assert proposal.edits or proposal.files, "a proposal must change something"
    if proposal.edits:
        try:
            apply_edits(context.parent_source, proposal.edits, context.editable_files)
        except RlabUserError as exc:
            raise AssertionError(f"the proposed edits do not apply to the parent: {exc}") from None
    assert proposal.usage.input_tokens >= 0 and proposal.usage.cost_usd >= 0
    return proposal


def _node(
    node_id: str,
    parent: str | None,
    status: NodeStatus,
    primary: float | None,
    kind: NodeKind = NodeKind.IMPROVE,
) -> Node:
    score = (
        Score(metrics={"m": primary}, primary=primary, primary_metric="m")
        if primary is not None
        else None
    )
    failure = (
        None
        if status == NodeStatus.EVALUATED
        else Failure(stage=FailureStage.RUN, message="crashed")
    )
    return Node(
        id=node_id,
        parent_id=parent,
        iteration=0 if parent is None else 1,
        kind=kind if parent else NodeKind.SEED,
        status=status,
        hypothesis=f"h {node_id}",
        score=score,
        failure=failure,
    )


def check_strategy(strategy: Strategy) -> None:
    """A strategy never hands out a failed or recovered-failure node, and stops on convergence."""
    tree = Tree()
    tree.add(_node("n0000", None, NodeStatus.EVALUATED, 0.5))
    tree.add(_node("n0001", "n0000", NodeStatus.FAILED, None))
    tree.add(_node("n0002", "n0000", NodeStatus.EVALUATED, 0.6))
    tree.add(_node("n0003", "n0002", NodeStatus.FAILED, None))
    tree.close_branch(["n0003"], "repair failed")
    tree.add(_node("n0004", "n0000", NodeStatus.FAILED, None))
    rng = random.Random(0)
    for _ in range(50):
        state = StrategyState(
            tree=tree,
            progress=BudgetProgress(),
            rules=StopRules(),
            rng=rng,
        )
        for step in strategy.next_steps(state, capacity=1):
            assert tree.can_be_parent(step.parent_id), (
                f"strategy chose {step.parent_id}, which is not an evaluated node"
            )
    rules = StopRules(epsilon=0.01, window=2, min_iterations=1)
    flat = Tree()
    flat.add(_node("n0000", None, NodeStatus.EVALUATED, 0.5))
    flat.add(_node("n0001", "n0000", NodeStatus.EVALUATED, 0.501))
    flat.add(_node("n0002", "n0001", NodeStatus.EVALUATED, 0.502))
    state = StrategyState(tree=flat, progress=BudgetProgress(), rules=rules, rng=rng)
    assert strategy.stop_reason(state), "a flat score history must trigger the convergence stop"
    rising = Tree()
    rising.add(_node("n0000", None, NodeStatus.EVALUATED, 0.5))
    rising.add(_node("n0001", "n0000", NodeStatus.EVALUATED, 0.6))
    rising.add(_node("n0002", "n0001", NodeStatus.EVALUATED, 0.7))
    state = StrategyState(tree=rising, progress=BudgetProgress(), rules=rules, rng=rng)
    assert strategy.stop_reason(state) is None, "a rising score must not stop the search"


__all__ = ["check_agent", "check_benchmark", "check_sandbox", "check_strategy", "run_candidate"]
