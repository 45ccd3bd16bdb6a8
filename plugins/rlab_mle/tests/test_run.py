"""A real research loop on a competition rlab-mle has never seen, then `rlab final`.

The test grade must appear nowhere (journal, run folder outside ``private/``, what the
agent was shown) until `rlab final` writes it, with the leaderboard's medal thresholds.
"""

from __future__ import annotations

import json
from pathlib import Path

import rlab_mle.plugin as plugin

from rlab_core.api import AgentInfo, EmptyConfig, hookimpl
from rlab_core.config import RunConfig
from rlab_core.final import finalize
from rlab_core.plugins import PluginHost
from rlab_core.runner import start_run
from rlab_core.testing import RankedPlaybookAgent

SEEN: list[str] = []


class RecordingPlaybook(RankedPlaybookAgent):
    """The testing kit's playbook agent, keeping every context it is shown."""

    def propose(self, context):
        SEEN.append(context.model_dump_json())
        return super().propose(context)


class RecordingPlugin:
    @hookimpl
    def rlab_register_agents(self):
        return [
            AgentInfo("recording", "playbook that records", lambda: RecordingPlaybook, EmptyConfig)
        ]


def test_loop_then_final_grades_once_with_medals(user_folders, rlab_cache_home, tmp_path) -> None:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(plugin, name="mle")
    host.register(RecordingPlugin(), name="recording")
    config = RunConfig(
        task="mle:flights-late",
        agent="recording",
        out=tmp_path / "runs",
        iterations=2,
        min_iterations=2,
        threads=1,
        smoke_run=False,
        benchmark_options={
            "data_dir": str(user_folders["data"]),
            "competitions_dir": str(user_folders["definitions"]),
        },
    )
    outcome = start_run(host, config)
    run = outcome.run
    assert outcome.best is not None and outcome.best.score is not None
    assert (run.root / "best" / "submission.csv").is_file()
    check = json.loads((run.root / "best" / "submission_check.json").read_text())
    assert check == {"valid": True, "message": "Submission is valid."}
    assert SEEN, "the agent was asked at least once"

    # before `rlab final`: no grading report, no medal field, anywhere an agent could look
    def public_text() -> str:
        texts = []
        for path in run.root.rglob("*"):
            if path.is_file() and "private" not in path.relative_to(run.root).parts:
                texts.append(path.read_text(errors="replace"))
        return "\n".join(texts + SEEN)

    before = public_text()
    for marker in ("gold_threshold", "any_medal", "grading_report", "valid_submission"):
        assert marker not in before
    assert not list(run.private_dir.rglob("grading_report.json"))

    report = finalize(host, run)
    grade = report["test_details"]["grading_report"]
    assert report["selected_by"] == "validation" and report["audit"]["clean"], report["audit"]
    assert grade["competition_id"] == "flights-late" and grade["valid_submission"]
    assert (grade["gold_threshold"], grade["silver_threshold"], grade["bronze_threshold"]) == (
        0.78,
        0.74,
        0.66,
    )
    assert grade["score"] == report["test_primary"] == report["test_metrics"]["auc-roc"]
    score_text = f"{grade['score']:.5f}".rstrip("0")
    assert score_text not in before or score_text in json.dumps(report["val_metrics"])
    assert json.loads(Path(run.final_report).read_text())["test_details"]["grading_report"] == grade
