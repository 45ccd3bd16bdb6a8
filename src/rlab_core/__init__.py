"""rlab core: the research loop, its contracts and the plugin host.

Public API for plugin authors lives in :mod:`rlab_core.interfaces` (contracts),
:mod:`rlab_core.records` (records), :mod:`rlab_core.hookspecs` (hooks and ``*Info``
records) and :mod:`rlab_core.errors` (exceptions a plugin may raise).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from rlab_core.hookspecs import hookimpl

try:
    __version__ = version("rlab-core")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0.0.0+source"

__all__ = ["__version__", "hookimpl"]
