"""Exporting the winner: ``best/`` holds its source, artifacts, submission and manifest.

``best/`` repeats files the run already keeps (the node's source and outputs, the test
predictions a submission is made from); they are stored once (:mod:`rlab_core.blobs`), so
the export adds only what is new — the manifest and a submission that differs from them.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from rlab_core.blobs import BlobStore
from rlab_core.edits import share_source
from rlab_core.interfaces import PreparedTask
from rlab_core.outputs import OutputsRefused, take_outputs
from rlab_core.records import Node
from rlab_core.run_folder import RunFolder


def export_best(
    run: RunFolder, task: PreparedTask, best: Node, *, outputs_mb: float, rule: str | None = None
) -> Path:
    """Write ``best/``: the winner's source, validation outputs, submission and manifest.

    The artifacts are taken again, as data, from the node's harness-owned outputs, so even
    a run folder from before outputs were taken this way never exports a link. The
    benchmark writes its submission from fresh copies; only then is every file of ``best/``
    stored once with the run's identical files.
    """
    store = BlobStore.of_run(run)
    staging = run.root / "best.partial"
    shutil.rmtree(staging, ignore_errors=True)
    share_source(run.node_src(best.id), staging / "src")
    refused: str | None = None
    try:
        take_outputs(
            run.node_dir(best.id) / "outputs",
            staging / "artifacts",
            max_bytes=int(outputs_mb * 2**20),
            shared=store.inodes(),
        )
    except OutputsRefused as exc:
        refused = str(exc)
    submission = task.write_submission(
        staging / "artifacts", run.private_node_dir(best.id), staging
    )
    manifest = {
        "node": best.id,
        "hypothesis": best.hypothesis,
        "primary_metric": best.score.primary_metric if best.score else None,
        "val_score": best.score.primary if best.score else None,
        "val_metrics": best.score.metrics if best.score else {},
        "val_standard_error": best.score.standard_error if best.score else None,
        "selected_by": "validation",
        "selection_rule": rule,
        "submission": submission.name if submission else None,
        "artifacts_refused": refused,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    store.share(staging)  # the artifacts, the submission: identical to files kept already
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
    shutil.rmtree(run.best_dir, ignore_errors=True)
    staging.replace(run.best_dir)
    store.prune()  # the previous best/'s own files, a dropped node's: nobody names them now
    return run.best_dir
