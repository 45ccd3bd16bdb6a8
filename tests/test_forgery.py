"""Outputs are data: a forging seed fails with one sentence through the real CLI, and the
hostile-candidate suite's link attacks are refused whatever the isolation level."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import RLAB, cli_env

from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.journal import replay
from rlab_core.outputs import OutputsRefused, disk_usage_bytes, take_outputs
from rlab_core.testing.forgery import write_forging_seed
from rlab_core.testing.hostile import check_hostile


def test_a_forging_seed_exits_3_with_one_sentence_and_no_traceback(tmp_path: Path) -> None:
    private = tmp_path / "rlab-cache" / "toy" / "line" / "private" / "labels.json"
    victim = tmp_path / "victim.txt"
    victim.write_text("unchanged")
    seed = write_forging_seed(
        tmp_path / "forger",
        {
            "val_predictions.json": private,
            "test_predictions.json": private,
            "notes.txt": "/etc/passwd",
            "grading_report.json": victim,
        },
    )
    config = tmp_path / "toy.yaml"
    config.write_text(yaml.safe_dump({"task": "toy:line", "agent": "scripted"}))
    done = subprocess.run(
        [RLAB, "run", "--config", str(config), "--seed-candidate", str(seed), "-i", "1"],
        env=cli_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "no node was evaluated: no seed candidate ran successfully" in done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    (seed_node,) = replay(run_dir / "journal.jsonl").tree.seeds()
    assert seed_node.failure is not None and seed_node.failure.stage == "contract"
    message = seed_node.failure.message
    assert "'grading_report.json' is a symbolic link" in message and "\n" not in message
    assert victim.read_text() == "unchanged"
    assert not list(run_dir.rglob("notes.txt")) and not (run_dir / "best").exists()
    result = json.loads((run_dir / "nodes" / seed_node.id / "result.json").read_text())
    assert result["score"] is None
    final = subprocess.run(
        [RLAB, "final", str(run_dir)], env=cli_env(tmp_path), capture_output=True, text=True
    )
    assert final.returncode == 2 and "no evaluated node" in final.stderr


def test_take_outputs_copies_plain_files_and_refuses_everything_else(tmp_path: Path) -> None:
    source = tmp_path / "out"
    (source / "sub").mkdir(parents=True)
    (source / "val.npy").write_bytes(b"\x00" * 1000)
    (source / "sub" / "notes.txt").write_text("hi")
    taken = take_outputs(source, tmp_path / "taken", max_bytes=2000)
    assert taken.files == ("sub/notes.txt", "val.npy") and taken.total_bytes == 1002
    assert (tmp_path / "taken" / "val.npy").read_bytes() == b"\x00" * 1000
    with pytest.raises(OutputsRefused, match=r"'val.npy' takes the outputs past their"):
        take_outputs(source, tmp_path / "small", max_bytes=900)
    assert not (tmp_path / "small").exists()  # nothing half-taken is left to score
    os.symlink("/etc/passwd", source / "sub" / "link")
    with pytest.raises(OutputsRefused, match=r"'sub/link' is a symbolic link to '/etc/passwd'"):
        take_outputs(source, tmp_path / "again", max_bytes=2000)
    assert take_outputs(tmp_path / "missing", tmp_path / "empty", max_bytes=10).files == ()


def test_disk_usage_counts_allocated_blocks_once_and_never_follows_links(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "data.bin").write_bytes(os.urandom(1 << 20))
    with open(folder / "sparse.bin", "wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB that occupies nothing
    os.link(folder / "data.bin", folder / "again.bin")
    os.symlink("/usr", folder / "usr")
    used = disk_usage_bytes([folder])
    assert (1 << 20) <= used < (1 << 20) + (1 << 17)


def test_link_attacks_are_refused_even_without_isolation() -> None:
    """Taking outputs as data does not depend on the jail: the attacks fail at level none."""
    sandbox = LocalSandbox(LocalSandboxConfig(isolation="none"))
    link_attacks = [
        "symlink-to-private-labels",
        "relative-symlink-to-private",
        "symlinked-folder",
        "dangling-symlink",
        "host-file-as-artifact",
        "link-named-like-a-grader-file",
        "hard-link-to-private-labels",
        "hard-link-inside-outputs",
        "fifo-named-like-predictions",
        "sparse-file-past-the-outputs-cap",
        "output-folder-swapped-for-a-link",
    ]
    report = check_hostile(sandbox, attacks=link_attacks)
    assert report.tried == len(link_attacks) and not report.leaks
