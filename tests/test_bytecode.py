"""The environment's bytecode is compiled once, and again only when a package changes."""

from __future__ import annotations

import os
from pathlib import Path

from rlab_core.bytecode import ensure_bytecode, site_folders


def _package(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "__init__.py").write_text("VALUE = 1\n")
    return folder


def test_compiled_once_then_again_after_an_install(tmp_path: Path):
    site = tmp_path / "site-packages"
    site.mkdir()
    first = _package(site, "alpha")
    assert ensure_bytecode([site]) is not None
    assert list((first / "__pycache__").glob("__init__.*.pyc"))
    assert ensure_bytecode([site]) is None  # unchanged: nothing to do
    second = _package(site, "beta")  # an install adds a folder: the site's time changes
    assert ensure_bytecode([site]) is not None
    assert list((second / "__pycache__").glob("__init__.*.pyc"))
    assert ensure_bytecode([site]) is None


def test_a_folder_it_cannot_write_is_left_alone(tmp_path: Path):
    site = tmp_path / "site-packages"
    site.mkdir()
    package = _package(site, "alpha")
    site.chmod(0o555)
    try:
        if os.access(site, os.W_OK):  # root ignores the mode
            return
        assert ensure_bytecode([site]) is None
        assert not (package / "__pycache__").exists()
    finally:
        site.chmod(0o755)


def test_the_interpreters_site_packages_are_found():
    assert any(folder.name in ("site-packages", "dist-packages") for folder in site_folders())
