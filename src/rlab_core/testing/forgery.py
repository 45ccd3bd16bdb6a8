"""A forging seed run end to end: links instead of predictions must fail, never score.

A candidate that only plants links in its output folder — named like the benchmark's
prediction files and pointing at the private labels, at a host file, at a file the grader
would write — never reads a private file itself. :func:`check_forging_run` runs such a
seed through the real loop on a benchmark's task and checks that the seed fails at the
contract stage with one sentence, that the run ends normally, that no score of 1.0 appears
anywhere in the run folder, that no host file was copied in and that no file outside the
run changed. Each benchmark plugin calls it with its own output names and private files.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlab_core.config import RunConfig
from rlab_core.errors import RlabUserError
from rlab_core.final import finalize
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import FailureStage, NodeStatus
from rlab_core.runner import RunOutcome, start_run

#: A host file a forger would like to carry off as an "artifact".
HOST_FILE = Path("/etc/passwd")
VICTIM_TEXT = "a file outside the run: must never change\n"


def write_forging_seed(folder: Path, links: Mapping[str, str | Path]) -> Path:
    """Write a seed candidate that plants ``name -> target`` links in ``$RLAB_OUTPUT_DIR``.

    It also does so for ``--debug`` (the smoke run), and reads nothing itself.
    """
    folder.mkdir(parents=True, exist_ok=True)
    pairs = {name: str(target) for name, target in links.items()}
    (folder / "main.py").write_text(
        textwrap.dedent(
            f"""\
            import os, pathlib
            OUT = pathlib.Path(os.environ["RLAB_OUTPUT_DIR"])
            for name, target in {pairs!r}.items():
                (OUT / name).parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target, OUT / name)
            print("planted", len({pairs!r}), "links")
            """
        )
    )
    return folder


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def check_forging_run(
    host: PluginHost,
    task: str,
    output_links: Mapping[str, str | Path],
    tmp: Path,
    **config: Any,
) -> RunOutcome:
    """Run a forging seed on ``task`` and check that nothing forged gets through.

    ``output_links`` maps the benchmark's output names to the private files they would
    point at; a link to :data:`HOST_FILE` and one named ``grading_report.json`` pointing at
    a victim file outside the run are added. ``config`` adds run options (benchmark
    options, limits). Raises ``AssertionError`` naming what got through.
    """
    victim = tmp / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    links = {
        **output_links,
        "notes.txt": HOST_FILE,
        "grading_report.json": victim,
    }
    seed = write_forging_seed(tmp / "forging-seed", links)
    if not host.agents():  # a run needs an agent to exist, though this one is never asked
        from rlab_core.testing import playbook

        host.register(playbook, name="ranked-playbook")
    run_config = RunConfig(task=task, seed_candidate=seed, iterations=0, out=tmp / "runs", **config)
    outcome = start_run(host, run_config)  # must return, not raise
    state = replay(outcome.run.journal_path)
    seeds = state.tree.seeds()
    assert seeds, "the forging seed never ran"
    for node in seeds:
        assert node.status != NodeStatus.EVALUATED and node.failure is not None, (
            f"the forging seed {node.id} was scored: {node.score}"
        )
        assert node.failure.stage == FailureStage.CONTRACT, (
            f"the forging seed failed at {node.failure.stage}, not at the contract: "
            f"{node.failure.message}"
        )
        assert "symbolic link" in node.failure.message and "\n" not in node.failure.message, (
            f"the failure must be one sentence naming the link: {node.failure.message!r}"
        )
    assert outcome.best is None, "a forging run must have no best node"
    try:
        finalize(host, outcome.run)
    except RlabUserError:
        pass  # nothing to score: exactly right
    else:
        raise AssertionError("rlab final scored a run whose only node was a forgery")
    host_text = HOST_FILE.read_bytes() if HOST_FILE.is_file() else b""
    for path in outcome.run.root.rglob("*"):
        assert not path.is_symlink(), f"a link reached the run folder: {path}"
        if not path.is_file():
            continue
        data = path.read_bytes()
        assert not (host_text and host_text in data), f"{HOST_FILE} was copied into {path}"
        if path.suffix in (".json", ".jsonl"):
            for line in data.decode("utf-8", "replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                scores = (
                    record.get("node", record).get("score") if isinstance(record, dict) else None
                )
                assert 1.0 not in _numbers(scores), f"a score of 1.0 appears in {path}"
    assert victim.read_text() == VICTIM_TEXT, "a file outside the run changed"
    return outcome


__all__ = ["HOST_FILE", "check_forging_run", "write_forging_seed"]
