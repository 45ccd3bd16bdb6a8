"""The whole loop on the toy benchmark, with real subprocesses and real files."""

from __future__ import annotations

import json

import pytest
from conftest import edit, extra

from rlab_core.errors import AgentAuthError
from rlab_core.hookspecs import hookimpl
from rlab_core.journal import read_events, replay
from rlab_core.records import FailureStage, NodeKind, NodeStatus

SLOPE_2 = {
    "hypothesis": "Slope 2 is closer to the data.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
}
SLOPE_3 = {
    "hypothesis": "Slope 3 fits the trend.",
    "edits": [edit("SLOPE = 2.0\n", "SLOPE = 3.0\n")],
}
INTERCEPT_1 = {
    "hypothesis": "An intercept of 1 removes the bias.",
    "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n")],
}
CRASH_FIXABLE = {
    "hypothesis": "A crashing change that its fix repairs.",
    "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\nraise RuntimeError('boom at import')\n")],
    "fix": [edit("raise RuntimeError('boom at import')\n", "")],
}
CRASH_UNFIXABLE = {
    "hypothesis": "A crashing change whose fix fails too.",
    "edits": [extra("raise RuntimeError('still broken')")],
    "fix": [edit("raise RuntimeError('still broken')\n", "raise ValueError('fix broke too')\n")],
}


def test_improving_hypothesis_is_kept_and_becomes_the_parent(run_toy):
    outcome = run_toy([SLOPE_2, SLOPE_3, INTERCEPT_1])
    state = replay(outcome.run.journal_path)
    nodes = list(state.tree)
    assert [n.kind for n in nodes] == [
        NodeKind.SEED,
        NodeKind.IMPROVE,
        NodeKind.IMPROVE,
        NodeKind.IMPROVE,
    ]
    seed, n1, n2, n3 = nodes
    # each improving node is the parent of the next one: best-first follows the evidence
    assert (n1.parent_id, n2.parent_id, n3.parent_id) == (seed.id, n1.id, n2.id)
    scores = [n.score.primary for n in nodes]
    assert scores[0] > scores[1] > scores[2] > scores[3]  # rmse, lower is better
    assert scores[3] < 0.2  # y = 3x + 1 + N(0, 0.1)
    assert outcome.best.id == n3.id
    assert "-SLOPE = 2.0" in n2.diff and "+SLOPE = 3.0" in n2.diff
    assert (outcome.run.node_dir(n2.id) / "diff.patch").read_text() == n2.diff
    assert "SLOPE = 3.0" in (outcome.run.best_dir / "src" / "main.py").read_text()
    info = json.loads(outcome.run.run_json.read_text())
    assert info["task_facts"]["baselines"] == {"true line y = 3x + 1": 0.1}
    manifest = json.loads((outcome.run.best_dir / "manifest.json").read_text())
    assert manifest["node"] == n3.id and manifest["selected_by"] == "validation"
    assert (outcome.run.best_dir / "submission.json").exists()
    # test predictions were moved out of the node's outputs into the private folder
    assert not (outcome.run.node_dir(n3.id) / "outputs" / "test_predictions.json").exists()
    assert (outcome.run.private_node_dir(n3.id) / "test_predictions.json").exists()
    assert "nothing left to expand" in outcome.stop_reason


def test_failed_node_is_repaired_once_and_the_repair_is_kept(run_toy):
    outcome = run_toy([SLOPE_2, CRASH_FIXABLE])
    tree = replay(outcome.run.journal_path).tree
    failed = next(n for n in tree if n.hypothesis.startswith("A crashing change that"))
    assert failed.status == NodeStatus.FAILED
    assert failed.failure.stage == FailureStage.RUN
    assert (
        "boom at import" in failed.failure.message
        and "exited with code 1" in failed.failure.message
    )
    repairs = [n for n in tree if n.repair_of == failed.id]
    assert len(repairs) == 1
    repair = repairs[0]
    assert repair.kind == NodeKind.DEBUG and repair.parent_id == failed.id
    assert repair.status == NodeStatus.EVALUATED
    assert "-raise RuntimeError('boom at import')" in repair.diff
    assert outcome.best.id == repair.id  # slope 2 + intercept 1 beats slope 2 alone


def test_repair_that_fails_closes_the_branch_as_recovered_failure(run_toy):
    outcome = run_toy([SLOPE_2, CRASH_UNFIXABLE, SLOPE_3], debug_tries=1)
    state = replay(outcome.run.journal_path)
    tree = state.tree
    failed = next(n for n in tree if n.hypothesis == CRASH_UNFIXABLE["hypothesis"])
    repair = next(n for n in tree if n.repair_of == failed.id)
    assert failed.status == NodeStatus.RECOVERED_FAILURE
    assert repair.status == NodeStatus.RECOVERED_FAILURE
    assert "fix broke too" in repair.failure.log_tail
    # never chosen as a parent: the next step expands the best evaluated node instead
    assert not [n for n in tree if n.parent_id in (failed.id, repair.id) and n.repair_of is None]
    slope3 = next(n for n in tree if n.hypothesis == SLOPE_3["hypothesis"])
    assert tree.get(slope3.parent_id).hypothesis == SLOPE_2["hypothesis"]
    events, _ = read_events(outcome.run.journal_path)
    closed = [e for e in events if e["type"] == "branch_closed"]
    assert closed and closed[0]["node_ids"] == [failed.id, repair.id]


def test_convergence_stop_is_recorded_with_its_reason(run_toy):
    tiny = [
        {
            "hypothesis": f"Nudge the intercept by {d}.",
            "edits": [edit(f"INTERCEPT = {a}\n", f"INTERCEPT = {b}\n")],
        }
        for d, a, b in [
            ("0.0001", "0.0", "0.0001"),
            ("0.0001", "0.0001", "0.0002"),
            ("0.0001", "0.0002", "0.0003"),
            ("0.0001", "0.0003", "0.0004"),
        ]
    ]
    outcome = run_toy(
        [SLOPE_2, *tiny],
        min_iterations=2,
        window=3,
        epsilon=0.002,
        iterations=20,
        acceptance="any",
    )
    assert outcome.stop_reason.startswith("converged")
    assert "epsilon 0.002" in outcome.stop_reason and "last 3" in outcome.stop_reason
    state = replay(outcome.run.journal_path)
    assert state.stop_reason == outcome.stop_reason
    assert state.tree.iterations_used() == 4  # slope 2, then three tiny nudges, then stop


def test_significant_convergence_counts_only_gains_beyond_the_noise(run_toy):
    """Small wiggles move the score a little either way: within the noise, never a new best."""
    line = 'predictions = [SLOPE * x + INTERCEPT for x in data[f"{split}_x"]]'
    wiggles = [
        {
            "hypothesis": f"Wiggle the line by 0.03 * sin({k} x).",
            "edits": [
                edit("import json\n", "import json\nimport math\n"),
                edit(line, line.replace("INTERCEPT", f"INTERCEPT + 0.03 * math.sin({k} * x)")),
            ],
        }
        for k in (5, 7, 11)  # each on the best: slope 2
    ]
    outcome = run_toy([SLOPE_2, *wiggles], min_iterations=2, window=3, iterations=20)
    assert outcome.stop_reason == (
        "converged: no significant gain (one-sided 90%) over the best since the last 3 "
        "evaluated changes of the code began"
    )
    tree = replay(outcome.run.journal_path).tree
    slope2, *nudges = [n for n in tree.evaluated() if n.kind != "seed"]
    assert slope2.accepted and slope2.gain.verdict == "better" and slope2.gain.low > 0
    assert tree.best().id == slope2.id
    assert all(n.parent_id == slope2.id for n in nudges)
    assert [n.gain.verdict for n in nudges] == ["within noise"] * 3
    assert all(n.gain.low < 0 < n.gain.high for n in nudges)
    # at least one scored better than the best, and still did not become it
    assert any(n.score.primary < slope2.score.primary for n in nudges)  # RMSE: lower is better
    assert not any(n.accepted for n in nudges)
    assert all(n.score.standard_error > 0 for n in tree.evaluated())


def test_a_small_consistent_gain_is_significant(run_toy):
    """Moving every prediction toward the truth is a real gain, however small: paired."""
    nudge = {
        "hypothesis": "Nudge the intercept toward the data.",
        "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 0.001\n")],
    }
    outcome = run_toy([SLOPE_2, nudge], iterations=2)
    tree = replay(outcome.run.journal_path).tree
    nudged = tree.get(outcome.best.id)
    assert nudged.hypothesis == nudge["hypothesis"] and nudged.accepted
    assert nudged.gain.verdict == "better" and 0 < nudged.gain.low < nudged.gain.delta < 0.001
    # far below a node's own standard error: the pairing is what sees it
    assert nudged.gain.delta < nudged.score.standard_error / 100


def test_min_iterations_holds_off_convergence(run_toy):
    same = [
        {"hypothesis": f"No-op rename {i}.", "edits": [extra(f"_unused_{i} = {i}")]}
        for i in range(5)
    ]
    outcome = run_toy(same, min_iterations=4, window=1, iterations=20)
    assert outcome.stop_reason.startswith("converged")
    assert replay(outcome.run.journal_path).tree.iterations_used() == 4


def test_iteration_budget_and_target_stop(run_toy):
    outcome = run_toy([SLOPE_2, SLOPE_3, INTERCEPT_1], iterations=2)
    assert outcome.stop_reason.startswith("iteration budget reached (2/2)")
    outcome = run_toy([SLOPE_2, SLOPE_3, INTERCEPT_1], target_val=1.5)
    assert outcome.stop_reason.startswith("target reached")


def test_token_and_cost_budgets_stop_the_run(run_toy):
    costly = [
        {**SLOPE_2, "tokens": 600, "cost": 0.3},
        {**SLOPE_3, "tokens": 600, "cost": 0.3},
        INTERCEPT_1,
    ]
    outcome = run_toy(costly, max_tokens=1000)
    assert outcome.stop_reason.startswith("token budget reached")
    state = replay(outcome.run.journal_path)
    assert sum(n.usage.total_tokens for n in state.tree) == 1800
    outcome = run_toy(costly, max_cost=0.5)
    assert outcome.stop_reason.startswith("cost budget reached")


def test_edit_with_missing_or_ambiguous_anchor_fails_the_node_and_the_run_goes_on(run_toy):
    missing = {
        "hypothesis": "Anchor that is not there.",
        "edits": [edit("SLOPE = 9.0\n", "SLOPE = 3.0\n")],
    }
    ambiguous = {"hypothesis": "Ambiguous anchor.", "edits": [edit("= ", "== ")]}
    outcome = run_toy([missing, ambiguous, SLOPE_2], debug_tries=0)
    tree = replay(outcome.run.journal_path).tree
    first, second = (
        next(n for n in tree if n.hypothesis == s["hypothesis"]) for s in (missing, ambiguous)
    )
    assert first.failure.stage == FailureStage.EDIT
    assert "does not occur" in first.failure.message and "SLOPE = 1.0" in first.failure.message
    assert (
        second.failure.stage == FailureStage.EDIT
        and "occurs" in second.failure.message
        and "times" in second.failure.message
    )
    assert outcome.best.hypothesis == SLOPE_2["hypothesis"]


def test_guard_refuses_new_dangerous_tokens(run_toy):
    sneaky = {"hypothesis": "Shell out.", "edits": [extra("import subprocess")]}
    outcome = run_toy([sneaky], debug_tries=0)
    node = next(n for n in replay(outcome.run.journal_path).tree if n.hypothesis == "Shell out.")
    assert node.failure.stage == FailureStage.GUARD and "subprocess" in node.failure.message
    assert node.execution is None  # it never ran


def test_edit_outside_the_allowed_files_is_refused(run_toy):
    escape = {"hypothesis": "Write elsewhere.", "files": {"../evil.py": "x = 1\n"}}
    data = {
        "hypothesis": "Write data.",
        "edits": [{"file": "notes.txt", "anchor": "", "replacement": "hi"}],
    }
    outcome = run_toy([escape, data], debug_tries=0)
    tree = replay(outcome.run.journal_path).tree
    messages = [n.failure.message for n in tree if n.failure]
    assert any("not a path inside the candidate folder" in m for m in messages)
    assert any("outside the files this task allows" in m for m in messages)


def test_candidate_faults_each_fail_their_node_with_the_cause(run_toy):
    script = [
        {"hypothesis": "exit 3", "edits": [extra("import sys; sys.exit(3)")]},
        {"hypothesis": "sleep past the timeout", "edits": [extra("import time; time.sleep(30)")]},
        {
            "hypothesis": "hog memory",
            "edits": [
                extra(
                    "hog = bytearray(700 * 2**20); hog[::4096] = b'x' * len(hog[::4096])\nimport time; time.sleep(5)"
                )
            ],
        },
        {"hypothesis": "flood output", "edits": [extra("while True: print('y' * 4096)")]},
        {"hypothesis": "no outputs", "edits": [edit("    main()\n", "    pass\n")]},
        {
            "hypothesis": "malformed outputs",
            "edits": [
                edit(
                    'predictions = [SLOPE * x + INTERCEPT for x in data[f"{split}_x"]]',
                    "predictions = ['nan']",
                )
            ],
        },
    ]
    outcome = run_toy(
        script,
        debug_tries=0,
        benchmark_options={"timeout_s": 2.0, "memory_mb": 300, "max_output_mb": 0.5},
    )
    tree = replay(outcome.run.journal_path).tree
    by = {n.hypothesis: n for n in tree}
    assert by["exit 3"].failure.message.startswith("exited with code 3")
    assert by["sleep past the timeout"].execution.killed_by == "timeout"
    assert by["sleep past the timeout"].execution.wall_s < 10
    assert by["hog memory"].execution.killed_by == "memory"
    assert "more than 300 MiB" in by["hog memory"].failure.message
    assert by["flood output"].execution.killed_by == "output"
    log = outcome.run.node_dir(by["flood output"].id) / "log.txt"
    assert log.stat().st_size <= 0.5 * 2**20
    assert (
        by["no outputs"].failure.stage == FailureStage.CONTRACT
        and "missing" in by["no outputs"].failure.message
    )
    assert by["malformed outputs"].failure.stage == FailureStage.CONTRACT
    assert all(n.status == NodeStatus.FAILED for n in tree if n.kind != NodeKind.SEED)
    assert outcome.best.kind == NodeKind.SEED  # the run went on and kept its evaluated seed


def test_children_that_outlive_the_candidate_are_killed(run_toy, tmp_path):
    marker = tmp_path / "orphan-wrote-this"
    code = (
        "import multiprocessing, time, pathlib\n"
        "def _late():\n"
        "    time.sleep(2)\n"
        f"    pathlib.Path({str(marker)!r}).write_text('alive')\n"
        "if __name__ == '__main__':\n"
        "    multiprocessing.set_start_method('fork')\n"
        "    child = multiprocessing.Process(target=_late)\n"
        "    child.start()\n"
        "    import os; os._exit(0)\n"
    )
    orphan = {
        "hypothesis": "leave an orphan behind",
        "edits": [
            edit(
                'if __name__ == "__main__":\n    main()\n',
                'if __name__ == "__main__":\n    main()\n' + code,
            )
        ],
    }
    # the jail hides tmp_path, so let the orphan write where it could if it survived: use no isolation
    outcome = run_toy([orphan], debug_tries=0, sandbox_options={"isolation": "none"})
    import time

    time.sleep(3)
    assert not marker.exists(), "a child process outlived its candidate"
    assert outcome.best is not None


def test_agent_errors_fail_the_node_and_the_run_goes_on(run_toy):
    outcome = run_toy([{"agent_error": "the model replied with prose", "tokens": 321}, SLOPE_2])
    tree = replay(outcome.run.journal_path).tree
    failed = [n for n in tree if n.failure and n.failure.stage == FailureStage.AGENT]
    assert len(failed) == 1 and "prose" in failed[0].failure.message
    assert failed[0].usage.input_tokens == 321  # what a failed call spent still counts
    assert outcome.best.hypothesis == SLOPE_2["hypothesis"]


def test_an_agent_that_keeps_failing_stops_the_run(run_toy):
    outcome = run_toy([{"agent_error": f"timeout {i}"} for i in range(8)], iterations=None)
    assert outcome.stop_reason.startswith("the agent failed 5 times in a row (last: timeout 4)")


def test_smoke_run_fails_fast_and_records_the_debug_stage(run_toy):
    debug_only_crash = {
        "hypothesis": "breaks only in debug",
        "edits": [extra("import sys\nif '--debug' in sys.argv: raise SystemExit(7)")],
    }
    outcome = run_toy(
        [debug_only_crash, SLOPE_2], debug_tries=0, benchmark_options={"smoke_run": True}
    )
    tree = replay(outcome.run.journal_path).tree
    node = next(n for n in tree if n.hypothesis == "breaks only in debug")
    assert node.failure.stage == FailureStage.SMOKE and "code 7" in node.failure.message
    seed_log = (outcome.run.node_dir(tree.seeds()[0].id) / "smoke_log.txt").read_text()
    assert "stage debug debug" in seed_log


def test_tree_strategy_drafts_then_improves(run_toy):
    script = [
        SLOPE_2,
        INTERCEPT_1,
        {"hypothesis": "another slope", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 1.5\n")]},
        SLOPE_3,
    ]
    outcome = run_toy(
        script, strategy="tree", strategy_options={"num_drafts": 3, "exploration": 0.0}
    )
    tree = replay(outcome.run.journal_path).tree
    kinds = [n.kind for n in tree]
    assert kinds[:4] == [NodeKind.SEED, NodeKind.DRAFT, NodeKind.DRAFT, NodeKind.DRAFT]
    drafts = [n for n in tree if n.kind == NodeKind.DRAFT]
    assert all(d.parent_id == tree.seeds()[0].id for d in drafts)
    last = list(tree)[-1]
    assert last.kind == NodeKind.IMPROVE and last.hypothesis == SLOPE_3["hypothesis"]
    assert (
        tree.get(last.parent_id).hypothesis == SLOPE_2["hypothesis"]
    )  # the best draft (slope 2) got improved


def test_node_records_timing_usage_and_the_execution(run_toy):
    outcome = run_toy([{**SLOPE_2, "tokens": 100, "cost": 0.01}])
    node = next(n for n in replay(outcome.run.journal_path).tree if n.kind == NodeKind.IMPROVE)
    assert (
        node.usage.input_tokens == 100
        and node.usage.output_tokens == 50
        and node.usage.cost_usd == 0.01
    )
    t = node.timing
    assert t.candidate_s > 0 and t.sandbox_start_s > 0 and t.scoring_s >= 0 and t.edit_s >= 0
    assert (
        node.execution.exit_code == 0
        and node.execution.peak_memory_mb > 0
        and node.execution.cpu_s > 0
    )
    result = json.loads((outcome.run.node_dir(node.id) / "result.json").read_text())
    assert result["id"] == node.id and result["score"]["primary"] == node.score.primary
    assert (outcome.run.node_dir(node.id) / "log.txt").read_text().startswith("stage full full")


class _Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    def rlab_observe_event(self, event):  # declares only `event`: pluggy allows a subset
        self.events.append(event["type"])


class _BrokenObserver:
    @hookimpl
    def rlab_observe_event(self, event, run_dir):
        raise RuntimeError("tracker is down")


def test_observers_receive_every_event_and_a_broken_one_never_stops_the_run(run_toy, toy_host):
    recorder = _Recorder()
    toy_host.register(recorder, name="recorder")
    toy_host.register(_BrokenObserver(), name="broken-tracker")
    outcome = run_toy([SLOPE_2])
    events, _ = read_events(outcome.run.journal_path)
    assert recorder.events == [e["type"] for e in events]
    assert recorder.events[0] == "run_started" and "run_stopped" in recorder.events
    assert outcome.best.hypothesis == SLOPE_2["hypothesis"]


def test_refused_credentials_stop_the_run_with_the_reason_and_keep_every_node(run_toy, tmp_path):
    with pytest.raises(AgentAuthError, match="OPENAI_API_KEY was refused"):
        run_toy([SLOPE_2, {"auth_error": "the key in OPENAI_API_KEY was refused; set a valid one"}])
    journal = next((tmp_path / "runs").glob("*/journal.jsonl"))
    state = replay(journal)
    assert state.stop_reason.startswith("agent credentials refused: the key in OPENAI_API_KEY")
    assert [n.hypothesis for n in state.tree][1] == SLOPE_2["hypothesis"] and not state.in_flight
