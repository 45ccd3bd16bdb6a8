"""A stand-in user image for the docker sandbox tests, built offline from Debian's python3.11."""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from pathlib import Path

USER_IMAGE = "rlab-test-user:py311"
_STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "__pycache__"}


def build_user_image(client) -> None:
    """A stand-in for an image built from docs/candidate.Dockerfile (nothing can be pulled):
    Debian's python3.11 at /usr/local/bin/python with its stdlib and libraries, a closed
    /root like python:3.11-slim's, and no host mounts at all."""
    python = Path("/usr/bin/python3.11")
    libs = subprocess.run(["ldd", str(python)], capture_output=True, text=True, check=True)
    paths = re.findall(r"(/\S+\.so[.\d]*)", libs.stdout)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, mode in (("root", 0o700), ("tmp", 0o1777), ("etc", 0o755)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            archive.addfile(info)
        passwd = b"root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        archive.addfile(info, io.BytesIO(passwd))
        archive.add(python, "usr/local/bin/python")
        for lib in paths:
            archive.add(os.path.realpath(lib), lib.lstrip("/"))
        stdlib = Path("/usr/lib/python3.11")
        archive.add(
            stdlib,
            str(stdlib).lstrip("/"),
            filter=lambda t: None if _STDLIB_SKIP & set(Path(t.name).parts) else t,
        )
    client.api.import_image_from_data(
        buffer.getvalue(),
        repository=USER_IMAGE.split(":")[0],
        tag=USER_IMAGE.split(":")[1],
        changes=["ENV PATH=/usr/local/bin:/usr/bin:/bin"],
    )
