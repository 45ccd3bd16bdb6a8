"""``rlab final``: score the test split once for the node validation chose, and audit it."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from rlab_core.edits import read_source
from rlab_core.errors import ContractError, RlabUserError
from rlab_core.events import FinalScored
from rlab_core.guard import audit_code, audit_source, core_audit_patterns
from rlab_core.journal import Journal
from rlab_core.outputs import take_outputs
from rlab_core.plugins import PluginHost
from rlab_core.recorder import Recorder
from rlab_core.run_folder import OpenedRun, RunFolder, open_run
from rlab_core.runner import prepare_task


def finalize(
    host: PluginHost, run: OpenedRun | RunFolder, *, force: bool = False
) -> dict[str, Any]:
    """Write ``final_report.json`` for the validation-chosen node; refuse a second time unless forced.

    ``run`` is a run read by :func:`~rlab_core.run_folder.open_run` (or its folder, opened here).
    """
    opened = run if isinstance(run, OpenedRun) else open_run(run.root)
    run, state, info, config = opened.folder, opened.state, opened.info, opened.config
    if state.finals and not force:
        first = state.finals[0]
        raise RlabUserError(
            f"The test split of this run was already scored (node {first.get('node_id')}, "
            f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(first['t']))}); it is scored once — "
            "pass --force to score again (the journal records it)."
        )
    best = state.tree.best()
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
    outputs_mb = config.outputs_mb or task.limits.outputs_mb
    # scored from a fresh copy taken as data, in a folder no candidate ever saw: a link
    # left in an older run's outputs is refused, and a plugin writing beside the
    # predictions writes into this copy only
    with tempfile.TemporaryDirectory(prefix="final-", dir=run.private_dir) as scratch:
        try:
            taken = Path(scratch) / "outputs"
            take_outputs(test_outputs, taken, max_bytes=int(outputs_mb * 2**20))
            test_score = task.score(taken, "test")
            test_metrics, test_primary = test_score.metrics, test_score.primary
            test_details = test_score.details
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
        "node": best.id,
        "hypothesis": best.hypothesis,
        "val_metrics": best.score.metrics,
        "val_primary": best.score.primary,
        "test_metrics": test_metrics,
        "test_primary": test_primary,
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
    Path(run.final_report).write_text(json.dumps(report, indent=2))
    # the observers hear of it too: the dashboard shows the test metrics from now on
    recorder = Recorder(Journal(run.journal_path), run, notify=host.notify)
    try:
        # no test number enters the journal: agents and strategies read the journal's tree
        recorder.record(
            FinalScored(node_id=best.id, forced=bool(state.finals), report=run.final_report.name)
        )
    finally:
        recorder.close()
    return report
