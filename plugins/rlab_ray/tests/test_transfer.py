"""The file route: tar archives through the object store, and paths rewritten for the worker."""

from __future__ import annotations

import io
import os
import tarfile

import pytest
from rlab_ray.transfer import data_fingerprint, pack_folder, relocate_env, unpack_folder


def test_pack_and_unpack_keep_files_folders_and_modes(tmp_path):
    src = tmp_path / "src"
    (src / "pkg" / "deep").mkdir(parents=True)
    (src / "main.py").write_text("print('hi')\n")
    (src / "pkg" / "deep" / "weights.bin").write_bytes(bytes(range(256)) * 10)
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    (src / "empty").mkdir()
    os.symlink("/etc/passwd", src / "passwd-link")
    os.symlink(src / "pkg", src / "pkg-link")

    data, skipped = pack_folder(src)
    dest = tmp_path / "dest"
    unpack_folder(data, dest)

    assert sorted(skipped) == ["passwd-link", "pkg-link"]
    assert (dest / "main.py").read_text() == "print('hi')\n"
    assert (dest / "pkg" / "deep" / "weights.bin").read_bytes() == bytes(range(256)) * 10
    assert (dest / "empty").is_dir()
    assert os.access(dest / "run.sh", os.X_OK)
    assert not (dest / "passwd-link").exists() and not (dest / "pkg-link").exists()


def _archive(*members: tarfile.TarInfo) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "member",
    [
        tarfile.TarInfo("../escape.txt"),
        tarfile.TarInfo("/abs.txt"),
    ],
)
def test_unpack_refuses_names_outside_the_folder(tmp_path, member):
    member.size = 1
    with pytest.raises(ValueError, match="refusing"):
        unpack_folder(_archive(member), tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()


def test_unpack_refuses_links(tmp_path):
    link = tarfile.TarInfo("outputs.npy")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/shadow"
    with pytest.raises(ValueError, match="refusing"):
        unpack_folder(_archive(link), tmp_path / "dest")


def test_relocate_env_moves_exact_paths_and_paths_below_them():
    env = {
        "RLAB_OUTPUT_DIR": "/runs/r1/nodes/n0001/outputs",
        "HOME": "/runs/r1/scratch/n0001",
        "OTHER": "/runs/r1/scratch/n0001/sub",
        "RLAB_DATA_DIR": "/cache/public",
        "PREFIX_ONLY": "/runs/r1/scratch/n00012",
    }
    moved = relocate_env(
        env,
        {"/runs/r1/scratch/n0001": "/tmp/w/work", "/runs/r1/nodes/n0001/outputs": "/tmp/w/out"},
    )
    assert moved == {
        "RLAB_OUTPUT_DIR": "/tmp/w/out",
        "HOME": "/tmp/w/work",
        "OTHER": "/tmp/w/work/sub",
        "RLAB_DATA_DIR": "/cache/public",
        "PREFIX_ONLY": "/runs/r1/scratch/n00012",
    }


def test_data_fingerprint_sees_other_files_and_sizes(tmp_path):
    (tmp_path / "train.csv").write_text("a,b\n1,2\n")
    (tmp_path / "sub").mkdir()
    first = data_fingerprint(tmp_path)
    assert first == (("sub", -1), ("train.csv", 8))
    (tmp_path / "train.csv").write_text("a,b\n1,2\n3,4\n")
    assert data_fingerprint(tmp_path) != first
