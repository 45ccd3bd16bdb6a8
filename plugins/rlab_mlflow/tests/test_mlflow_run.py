"""A real toy run mirrored into a real MLflow server, read back through MLflow's own client."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from rlab_mlflow.link import Link

from rlab_core.final import finalize
from rlab_core.journal import read_events
from rlab_core.run_folder import open_run
from rlab_core.runner import resume_run
from rlab_core.testing.toy import edit, extra

#: A node that improves the toy seed (RMSE falls), and one that crashes.
SLOPE_3 = {
    "hypothesis": "Slope 3 fits the trend.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")],
}
CRASH = {
    "hypothesis": "Intercept 1, but the program dies.",
    "edits": [extra("INTERCEPT = 1.0\nprint('about to fail')\nraise SystemExit(3)")],
}


def _experiment() -> str:
    return f"rlab-test-{uuid.uuid4().hex[:8]}"


def _runs(client: MlflowClient, experiment: str) -> tuple[list, dict[str, object]]:
    """The parent runs and the nested runs by rlab node id."""
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment}"
    runs = client.search_runs([found.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    nodes = {r.data.tags["rlab.node_id"]: r for r in runs if "mlflow.parentRunId" in r.data.tags}
    return parents, nodes


def _nodes(run) -> dict[str, dict]:
    events = read_events(run.journal_path)[0]
    return {e["node"]["id"]: e["node"] for e in events if e["type"] == "node_finished"}


def test_a_run_and_its_final_are_mirrored_into_mlflow(
    run_toy, host, mlflow_server, tmp_path, capsys
):
    experiment = _experiment()
    options = {"enabled": True, "uri": mlflow_server, "experiment": experiment}
    outcome = run_toy([SLOPE_3, CRASH], options)
    report = finalize(host, outcome.run)
    # MLflow's client prints run links on stdout unless told not to: rlab's stdout stays rlab's
    assert "View run" not in capsys.readouterr().out

    client = MlflowClient(mlflow_server)
    parents, nodes = _runs(client, experiment)
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.run_name == outcome.run.run_id
    assert parent.info.status == "FINISHED"
    link = Link.read(outcome.run.root)
    assert link.run_id == parent.info.run_id and link.dropped_events == 0

    journal = _nodes(outcome.run)
    assert set(nodes) == set(journal) and len(journal) >= 3  # seed, slope 3, the crash
    for node_id, record in journal.items():
        run = nodes[node_id]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.info.run_name == node_id
        assert run.data.tags["status"] == record["status"]
        assert run.data.tags["kind"] == record["kind"]
        assert run.data.tags["iteration"] == str(record["iteration"])
        assert run.data.tags["stage"] == record["stage"]
        assert run.data.params["task"] == "toy:line"
        assert run.data.params["agent"] == "scripted"
        assert run.data.params["strategy"] == "best-first"
        assert run.data.params["sandbox"] == "local"
        assert run.data.params["seed"] == "0"
        assert run.data.params["parent"] == (record["parent_id"] or "none")
        assert run.data.params["hypothesis"] == record["hypothesis"][:500]
        assert run.data.metrics["wall_s"] == pytest.approx(record["execution"]["wall_s"])
        assert "peak_memory_mb" in run.data.metrics and "tokens" in run.data.metrics
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert "result.json" in files
        logged = json.loads(
            Path(
                client.download_artifacts(run.info.run_id, "result.json", str(tmp_path))
            ).read_text()
        )
        assert logged["id"] == node_id

    improved = next(n for n in journal.values() if n["hypothesis"] == SLOPE_3["hypothesis"])
    crashed = next(n for n in journal.values() if n["hypothesis"] == CRASH["hypothesis"])
    good = nodes[improved["id"]]
    assert good.info.status == "FINISHED"
    assert good.data.metrics["val_primary"] == pytest.approx(improved["score"]["primary"])
    metric = improved["score"]["primary_metric"]
    assert good.data.metrics[f"val_{metric}"] == pytest.approx(improved["score"]["metrics"][metric])
    assert good.data.tags["verdict"] == improved["gain"]["verdict"]
    diff = client.download_artifacts(good.info.run_id, "diff.patch", str(tmp_path / "d"))
    assert Path(diff).read_text() == improved["diff"] and "SLOPE = 3.0" in improved["diff"]
    bad = nodes[crashed["id"]]
    assert bad.info.status == "FAILED" and bad.data.tags["status"] == "failed"
    tail = client.download_artifacts(bad.info.run_id, "log_tail.txt", str(tmp_path / "t"))
    assert "about to fail" in Path(tail).read_text()

    # the winner, on its node run and on the parent; the test metrics and the report
    assert nodes[report["node"]].data.tags["winner"] == "true"
    assert sum(r.data.tags.get("winner") == "true" for r in nodes.values()) == 1
    assert parent.data.tags["winner"] == report["node"] == outcome.best.id
    for name, value in report["test_metrics"].items():
        assert parent.data.metrics[f"test_{name}"] == pytest.approx(value)
    assert parent.data.metrics["test_primary"] == pytest.approx(report["test_primary"])
    assert parent.data.tags["final_node"] == report["node"]
    assert "final_report.json" in {a.path for a in client.list_artifacts(parent.info.run_id)}


def test_a_resumed_run_continues_the_same_mlflow_run(run_toy, host, mlflow_server):
    experiment = _experiment()
    options = {"enabled": True, "uri": mlflow_server, "experiment": experiment}
    outcome = run_toy([SLOPE_3, CRASH], options, iterations=1)
    first = Link.read(outcome.run.root).run_id
    resume_run(host, open_run(outcome.run.root), iterations=2)

    parents, nodes = _runs(MlflowClient(mlflow_server), experiment)
    assert [p.info.run_id for p in parents] == [first]
    assert parents[0].data.tags["resumed"] == "true"
    assert parents[0].info.status == "FINISHED"
    assert set(nodes) == set(_nodes(outcome.run)) and len(nodes) == 3


def test_an_unreachable_server_is_one_warning_and_a_count(run_toy, closed_port, caplog):
    # a closed port, and a password that must never reach a log line
    uri = f"http://alice:s3cret@127.0.0.1:{closed_port}"
    options = {"enabled": True, "uri": uri, "retries": 1, "timeout_s": 1}
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG):
        outcome = run_toy([SLOPE_3], options)
    assert outcome.best is not None and outcome.best.score.primary < 1.0
    assert time.monotonic() - started < 60
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    dropped = Link.read(outcome.run.root).dropped_events
    events = read_events(outcome.run.journal_path)[0]
    # every event up to run_stopped was dropped, nothing was logged
    assert dropped == len([e for e in events if e["seq"] <= events[-1]["seq"]]) - sum(
        e["type"] == "best_exported" for e in events
    )
    message = warnings[0].getMessage()
    assert f"{dropped} event(s)" in message and "dropped_events" in message
    assert "alice" not in caplog.text and "s3cret" not in caplog.text
    assert "***@127.0.0.1" in message


def test_the_default_store_is_a_local_mlruns_folder(run_toy, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outcome = run_toy([SLOPE_3], {"enabled": True})
    store = tmp_path / "mlruns"  # beside the runs folder
    assert store.is_dir()
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    parents, nodes = _runs(MlflowClient(store.as_uri()), "rlab")
    assert [p.info.run_name for p in parents] == [outcome.run.run_id]
    assert set(nodes) == set(_nodes(outcome.run))


def test_installed_but_not_enabled_changes_nothing(run_toy, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outcome = run_toy([SLOPE_3], {})
    assert not (outcome.run.root / "mlflow.json").exists()
    assert not (tmp_path / "mlruns").exists()
