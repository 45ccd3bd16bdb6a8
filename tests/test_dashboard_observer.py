"""The dashboard is a built-in observer: report.html is written when a run stops (an error
or Ctrl-C included) and after its winner is exported; a broken writer never fails a run."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import edit

from rlab_core.builtin import plugin as builtin_plugin
from rlab_core.journal import read_events, replay
from rlab_core.report import html as report_html
from rlab_core.run_folder import RunFolder
from rlab_core.testing.toy.agent import ScriptedAgent

SLOPE_2 = {
    "hypothesis": "Slope 2 is closer to the data.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
}


def test_a_run_ends_with_the_dashboard_written_after_it_stops_and_exports(run_toy, monkeypatch):
    written_after: list[str] = []
    real_writer = report_html.write_report_quietly

    def spy(run: RunFolder) -> Path | None:
        events, _ = read_events(run.journal_path)
        written_after.append(events[-1]["type"])
        return real_writer(run)

    monkeypatch.setattr(report_html, "write_report_quietly", spy)
    outcome = run_toy([SLOPE_2])
    assert written_after == ["run_stopped", "best_exported"]
    page = (outcome.run.root / "report.html").read_text()
    assert outcome.best.id in page and "Slope 2 is closer to the data." in page


def test_the_observer_writes_only_after_the_events_that_change_the_dashboard(run_toy):
    outcome = run_toy([SLOPE_2])
    report = outcome.run.root / "report.html"
    events, _ = read_events(outcome.run.journal_path)
    for event in events:
        report.unlink(missing_ok=True)
        builtin_plugin.rlab_observe_event(event, outcome.run.root)
        assert report.exists() == (event["type"] in {"run_stopped", "best_exported", "final"})


def test_a_broken_dashboard_writer_never_fails_the_run(run_toy, monkeypatch, caplog):
    def broken(run: RunFolder) -> Path | None:
        raise RuntimeError("the report writer broke")

    monkeypatch.setattr(report_html, "write_report_quietly", broken)
    with caplog.at_level(logging.ERROR):
        outcome = run_toy([SLOPE_2])
    assert outcome.best.hypothesis == SLOPE_2["hypothesis"]
    assert (outcome.run.best_dir / "manifest.json").exists()
    assert not (outcome.run.root / "report.html").exists()
    assert "observer builtin failed on event run_stopped" in caplog.text
    assert "observer builtin failed on event best_exported" in caplog.text


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            RuntimeError("a bug in the agent"),
            "stopped by an error: RuntimeError: a bug in the agent",
        ),
        (KeyboardInterrupt(), "interrupted (Ctrl-C); continue with `rlab resume`"),
    ],
)
def test_a_run_ended_by_an_exception_journals_why_and_still_gets_its_dashboard(
    run_toy, monkeypatch, tmp_path, error, reason
):
    def propose(self, context):
        raise error

    monkeypatch.setattr(ScriptedAgent, "propose", propose)
    with pytest.raises(type(error)):
        run_toy([SLOPE_2])
    run = RunFolder(next((tmp_path / "runs").glob("*/journal.jsonl")).parent)
    state = replay(run.journal_path)
    assert state.stop_reason == reason
    assert [n.kind for n in state.tree] == ["seed"] and not state.in_flight  # the seed is kept
    assert (run.root / "report.html").exists()
    assert not run.best_dir.exists()  # nothing is exported from an interrupted search
