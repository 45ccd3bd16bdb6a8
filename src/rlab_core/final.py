"""``rlab final``: score the test split once for the node validation chose, and audit it."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from rlab_core.acceptance import DRAW_SEED_BASE, offers_resampling
from rlab_core.blobs import BlobStore
from rlab_core.config import RunConfig
from rlab_core.edits import read_source
from rlab_core.errors import ContractError, RlabUserError
from rlab_core.events import FinalScored
from rlab_core.guard import audit_code, audit_source, core_audit_patterns
from rlab_core.interfaces import PreparedTask
from rlab_core.journal import Journal, RunState
from rlab_core.knowledge.harvest import write_back
from rlab_core.outputs import take_outputs
from rlab_core.plugins import PluginHost
from rlab_core.recorder import Recorder, write_atomically
from rlab_core.run_folder import OpenedRun, RunFolder, open_run
from rlab_core.run_lock import RunLock
from rlab_core.runner import prepare_task


def selection_words(state: RunState, config: RunConfig) -> str:
    """How the node was chosen, in words (the finalists' rule when they ran)."""
    if state.tree.chosen_rule:
        return state.tree.chosen_rule
    if config.acceptance == "significant" and any(
        n.accepted is not None for n in state.tree.evaluated()
    ):
        return (
            f"the best validation score among nodes accepted at {config.confidence:.0%} "
            "(no seed replicates)"
        )
    return "the best validation score (no seed replicates)"


def test_interval(
    task: PreparedTask, outputs: Path, config: RunConfig, point: float
) -> dict[str, Any]:
    """The test score's bootstrap standard error and interval, where the task offers them."""
    if not offers_resampling(task):
        return {}
    from rlab_core.resampling import percentile_interval, replicate_scores, standard_error

    try:
        resampling = task.resampling(outputs, "test")
        if resampling is None:
            return {}
        replicates = replicate_scores(resampling, config.resamples, DRAW_SEED_BASE + config.seed)
    except Exception as exc:  # a plugin's bug must not lose the test score itself
        return {"test_interval_error": f"{type(exc).__name__}: {exc}"}
    interval = percentile_interval(replicates, config.confidence)
    return {
        "test_standard_error": standard_error(replicates),
        "test_interval": list(interval) if interval else None,
        "test_interval_level": config.confidence,
        "test_resample_unit": resampling.unit,
    }


def finalize(
    host: PluginHost, run: OpenedRun | RunFolder, *, force: bool = False
) -> dict[str, Any]:
    """Write ``final_report.json`` for the validation-chosen node; refuse a second time unless forced.

    ``run`` is a run read by :func:`~rlab_core.run_folder.open_run` (or its folder, opened here).
    The run is locked (:mod:`rlab_core.run_lock`) throughout: a live run is refused.
    """
    opened = run if isinstance(run, OpenedRun) else open_run(run.root)
    with RunLock(opened.folder.root, "final"):
        # what another process wrote before the lock was ours is read again
        return _finalize(host, opened.current(), force=force)


def _finalize(host: PluginHost, opened: OpenedRun, *, force: bool) -> dict[str, Any]:
    run, state, info, config = opened.folder, opened.state, opened.info, opened.config
    if state.finals and not force:
        first = state.finals[0]
        raise RlabUserError(
            f"The test split of this run was already scored (node {first.get('node_id')}, "
            f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(first['t']))}); it is scored once — "
            "pass --force to score again (the journal records it)."
        )
    best = state.tree.selected()
    if best is None or best.score is None:
        raise RlabUserError(
            "This run has no evaluated node, so there is nothing to score; run or resume it first."
        )
    task = prepare_task(host, opened.task, config.benchmark_options)

    private = run.private_node_dir(best.id)
    test_outputs = private if private.is_dir() else run.node_dir(best.id) / "outputs"
    test_metrics: dict[str, float] | None = None
    test_primary: float | None = None
    test_error: str | None = None
    test_details: dict[str, Any] = {}
    test_noise: dict[str, Any] = {}
    outputs_mb = config.outputs_mb or task.limits.outputs_mb
    # scored from a fresh copy taken as data, in a folder no candidate ever saw: a link
    # left in an older run's outputs is refused, and a plugin writing beside the
    # predictions writes into this copy only
    with tempfile.TemporaryDirectory(prefix="final-", dir=run.private_dir) as scratch:
        try:
            taken = Path(scratch) / "outputs"
            # the run's stored files have several names by design: taken (copied) all the same
            take_outputs(
                test_outputs,
                taken,
                max_bytes=int(outputs_mb * 2**20),
                shared=BlobStore.of_run(run).inodes(),
            )
            test_score = task.score(taken, "test")
            test_metrics, test_primary = test_score.metrics, test_score.primary
            test_details = test_score.details
            test_noise = test_interval(task, taken, config, test_primary)
        except ContractError as exc:
            test_error = str(exc)

    hidden = [*task.hidden_paths(), run.private_dir, run.root]
    patterns = [*core_audit_patterns(hidden), *task.audit_patterns()]
    source = read_source(run.node_src(best.id))
    # the AST scan's capabilities (aliases, getattr, star imports...) and the text patterns
    findings = [*audit_code(source), *audit_source(source, patterns)]

    facts = task.describe()
    report = {
        "run": run.run_id,
        "task": info["task"],
        # benchmark facts (dataset, family, sizes, versions) as the task states them
        **{key: facts[key] for key in ("dataset", "family") if key in facts},
        "task_facts": facts,
        "primary_metric": best.score.primary_metric,
        "higher_is_better": best.score.higher_is_better,
        "selected_by": "validation",
        "selection_rule": selection_words(state, config),
        "node": best.id,
        "hypothesis": best.hypothesis,
        "val_metrics": best.score.metrics,
        "val_primary": best.score.primary,
        "val_standard_error": best.score.standard_error,
        "val_resample_unit": best.score.resample_unit,
        "finalists": (state.finalists or {}).get("finalists"),
        "seed_noise_sd": (state.seed_noise or {}).get("sd"),
        "test_metrics": test_metrics,
        "test_primary": test_primary,
        **test_noise,
        "val_test_gap": None if test_primary is None else test_primary - best.score.primary,
        "test_error": test_error,
        "test_details": test_details,
        "audit": {"clean": not findings, "findings": [f.as_dict() for f in findings]},
        "code_path": str(run.node_src(best.id)),
        "predictions": str(test_outputs),
        "isolation": info.get("isolation", {}).get("level"),
        # an explicit opt-in to a level that does not hide private data, said in plain words
        "private_data_readable": bool(info.get("isolation", {}).get("private_data_readable")),
        "isolation_warning": info.get("isolation", {}).get("warning"),
        "forced": bool(state.finals),
        "scored_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    again = f"run `rlab final {run.root}` again"
    with run.storage_guard(run.final_report, then=again):
        write_atomically(run.final_report, json.dumps(report, indent=2))
    # the observers hear of it too: the dashboard shows the test metrics from now on
    recorder = Recorder(Journal(run.journal_path), run, notify=host.notify, then=again)
    try:
        # no test number enters the journal: agents and strategies read the journal's tree
        recorder.record(
            FinalScored(node_id=best.id, forced=bool(state.finals), report=run.final_report.name)
        )
    finally:
        recorder.close()
    # the one test-side number the knowledge base holds: the chosen node's val-test gap
    write_back(run.root, report=report)
    return report
