"""Replay time of a 10,000-node journal.

Writes a synthetic but realistically shaped journal with the real :class:`Journal` and real
:class:`Node` records: seeds, improve nodes with one or two anchored edits and unified diffs
of a few hundred bytes, execution records with log tails, official-looking metrics, timing
and token usage; about 15% failed nodes (crashes with tracebacks, contract breaches, refused
edits), debug repairs, ``branch_closed`` for repairs that failed, ``parent_exhausted``, and one
kill-and-resume in the middle (an abandoned in-flight node). Then it times
:func:`rlab_core.journal.replay` over it, the fold ``rlab resume`` and the report views use.

Target (the issue): replay <= 2 s (median of 5).

Usage: ``uv run python bench/replay.py [--nodes 10000]``
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from _common import bench_workspace, median, verdict

from rlab_core.edits import unified_diff
from rlab_core.journal import Journal, node_id, read_events, replay
from rlab_core.records import (
    Edit,
    Execution,
    Failure,
    FailureStage,
    Node,
    NodeKind,
    NodeStatus,
    Score,
    Timing,
    Usage,
)

T = TypeVar("T")
TARGET_S = 2.0
REPEATS = 5

#: A candidate shaped like a real baseline, so diffs and anchors look like real ones.
BASE_SOURCE = '''"""Baseline: gradient boosting on joined tables."""
import json
import os
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd

DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ["RLAB_OUTPUT_DIR"])
SEED = int(os.environ.get("RLAB_SEED", "0"))

LEARNING_RATE = 0.05
NUM_LEAVES = 31
MIN_CHILD_SAMPLES = 20
FEATURE_FRACTION = 0.9
BAGGING_FRACTION = 0.8
NUM_ROUNDS = 400
EARLY_STOPPING = 50


def load():
    train = pd.read_parquet(DATA / "train.parquet")
    val = pd.read_parquet(DATA / "val.parquet")
    test = pd.read_parquet(DATA / "test.parquet")
    return train, val, test


def features(frame):
    out = frame.copy()
    out["hour"] = pd.to_datetime(out["timestamp"]).dt.hour
    out["weekday"] = pd.to_datetime(out["timestamp"]).dt.weekday
    return out.drop(columns=["timestamp"])


def main():
    train, val, test = load()
    x_train, x_val, x_test = features(train), features(val), features(test)
    y_train = x_train.pop("label")
    params = {
        "objective": "binary",
        "learning_rate": LEARNING_RATE,
        "num_leaves": NUM_LEAVES,
        "min_child_samples": MIN_CHILD_SAMPLES,
        "feature_fraction": FEATURE_FRACTION,
        "bagging_fraction": BAGGING_FRACTION,
        "seed": SEED,
        "verbose": -1,
    }
    model = lgb.train(params, lgb.Dataset(x_train, y_train), NUM_ROUNDS)
    OUT.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"score": model.predict(x_val)}).to_csv(OUT / "val_predictions.csv", index=False)
    pd.DataFrame({"score": model.predict(x_test)}).to_csv(OUT / "test_predictions.csv", index=False)
    print(json.dumps({"rounds": model.current_iteration()}))


if __name__ == "__main__":
    main()
'''

KNOBS = {
    "LEARNING_RATE": ["0.02", "0.03", "0.08", "0.1"],
    "NUM_LEAVES": ["15", "63", "127", "255"],
    "MIN_CHILD_SAMPLES": ["5", "10", "50", "100"],
    "FEATURE_FRACTION": ["0.6", "0.7", "0.8", "1.0"],
    "BAGGING_FRACTION": ["0.5", "0.6", "0.7", "1.0"],
    "NUM_ROUNDS": ["200", "800", "1200", "2000"],
}
FEATURE_LINE = '    out["weekday"] = pd.to_datetime(out["timestamp"]).dt.weekday\n'
EXTRA_FEATURES = [
    '    out["month"] = pd.to_datetime(out["timestamp"]).dt.month\n',
    '    out["amount_log"] = np.log1p(out["amount"].clip(lower=0))\n',
    '    out["user_count"] = out.groupby("user_id")["user_id"].transform("count")\n',
    '    out["item_mean"] = out.groupby("item_id")["amount"].transform("mean")\n',
]
EDIT_REFUSAL = (
    "Edit refused: the anchor does not occur in 'main.py'. Closest text, lines 14-14 "
    "(93% similar):\nLEARNING_RATE = 0.05"
)
TRACEBACK = """Traceback (most recent call last):
  File "/work/candidate/main.py", line 71, in <module>
    main()
  File "/work/candidate/main.py", line 55, in main
    x_train, x_val, x_test = features(train), features(val), features(test)
  File "/work/candidate/main.py", line 39, in features
    out["item_mean"] = out.groupby("item_id")["amount"].transform("mean")
  File "pandas/core/frame.py", line 3893, in __getitem__
    indexer = self.columns.get_loc(key)
KeyError: 'amount'
"""
TRAIN_LOG = "".join(
    f"[{i:4d}]\ttraining's binary_logloss: {0.69 - i * 0.0004:.5f}\t"
    f"valid_1's binary_logloss: {0.69 - i * 0.00035:.5f}\n"
    for i in range(0, 400, 25)
)


def proposal(rng: random.Random) -> tuple[str, list[Edit]]:
    """A hypothesis and one or two anchored edits of the kind a playbook agent makes."""
    edits: list[Edit] = []
    parts = []
    for name in rng.sample(sorted(KNOBS), rng.choice((1, 1, 2))):
        anchor = next(line for line in BASE_SOURCE.splitlines() if line.startswith(f"{name} = "))
        value = rng.choice(KNOBS[name])
        edits.append(Edit(file="main.py", anchor=anchor, replacement=f"{name} = {value}"))
        parts.append(f"{name.lower()} {value}")
    if rng.random() < 0.4:
        extra = rng.choice(EXTRA_FEATURES)
        edits.append(Edit(file="main.py", anchor=FEATURE_LINE, replacement=FEATURE_LINE + extra))
        parts.append(extra.split('"')[1] + " feature")
    hypothesis = (
        f"Setting {', '.join(parts)} should lower validation log-loss by trading bias for "
        "variance on this mid-sized table."
    )
    return hypothesis, edits


def diff_for(edits: list[Edit]) -> str:
    """The real unified diff of ``edits`` against the base source."""
    after = BASE_SOURCE
    for edit in edits:
        after = after.replace(edit.anchor, edit.replacement, 1)
    return unified_diff({"main.py": BASE_SOURCE}, {"main.py": after})


class JournalWriter:
    """Writes a run's events the way the loop does, with synthetic evidence."""

    def __init__(self, path: Path, rng: random.Random) -> None:
        self.journal = Journal(path, fsync=False)  # writing speed is not what is measured
        self.rng = rng
        self.number = -1
        self.clock = 1_700_000_000.0
        self.evaluated: list[str] = []
        self.nodes = 0
        self.closed = 0
        self.best = (float("inf"), "")

    def next_id(self) -> str:
        self.number += 1
        return node_id(self.number)

    def node(
        self,
        *,
        parent: str | None,
        kind: NodeKind,
        fail: FailureStage | None,
        repair_of: str | None = None,
    ) -> str:
        """Append ``node_started`` and ``node_finished`` for one node; return its id."""
        rng = self.rng
        new_id = self.next_id()
        hypothesis, edits = proposal(rng)
        if kind == NodeKind.SEED:
            hypothesis, edits = f"Seed candidate 'baseline-{new_id}': LightGBM on joined tables", []
        elif kind == NodeKind.DEBUG:
            hypothesis = f"repair: {hypothesis}"
        iteration = 0 if kind == NodeKind.SEED else self.nodes - 1
        self.journal.append(
            "node_started",
            id=new_id,
            parent_id=parent,
            kind=str(kind),
            iteration=iteration,
            hypothesis=hypothesis,
        )
        created = self.clock
        wall = rng.uniform(20, 240)
        self.clock += wall + rng.uniform(2, 30)
        ran = Execution(
            command=["python", "main.py"],
            exit_code=0,
            wall_s=round(wall, 4),
            cpu_s=round(wall * 1.7, 4),
            peak_memory_mb=round(rng.uniform(300, 3000), 1),
            log_tail=TRAIN_LOG[-rng.randint(300, 1200) :],
            log_bytes=rng.randint(2000, 90000),
            start_overhead_s=0.004,
            isolation="bubblewrap",
        )
        execution: Execution | None = ran
        score = failure = None
        if fail is None:
            logloss = rng.uniform(0.40, 0.55)
            metrics = {"logloss": logloss, "auc": 1.2 - logloss, "accuracy": 1 - logloss / 2}
            score = Score(
                metrics=metrics, primary=logloss, primary_metric="logloss", higher_is_better=False
            )
            self.best = min(self.best, (logloss, new_id))
        elif fail == FailureStage.EDIT:
            execution = None
            failure = Failure(stage=fail, message=EDIT_REFUSAL)
        elif fail == FailureStage.CONTRACT:
            message = "val_predictions.csv has 9981 rows, not 10000"
            failure = Failure(stage=fail, message=message, log_tail=ran.log_tail)
        else:
            execution = ran.model_copy(update={"exit_code": 1, "log_tail": TRACEBACK})
            message = "exited with code 1: KeyError: 'amount'"
            failure = Failure(stage=fail, message=message, log_tail=TRACEBACK)
        node = Node(
            id=new_id,
            parent_id=parent,
            iteration=iteration,
            kind=kind,
            status=NodeStatus.EVALUATED if fail is None else NodeStatus.FAILED,
            hypothesis=hypothesis,
            rationale="The parent's train/validation gap suggests the model overfits; "
            "this change regularises it while keeping the feature set.",
            move_id=f"move-{rng.randint(1, 40)}",
            edits=edits,
            diff=diff_for(edits),
            changed_files=["main.py"] if edits else [],
            execution=execution,
            score=score,
            failure=failure,
            repair_of=repair_of,
            usage=Usage(
                input_tokens=rng.randint(4000, 30000),
                output_tokens=rng.randint(200, 2000),
                cost_usd=round(rng.uniform(0.01, 0.2), 4),
            ),
            timing=Timing(
                agent_s=round(rng.uniform(5, 60), 4),
                edit_s=0.002,
                sandbox_start_s=0.01,
                candidate_s=round(wall, 4),
                scoring_s=0.05,
                bookkeeping_s=0.001,
            ),
            created_at=created,
            finished_at=self.clock,
        )
        self.journal.append("node_finished", node=node.model_dump(mode="json"))
        self.nodes += 1
        if fail is None:
            self.evaluated.append(new_id)
        return new_id

    def close_branch(self, ids: list[str], reason: str) -> None:
        self.journal.append("branch_closed", node_ids=ids, reason=reason)
        self.closed += len(ids)

    def failure_stage(self) -> FailureStage | None:
        draw = self.rng.random()
        if draw < 0.85:
            return None
        if draw < 0.95:
            return FailureStage.RUN
        return self.rng.choice((FailureStage.EDIT, FailureStage.CONTRACT))


def write_journal(path: Path, total: int, seed: int = 0) -> JournalWriter:
    """Write a journal of ``total`` finished nodes; return the writer (it knows the counts)."""
    rng = random.Random(seed)
    writer = JournalWriter(path, rng)
    start = {"primary_metric": "logloss", "higher_is_better": False, "isolation": "bubblewrap"}
    writer.journal.append("run_started", run_id="bench-replay", task="bench:synthetic", **start)
    for _ in range(2):
        writer.node(parent=None, kind=NodeKind.SEED, fail=None)
    resumed = False
    while writer.nodes < total:
        if not resumed and writer.nodes >= total // 2:
            # a kill while a node runs, then `rlab resume`
            lost = writer.next_id()
            writer.journal.append(
                "node_started",
                id=lost,
                parent_id=writer.evaluated[-1],
                kind="improve",
                iteration=writer.nodes,
                hypothesis="lost",
            )
            writer.journal.append(
                "run_resumed", nodes=writer.nodes, abandoned=[lost], torn_tail=False, **start
            )
            writer.journal.append("node_abandoned", id=lost, reason="the run stopped meanwhile")
            resumed = True
        parent = rng.choice(writer.evaluated[-20:])
        if rng.random() < 0.01:
            writer.journal.append("parent_exhausted", node_id=parent, reason="no untried move")
        kind = NodeKind.IMPROVE if writer.nodes > 10 else NodeKind.DRAFT
        stage = writer.failure_stage()
        failed = writer.node(parent=parent, kind=kind, fail=stage)
        if stage is None or writer.nodes >= total:
            continue
        if stage == FailureStage.EDIT or rng.random() < 0.3:
            writer.close_branch([failed], "the agent cannot repair this failure")
            continue
        repair_stage = None if rng.random() < 0.55 else FailureStage.RUN
        repair = writer.node(
            parent=failed, kind=NodeKind.DEBUG, fail=repair_stage, repair_of=failed
        )
        if repair_stage is not None:
            writer.close_branch([failed, repair], "repair failed after 1 attempt(s)")
    best = writer.best[1]
    reason = f"iteration budget reached ({total}/{total})"
    writer.journal.append("run_stopped", reason=reason, best=best)
    writer.journal.append("best_exported", node_id=best)
    writer.journal.close()
    return writer


def timed(function: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Median wall time of ``repeats`` calls, and the last call's result."""
    times: list[float] = []
    for _ in range(repeats):
        result = None  # let the previous result go before the next call
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return median(times), result  # type: ignore[return-value]


def replay_peak_rss(path: Path) -> float:
    """Peak resident memory, bytes, of a fresh process that imports rlab and replays ``path``."""
    code = (
        "import sys\n"
        "from _common import high_water_rss\n"
        "from rlab_core.journal import replay\n"
        "replay(sys.argv[1])\n"
        "print(high_water_rss())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    )
    return int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000, help="finished nodes in the journal")
    args = parser.parse_args()

    with bench_workspace("replay") as root:
        path = root / "journal.jsonl"
        start = time.perf_counter()
        writer = write_journal(path, args.nodes)
        write_s = time.perf_counter() - start
        size = path.stat().st_size
        parse_s, _ = timed(lambda: read_events(path), REPEATS)
        replay_s, state = timed(lambda: replay(path), REPEATS)
        peak_rss = replay_peak_rss(path)

    tree = state.tree
    closed = sum(1 for n in tree if n.status == NodeStatus.RECOVERED_FAILURE)
    failed = sum(1 for n in tree if n.status == NodeStatus.FAILED)
    if len(tree) != writer.nodes or closed != writer.closed or state.in_flight:
        raise RuntimeError(f"replay disagrees with the journal: {len(tree)} nodes, {closed} closed")
    diffs = [len(n.diff) for n in tree if n.diff]
    print(
        f"rlab journal replay: synthetic run of {len(tree)} nodes "
        f"({len(tree.evaluated())} evaluated, {failed} failed, {closed} in closed branches)"
    )
    print(
        f"    journal size                                {size / 1e6:8.1f} MB "
        f"({state.events} events, {size / len(tree) / 1e3:.1f} kB per node)"
    )
    print(f"    median diff size                            {median(diffs):8.0f} bytes")
    print(f"    writing it (Journal.append, no fsync)       {write_s:8.2f} s")
    print(f"    read_events (JSON parse only), median of {REPEATS}  {parse_s:8.3f} s")
    print(f"    replay (parse + Node validation + tree)     {replay_s:8.3f} s")
    print(
        f"    peak RSS of a fresh process replaying once  {peak_rss / 1e6:8.1f} MB "
        "(VmHWM; what `rlab resume` of such a run holds)"
    )
    print()
    facts = f" [{len(tree)} nodes, {size / 1e6:.1f} MB journal]"
    print(verdict("replay", replay_s, TARGET_S) + facts)


if __name__ == "__main__":
    main()
