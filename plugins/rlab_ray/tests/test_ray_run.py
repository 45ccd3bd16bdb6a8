"""End to end: the real `rlab` executable runs the toy task with `--sandbox ray --workers 2`.

The run joins the session's cluster by its address (a second Ray driver, as on a cluster
started with `ray start --head`), and must leave it running when it closes the sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ray
import yaml

from rlab_core.journal import read_events

RLAB = str(Path(sys.executable).parent / "rlab")


def _step(i: int) -> dict:
    """Set the slope to 1.5, 2.0, 2.5: applies to any parent, so parallel order does not matter."""
    slope = 1 + 0.5 * (i + 1)
    marker = "# extra behaviour\n"
    return {
        "hypothesis": f"step {i}: a steeper slope, {slope}",
        "edits": [
            {"file": "main.py", "anchor": marker, "replacement": f"SLOPE = {slope}\n{marker}"}
        ],
    }


def test_rlab_run_with_the_ray_sandbox(tmp_path, ray_address):
    config = tmp_path / "toy.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "task": "toy:line",
                "agent": "scripted",
                "agent_options": {"script": [_step(i) for i in range(3)]},
                "min_iterations": 10,
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAB_")}
    env.update(
        RLAB_PLUGIN_MODULES="rlab_core.testing.toy.plugin",  # toy benchmark, scripted agent
        RLAB_CACHE_HOME=str(tmp_path / "rlab-cache"),
        RLAB_STRICT_PLUGINS="1",
    )
    done = subprocess.run(
        [
            RLAB,
            "run",
            "--config",
            str(config),
            "-i",
            "3",
            "--out",
            str(tmp_path / "runs"),
            "--sandbox",
            "ray",
            "--workers",
            "2",
            "-o",
            f"sandbox.address={ray_address}",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    run_dir = next((tmp_path / "runs").iterdir())
    info = json.loads((run_dir / "run.json").read_text())
    isolation = info["isolation"]
    assert isolation["level"].startswith("ray+") and isolation["address"] == ray_address
    assert isolation["cluster_started_here"] is False
    nodes = {}
    for node_dir in sorted((run_dir / "nodes").iterdir()):
        nodes[node_dir.name] = json.loads((node_dir / "result.json").read_text())
    assert len(nodes) == 4, list(nodes)  # the seed and three steps
    for node_id, node in nodes.items():
        assert node["status"] == "evaluated", (node_id, node["failure"])
        assert node["execution"]["isolation"] == isolation["level"]
        # log and outputs came back from the worker into the run folder
        assert "stage full" in (run_dir / "nodes" / node_id / "log.txt").read_text()
        assert (run_dir / "nodes" / node_id / "outputs" / "val_predictions.json").is_file()
        assert (run_dir / "private" / "nodes" / node_id / "test_predictions.json").is_file()
    # slopes 1, 1.5, 2, 2.5 approach the true 3: the steeper, the lower the validation RMSE
    by_rmse = sorted(nodes.values(), key=lambda n: n["score"]["primary"])
    assert "2.5" in by_rmse[0]["hypothesis"] and by_rmse[-1]["kind"] == "seed"
    events, torn = read_events(run_dir / "journal.jsonl")
    assert not torn and sum(e["type"] == "node_finished" for e in events) == 4
    assert ray.get(ray.remote(lambda: 7).remote(), timeout=60) == 7  # the cluster is still up
