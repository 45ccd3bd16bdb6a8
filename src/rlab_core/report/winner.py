"""What the run hands over: the change from its seed to the chosen node, and where it lies.

The seed → best diff is computed from the two nodes' source folders (``nodes/<id>/src``),
so it is the whole change the winner carries, however many iterations and repairs it took
(the per-node diffs only say what each step changed). The paths are those ``export_best``
writes (``best/src``, ``best/manifest.json`` and the benchmark's submission file), absolute,
for copying into a shell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlab_core.edits import read_source, unified_diff
from rlab_core.records import Node
from rlab_core.run_folder import RunFolder
from rlab_core.tree import Tree

#: a longer seed → best diff is cut (the files themselves are in best/src)
SEED_DIFF_MAX_CHARS = 60_000


def seed_to_best(run: RunFolder, tree: Tree, best: Node | None) -> dict[str, Any] | None:
    """The unified diff from the seed ``best`` descends from to ``best`` (``None``: no best)."""
    if best is None:
        return None
    seed = tree.lineage(best.id)[0]
    view: dict[str, Any] = {
        "seed": seed.id,
        "best": best.id,
        "steps": len(tree.lineage(best.id)) - 1,
        "diff": "",
        "files": [],
        "added": 0,
        "removed": 0,
        "missing": None,
    }
    folders = [run.node_src(seed.id), run.node_src(best.id)]
    absent = [str(folder) for folder in folders if not folder.is_dir()]
    if absent:
        view["missing"] = f"source folder not found: {', '.join(absent)}"
        return view
    before, after = read_source(folders[0]), read_source(folders[1])
    diff = unified_diff(before, after)
    lines = diff.splitlines()
    view["files"] = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    view["added"] = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    view["removed"] = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    if len(diff) > SEED_DIFF_MAX_CHARS:
        more = len(diff) - SEED_DIFF_MAX_CHARS
        diff = diff[:SEED_DIFF_MAX_CHARS] + f"\n… ({more} more characters: see best/src)"
    view["diff"] = diff
    return view


def exported_paths(run: RunFolder) -> dict[str, Any]:
    """Absolute paths of ``best/``: its source, manifest and submission, once exported.

    ``node`` is the node the export holds (``best/manifest.json``); ``None`` before the run
    exported its winner (the export happens when the run stops).
    """
    best_dir = run.best_dir.resolve()
    paths: dict[str, Any] = {
        "node": None,
        "best_dir": str(best_dir),
        "src": None,
        "manifest": None,
        "submission": None,
    }
    manifest_path = best_dir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return paths
    if not isinstance(manifest, dict):
        return paths
    paths["node"] = manifest.get("node")
    paths["manifest"] = str(manifest_path)
    if (best_dir / "src").is_dir():
        paths["src"] = str(best_dir / "src")
    submission = manifest.get("submission")
    if isinstance(submission, str) and submission:
        target = best_dir / Path(submission).name  # a name inside best/, never a path elsewhere
        if target.is_file():
            paths["submission"] = str(target)
    return paths
