"""Several candidates at once (``--workers``): same candidates, consistent journal, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import extra

from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import NodeKind, NodeStatus
from rlab_core.run_folder import open_run
from rlab_core.runner import RunOutcome, resume_run, start_run
from rlab_core.testing import playbook as playbook_plugin
from rlab_core.testing.toy import plugin as toy_plugin


def move(move_id: str, code: str, sleep_s: float) -> dict[str, Any]:
    """A playbook move that changes the toy line and takes ``sleep_s`` to run."""
    return {
        "id": move_id,
        "hypothesis": f"{move_id}: {code.strip()}",
        "edits": [extra(f"import time\ntime.sleep({sleep_s})\n{code}")],
    }


#: Moves with uneven run times, so that parallel jobs finish out of dispatch order.
IMPROVING = [
    move("slope2", "SLOPE = 2.0", 0.6),
    move("icpt05", "INTERCEPT = 0.5", 0.1),
    move("slope3", "SLOPE = 3.0", 0.3),
    move("icpt1", "INTERCEPT = 1.0", 0.05),
    move("slope25", "SLOPE = 2.5", 0.4),
    move("icpt2", "INTERCEPT = 2.0", 0.2),
    move("slope_neg", "SLOPE = -1.0", 0.1),
    move("icpt_neg", "INTERCEPT = -1.0", 0.3),
]
#: Moves that all make the seed worse: every step expands the seed, whatever has finished.
WORSENING = [
    move("s05", "SLOPE = 0.5", 0.5),
    move("s0", "SLOPE = 0.0", 0.1),
    move("sn1", "SLOPE = -1.0", 0.3),
    move("in1", "INTERCEPT = -1.0", 0.05),
    move("in2", "INTERCEPT = -2.0", 0.2),
    move("sn2", "SLOPE = -2.0", 0.1),
]


@pytest.fixture
def host() -> PluginHost:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(playbook_plugin, name="ranked-playbook")
    return host


def run_playbook(
    host: PluginHost, out: Path, moves, *, staged: bool = False, **overrides: Any
) -> RunOutcome:
    config = RunConfig(
        task="toy:line",
        agent="ranked-playbook",
        benchmark_options={"playbook": moves, "staged": staged},
        out=out,
        **{"iterations": 6, "min_iterations": 100, **overrides},
    )
    return start_run(host, config)


def candidates(outcome: RunOutcome) -> set[tuple[str, ...]]:
    """Each agent-made node as the moves along its lineage: what was evaluated, not when."""
    state = replay(outcome.run.journal_path)
    tree = state.tree
    return {
        tuple(n.move_id or "" for n in tree.lineage(node.id))
        for node in tree
        if node.kind != NodeKind.SEED
    }


def overlapped(outcome: RunOutcome) -> bool:
    nodes = [n for n in replay(outcome.run.journal_path).tree if n.kind != NodeKind.SEED]
    return any(
        a.created_at < b.finished_at and b.created_at < a.finished_at
        for i, a in enumerate(nodes)
        for b in nodes[i + 1 :]
    )


def test_parallel_run_evaluates_the_same_candidates_as_the_sequential_one(host, tmp_path):
    sequential = run_playbook(host, tmp_path / "w1", WORSENING, workers=1)
    parallel = run_playbook(host, tmp_path / "w3", WORSENING, workers=3)
    assert candidates(parallel) == candidates(sequential)
    assert len(candidates(parallel)) == 6
    assert overlapped(parallel) and not overlapped(sequential)


def test_parallel_runs_are_reproducible_whatever_finishes_first(host, tmp_path):
    """Improving moves change the parent mid-run; reruns still evaluate the same candidates."""
    first = run_playbook(host, tmp_path / "a", IMPROVING, workers=2)
    # the same moves with other run times: jobs now finish in a different order
    reshuffled = [
        {
            **m,
            "edits": [
                {
                    **m["edits"][0],
                    "replacement": m["edits"][0]["replacement"].replace(
                        "time.sleep(", "time.sleep(0.7 - "
                    ),
                }
            ],
        }
        for m in IMPROVING
    ]
    second = run_playbook(host, tmp_path / "b", reshuffled, workers=2)
    assert candidates(first) == candidates(second)
    best_first = replay(first.run.journal_path).tree.best()
    best_second = replay(second.run.journal_path).tree.best()
    assert best_first.score.primary == pytest.approx(best_second.score.primary)
    # the search went past the seed: improvements were expanded
    assert any(len(lineage) > 2 for lineage in candidates(first))


def test_budget_is_never_overshot_when_several_finish_together(host, tmp_path):
    outcome = run_playbook(host, tmp_path / "runs", IMPROVING, workers=3, iterations=5)
    state = replay(outcome.run.journal_path)
    assert state.tree.iterations_used() == 5
    assert state.stop_reason.startswith("iteration budget reached (5/5)")
    iterations = sorted(n.iteration for n in state.tree if n.kind != NodeKind.SEED)
    assert iterations == [1, 2, 3, 4, 5]
    assert not state.in_flight


def test_convergence_counts_evaluated_iterations_under_parallelism(host, tmp_path):
    outcome = run_playbook(
        host, tmp_path / "runs", WORSENING, workers=2, iterations=20, min_iterations=3, window=3
    )
    state = replay(outcome.run.journal_path)
    assert state.stop_reason.startswith("converged")
    # decided after the third evaluated iteration; at most one more was already running
    assert 3 <= state.tree.iterations_used() <= 4


def test_failed_parallel_node_is_repaired_and_the_others_go_on(host, tmp_path):
    broken = {
        "id": "broken",
        "hypothesis": "a move that crashes",
        "edits": [extra("import time\ntime.sleep(0.2)\nraise SystemExit(3)")],
        "fix": [
            {
                "file": "main.py",
                "anchor": "raise SystemExit(3)\n",
                "replacement": "INTERCEPT = 1.0\n",
            }
        ],
    }
    outcome = run_playbook(host, tmp_path / "runs", [broken, *IMPROVING[:3]], workers=2)
    tree = replay(outcome.run.journal_path).tree
    failed = [n for n in tree if n.move_id == "broken"]
    repairs = [n for n in tree if n.kind == NodeKind.DEBUG]
    assert failed and failed[0].status == NodeStatus.FAILED
    assert repairs and repairs[0].repair_of == failed[0].id and repairs[0].evaluated


PRINT_CONTRACT = (
    "print('ENV', os.environ['RLAB_NODE_ID'], os.environ['RLAB_STAGE'],"
    " os.environ.get('RLAB_TOP_NODES'))"
)


def test_stage_node_id_and_top_nodes_reach_the_candidate(host, tmp_path):
    moves = [move(f"probe{i}", f"SLOPE = {1.5 + i / 4}\n{PRINT_CONTRACT}", 0.0) for i in range(5)]
    outcome = run_playbook(host, tmp_path / "runs", moves, iterations=8, staged=True)
    tree = replay(outcome.run.journal_path).tree
    for node in tree:
        log = (outcome.run.node_dir(node.id) / "log.txt").read_text()
        if "ENV" not in log:
            assert node.move_id in ("line-seed", "screen-reference")  # the seed's own source
            continue
        _, seen_id, seen_stage, top = next(
            x for x in log.splitlines() if x.startswith("ENV")
        ).split()
        assert (seen_id, seen_stage) == (node.id, node.stage)
        if node.stage == "ensemble":
            # the best full-fidelity nodes when it started, best first
            ranked = [n for n in tree.full_fidelity() if n.finished_at <= node.created_at]
            ranked.sort(key=lambda n: n.score.primary)
            assert top.split(",") == [n.id for n in ranked[:5]]
        else:
            assert top == "None"
    moves_and_stages = [(n.move_id, n.stage) for n in tree]
    # the seed runs full; below 35 % of 8 iterations children are screened at mini against
    # the seed's own mini re-run; a screen that beat it is promoted to a full run
    assert moves_and_stages[:5] == [
        ("line-seed", "full"),
        ("screen-reference", "mini"),
        ("probe0", "mini"),
        ("promote", "full"),
        ("probe1", "full"),
    ]
    assert tree.get("n0003").parent_id == "n0002" and tree.get("n0003").diff == ""
    assert all(n.stage == "full" for n in tree if n.move_id == "promote")
    assert moves_and_stages[-1][1] == "ensemble"
    # only full-fidelity nodes compete: the best is a promotion or a full node, never a screen
    assert tree.best().fidelity == "full" and tree.best().score.fidelity == "full"
    assert {n.score.fidelity for n in tree.evaluated() if n.stage == "mini"} == {"mini"}


def start_in_subprocess(out: Path, tmp_path: Path, moves, iterations: int) -> subprocess.Popen:
    """A parallel playbook run (3 workers) in its own process, to be killed or interrupted."""
    # a shell's background job (`cmd &`, as CI may be started) inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: give the run the terminal's Ctrl-C
    script = f"""
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
from rlab_core.testing import playbook as playbook_plugin
from rlab_core.testing.toy import plugin as toy_plugin
from rlab_core.config import RunConfig
from rlab_core.plugins import PluginHost
from rlab_core.runner import start_run
import json
host = PluginHost(use_entry_points=False, strict=True)
host.register(toy_plugin, name="toy")
host.register(playbook_plugin, name="ranked-playbook")
moves = json.loads({json.dumps(json.dumps(moves))})
start_run(host, RunConfig(task="toy:line", agent="ranked-playbook",
    benchmark_options={{"playbook": moves}}, out={str(out)!r}, iterations={iterations},
    min_iterations=100, workers=3))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    env["RLAB_CACHE_HOME"] = str(tmp_path / "cache")
    return subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)


def wait_until_running(out: Path, finished_at_least: int, running_at_least: int) -> Path:
    deadline = time.time() + 60
    while time.time() < deadline:
        for journal in out.glob("*/journal.jsonl"):
            events = [json.loads(x) for x in journal.read_text().splitlines() if x.endswith("}")]
            finished = sum(e["type"] == "node_finished" for e in events)
            running = sum(e["type"] == "node_started" for e in events) - finished
            if finished >= finished_at_least and running >= running_at_least:
                return journal
        time.sleep(0.02)
    raise AssertionError("the run never had that many nodes running")


def test_sigkill_during_a_parallel_run_loses_only_running_nodes_and_resumes(host, tmp_path):
    out = tmp_path / "runs"
    proc = start_in_subprocess(out, tmp_path, IMPROVING, iterations=8)
    journal = wait_until_running(out, finished_at_least=3, running_at_least=2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = replay(journal)
    assert before.stop_reason is None and 2 <= len(before.in_flight) <= 3
    kept = set(before.tree.nodes)

    resumed = resume_run(host, open_run(journal.parent))
    after = replay(resumed.run.journal_path)
    assert kept <= set(after.tree.nodes)  # every completed node survived
    assert not after.in_flight
    assert after.stop_reason.startswith("iteration budget reached")
    assert not set(before.in_flight) & set(after.tree.nodes)  # the lost ones are abandoned


def test_ctrl_c_stops_every_running_candidate_and_leaves_their_nodes_unfinished(tmp_path):
    import psutil

    out = tmp_path / "runs"
    slow = [move(f"slow{i}", f"SLOPE = {2 + i}", 60) for i in range(4)]
    proc = start_in_subprocess(out, tmp_path, slow, iterations=4)
    journal = wait_until_running(out, finished_at_least=1, running_at_least=3)
    time.sleep(0.5)  # let the candidates start
    stopped_at = time.time()
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    assert time.time() - stopped_at < 20, "the interrupt must not wait for the candidates"
    state = replay(journal)
    assert len(state.in_flight) == 3 and len(state.tree) == 1  # the seed only: none recorded
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline", "cwd"])
        if str(out) in " ".join(p.info["cmdline"] or []) + (p.info["cwd"] or "")
    ]
    assert not leftovers, "no candidate may outlive the interrupted run"


def test_cancel_stops_a_running_candidate_from_another_thread(tmp_path):
    import threading

    from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
    from rlab_core.testing.conformance import _request

    sandbox = LocalSandbox(LocalSandboxConfig(isolation="none"))
    marker = tmp_path / "started"
    request = _request(
        tmp_path / "c",
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(60)\n",
        timeout_s=120,
    )
    result = {}
    worker = threading.Thread(target=lambda: result.update(execution=sandbox.run(request)))
    worker.start()
    deadline = time.time() + 30
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.01)
    sandbox.cancel()
    worker.join(30)
    assert not worker.is_alive(), "cancel() must make the pending run return"
    execution = result["execution"]
    assert execution.killed_by == "cancelled" and not execution.ok
    assert execution.wall_s < 30


def test_agents_that_allow_it_propose_from_several_threads_at_once(run_toy):
    from rlab_core.testing.toy.agent import ScriptedAgent

    script = [
        {"hypothesis": f"intercept {i}", "edits": [extra(f"INTERCEPT = {i / 4}")]}
        for i in range(1, 5)
    ]
    ScriptedAgent.calls.clear()
    outcome = run_toy(
        script,
        iterations=4,
        workers=2,
        agent_options={"concurrent": True, "think_s": 0.5},
    )
    tree = replay(outcome.run.journal_path).tree
    made = [n for n in tree if n.kind != NodeKind.SEED]
    # each step answered once, none twice, although proposals were in flight together
    assert sorted(n.hypothesis for n in made) == [f"intercept {i}" for i in range(1, 5)]
    calls = ScriptedAgent.calls
    assert any(a0 < b1 and b0 < a1 for i, (a0, a1) in enumerate(calls) for b0, b1 in calls[i + 1 :])


def test_as_completed_order_keeps_the_budget_and_never_repeats_a_move(host, tmp_path):
    outcome = run_playbook(
        host, tmp_path / "runs", IMPROVING, workers=3, iterations=6, parallel_order="as-completed"
    )
    state = replay(outcome.run.journal_path)
    made = [n for n in state.tree if n.kind != NodeKind.SEED]
    assert len(made) == 6 and state.stop_reason.startswith("iteration budget reached (6/6)")
    tried = [(n.parent_id, n.move_id) for n in made]
    assert len(set(tried)) == len(tried), "a move was proposed twice on one parent"
    assert overlapped(outcome)
