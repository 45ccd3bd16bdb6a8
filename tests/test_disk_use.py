"""A run's disk use does not multiply: identical files are stored once, links never reach
a candidate, and a run folder that grows large says so once."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import edit, extra

from rlab_core import blobs
from rlab_core.best_export import export_best
from rlab_core.blobs import BlobStore, RunStorage, measure_run
from rlab_core.edits import share_source, write_source
from rlab_core.final import finalize
from rlab_core.outputs import OutputsRefused, disk_usage_bytes, take_outputs
from rlab_core.runner import prepare_task
from rlab_core.testing.toy import SEED_DIR

MiB = 2**20
ASSET_MB = 20

SLOPE_2 = {"hypothesis": "Slope 2.", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")]}
SLOPE_3 = {"hypothesis": "Slope 3.", "edits": [edit("SLOPE = 2.0\n", "SLOPE = 3.0\n")]}
INTERCEPT_1 = {
    "hypothesis": "Intercept 1.",
    "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n")],
}
#: Changes the program but not one prediction: its outputs equal its parent's.
COMMENT_ONLY = {"hypothesis": "A comment.", "edits": [extra("# nothing changes")]}


def inode(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def seed_with_asset(folder: Path, megabytes: int) -> Path:
    """The toy seed plus a binary asset of random bytes (no file system can compress it)."""
    folder.mkdir()
    (folder / "main.py").write_text((SEED_DIR / "main.py").read_text())
    (folder / "asset.bin").write_bytes(os.urandom(megabytes * MiB))
    return folder


def test_a_seed_asset_is_stored_once_however_many_nodes_inherit_it(run_toy, tmp_path):
    seed = seed_with_asset(tmp_path / "my_program", ASSET_MB)
    outcome = run_toy([SLOPE_2, SLOPE_3, INTERCEPT_1], seed_candidate=seed, iterations=3)
    run = outcome.run
    nodes = sorted(p.name for p in run.nodes_dir.iterdir())
    assert len(nodes) == 4 and outcome.best is not None and outcome.best.id == nodes[-1]

    used = disk_usage_bytes([run.root])  # st_blocks of each inode once
    print(f"\nrun folder with a {ASSET_MB} MiB seed asset, -i 3: {used / MiB:.1f} MiB on disk")
    assert used < 1.5 * ASSET_MB * MiB
    # every node (and best/) still holds the asset, byte for byte: one inode, five names
    assets = [run.node_src(n) / "asset.bin" for n in nodes] + [run.best_dir / "src/asset.bin"]
    assert len({inode(p) for p in assets}) == 1
    assert (run.best_dir / "src/asset.bin").read_bytes() == (seed / "asset.bin").read_bytes()
    # the user's seed folder is copied, never linked: editing it later cannot change the run
    assert (seed / "asset.bin").stat().st_nlink == 1
    # each node's program is its own where it differs
    assert "SLOPE = 3.0" in (run.node_src(nodes[2]) / "main.py").read_text()
    assert "SLOPE = 2.0" in (run.node_src(nodes[1]) / "main.py").read_text()


def test_identical_outputs_are_stored_once_and_best_adds_nothing_new(run_toy):
    outcome = run_toy([COMMENT_ONLY], iterations=1)
    run = outcome.run
    seed, child = sorted(p.name for p in run.nodes_dir.iterdir())
    val = [run.node_dir(n) / "outputs" / "val_predictions.json" for n in (seed, child)]
    test = [run.private_node_dir(n) / "test_predictions.json" for n in (seed, child)]
    assert val[0].read_text() == val[1].read_text()
    assert inode(val[0]) == inode(val[1])
    assert inode(test[0]) == inode(test[1])
    # best/: the artifacts are the node's outputs, the toy's submission equals the test
    # predictions — all stored once
    best = outcome.best.id
    assert inode(run.best_dir / "artifacts" / "val_predictions.json") == inode(val[0])
    assert inode(run.best_dir / "submission.json") == inode(test[0])
    assert inode(run.best_dir / "src" / "main.py") == inode(run.node_src(best) / "main.py")
    # the programs differ: each node keeps its own main.py
    assert inode(run.node_src(seed) / "main.py") != inode(run.node_src(child) / "main.py")
    # the store is in the private folder: the test side's content is not named outside it
    assert all(p.is_relative_to(run.private_dir) for p in BlobStore.of_run(run).root.rglob("*"))


def test_rlab_final_scores_the_stored_test_predictions(run_toy, toy_host):
    outcome = run_toy([SLOPE_2], iterations=1)
    stored = outcome.run.private_node_dir(outcome.best.id) / "test_predictions.json"
    assert stored.stat().st_nlink > 1  # a stored file: one more name in private/store
    report = finalize(toy_host, outcome.run)
    assert report["test_metrics"] and report.get("test_error") is None


def test_a_candidate_never_writes_through_a_shared_file(run_toy, tmp_path):
    seed = seed_with_asset(tmp_path / "my_program", 1)
    original = (seed / "asset.bin").read_bytes()
    # the child writes into its working copy's asset, in place, then predicts as before
    scribble = {
        "hypothesis": "Scribble on the asset.",
        "edits": [
            extra("with open('asset.bin', 'r+b') as _f:\n    _f.write(b'written by a candidate')")
        ],
    }
    outcome = run_toy([scribble], seed_candidate=seed, iterations=1)
    run = outcome.run
    nodes = sorted(p.name for p in run.nodes_dir.iterdir())
    assert all(n.score is not None for n in outcome.seeds)
    for name in nodes:
        assert (run.node_src(name) / "asset.bin").read_bytes() == original
    for path in BlobStore.of_run(run).root.rglob("*"):
        if path.is_file() and path.stat().st_size == len(original):
            assert path.read_bytes() == original


def test_write_source_replaces_a_shared_file_instead_of_writing_through_it(tmp_path):
    parent, child = tmp_path / "parent", tmp_path / "child"
    parent.mkdir()
    (parent / "main.py").write_text("SLOPE = 1.0\n")
    (parent / "asset.bin").write_bytes(b"\0" * 4096)
    os.chmod(parent / "main.py", 0o755)
    share_source(parent, child)
    assert inode(child / "main.py") == inode(parent / "main.py")
    write_source(child, {"main.py": "SLOPE = 2.0\n"}, ["main.py"])
    assert (parent / "main.py").read_text() == "SLOPE = 1.0\n"
    assert (child / "main.py").read_text() == "SLOPE = 2.0\n"
    assert os.access(child / "main.py", os.X_OK)  # the mode of the file it replaced
    assert inode(child / "asset.bin") == inode(parent / "asset.bin")  # unchanged: shared
    assert sorted(p.name for p in child.iterdir()) == ["asset.bin", "main.py"]  # no temp left


def _other_file_system(tmp_path: Path) -> Path:
    for root in ("/dev/shm", tempfile.gettempdir(), "/run", "/var/tmp"):
        writable = Path(root).is_dir() and os.access(root, os.W_OK)
        if writable and os.stat(root).st_dev != os.stat(tmp_path).st_dev:
            return Path(tempfile.mkdtemp(dir=root))
    pytest.skip("no second writable file system here to link across")


def test_links_fall_back_to_copies_across_file_systems(tmp_path):
    elsewhere = _other_file_system(tmp_path)
    try:
        (elsewhere / "src").mkdir()
        (elsewhere / "src" / "asset.bin").write_bytes(b"x" * 10_000)
        share_source(elsewhere / "src", tmp_path / "copy")
        copied = tmp_path / "copy" / "asset.bin"
        assert copied.read_bytes() == b"x" * 10_000 and copied.stat().st_nlink == 1
        # a store on another file system: the record stays a copy of its own, counted as new
        store = BlobStore(elsewhere / "store")
        assert store.share(tmp_path / "copy") == copied.stat().st_blocks * 512
        assert copied.stat().st_nlink == 1 and copied.read_bytes() == b"x" * 10_000
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_take_outputs_takes_stored_files_and_still_refuses_other_links(tmp_path):
    node = tmp_path / "outputs"
    node.mkdir()
    (node / "val_predictions.json").write_text("[1, 2, 3]")
    store = BlobStore(tmp_path / "store")
    store.share(node)
    taken = take_outputs(node, tmp_path / "final", max_bytes=MiB, shared=store.inodes())
    assert taken.files == ("val_predictions.json",)
    # a copy: a scorer that writes into what it was given never reaches the stored file
    copy = tmp_path / "final" / "val_predictions.json"
    assert copy.read_text() == "[1, 2, 3]" and copy.stat().st_nlink == 1
    # without the store's inodes (a candidate's folder) the same file is refused
    with pytest.raises(OutputsRefused, match="hard link"):
        take_outputs(node, tmp_path / "refused", max_bytes=MiB)
    # a hard link the store does not hold is refused even when stored ones are allowed
    (tmp_path / "elsewhere.txt").write_text("labels")
    os.link(tmp_path / "elsewhere.txt", node / "test_predictions.json")
    with pytest.raises(OutputsRefused, match=r"test_predictions\.json.*hard link"):
        take_outputs(node, tmp_path / "again", max_bytes=MiB, shared=store.inodes())


def test_the_store_forgets_what_no_record_names(tmp_path):
    folder = tmp_path / "node"
    folder.mkdir()
    (folder / "a.bin").write_bytes(os.urandom(50_000))
    store = BlobStore(tmp_path / "store")
    assert store.share(folder) > 0
    assert store.share(folder) == 0  # already stored
    (folder / "a.bin").unlink()  # a dropped node
    assert store.prune() > 0
    assert not [p for p in store.root.rglob("*") if p.is_file()]


def test_a_large_run_folder_is_warned_about_once(run_toy, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(blobs, "WARN_BYTES", MiB)
    seed = seed_with_asset(tmp_path / "my_program", 2)
    caplog.set_level(logging.WARNING, logger="rlab_core.blobs")
    outcome = run_toy([SLOPE_2, SLOPE_3, INTERCEPT_1], seed_candidate=seed, iterations=3)
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlab_core.blobs"]
    # past the level from the seed on, yet said once, with the size and what takes it
    assert len(warnings) == 1, warnings
    assert str(outcome.run.root) in warnings[0]
    assert "program sources 2.0 MiB" in warnings[0] and "more than 1.0 MiB" in warnings[0]


def test_measure_run_counts_a_shared_file_once(run_toy, tmp_path):
    seed = seed_with_asset(tmp_path / "my_program", 2)
    outcome = run_toy([SLOPE_2], seed_candidate=seed, iterations=1)
    parts = measure_run(outcome.run)
    assert 2 * MiB <= parts["program sources"] < 3 * MiB
    assert sum(parts.values()) == pytest.approx(disk_usage_bytes([outcome.run.root]), rel=0.05)
    storage = RunStorage(outcome.run, warn_bytes=10**12)
    assert storage.size_bytes == sum(measure_run(outcome.run).values())


def test_exporting_best_again_copies_nothing(run_toy, toy_host, tmp_path):
    seed = seed_with_asset(tmp_path / "my_program", 2)
    outcome = run_toy([SLOPE_2], seed_candidate=seed, iterations=1)
    run, best = outcome.run, outcome.best
    before = disk_usage_bytes([run.root])
    # exported again (as a resumed run does at its end): only a new manifest is written
    export_best(run, prepare_task(toy_host, "toy:line"), best, outputs_mb=1.0)
    assert disk_usage_bytes([run.root]) <= before + 16 * 1024
    assert inode(run.best_dir / "src" / "asset.bin") == inode(run.node_src(best.id) / "asset.bin")
    manifest = json.loads((run.best_dir / "manifest.json").read_text())
    assert manifest["node"] == best.id and manifest["submission"] == "submission.json"
    assert not (run.root / "best.partial").exists()
