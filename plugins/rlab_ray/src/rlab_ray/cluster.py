"""Joining or starting the Ray cluster the ``ray`` sandbox runs candidates on."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

# Under `uv run`, Ray would rebuild that uv environment for its workers and upload the
# current folder (a run folder, private labels and all) as their working directory. Workers
# here use the interpreter they were started with; RAY_ENABLE_UV_RUN_RUNTIME_ENV=1 opts back in.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray

from rlab_core.api import ConfigError, SandboxUnavailableError
from rlab_ray.options import RaySandboxConfig

log = logging.getLogger(__name__)


@dataclass
class Cluster:
    """A connection to a Ray cluster; ``owned`` when this process started the cluster."""

    address: str
    owned: bool

    def nodes(self) -> list[dict[str, Any]]:
        """The alive nodes, as ``ray.nodes()`` describes them."""
        return [n for n in ray.nodes() if n.get("Alive")]

    def resources(self) -> dict[str, Any]:
        """CPUs of the whole cluster and of its largest node, memory, node count."""
        nodes = self.nodes()
        cpus = [float(n.get("Resources", {}).get("CPU", 0)) for n in nodes]
        memory = sum(float(n.get("Resources", {}).get("memory", 0)) for n in nodes)
        return {
            "nodes": len(nodes),
            "cpus": sum(cpus),
            "largest_node_cpus": max(cpus, default=0.0),
            "memory_gb": round(memory / 2**30, 1),
        }

    def close(self) -> None:
        """Stop the cluster if this process started it; leave a joined one running."""
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


def _gcs_address(fallback: str) -> str:
    with contextlib.suppress(Exception):
        return str(ray.get_runtime_context().gcs_address)
    return fallback


def _without_uv_run_hook() -> None:
    """Keep Ray's `uv run` hook off even when ray was imported before this module."""
    if os.environ.get("RAY_ENABLE_UV_RUN_RUNTIME_ENV") == "0":
        with contextlib.suppress(ImportError, AttributeError):
            from ray._private import ray_constants

            ray_constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = False


def check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """Fail fast on a HOST:PORT nobody answers at (Ray itself retries for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # not HOST:PORT: let Ray parse it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise SandboxUnavailableError(
            f"Nothing answers at the Ray address '{address}' ({exc.strerror or exc}); start the "
            "cluster with `ray start --head`, or use -o sandbox.address=local."
        ) from None


def connect(options: RaySandboxConfig) -> Cluster:
    """Connect as ``options.address`` says; reuse this process's connection if it has one."""
    local = options.address == "local"
    if not local and (options.num_cpus is not None or options.object_store_mb is not None):
        raise ConfigError(
            "sandbox.num_cpus and sandbox.object_store_mb size a cluster rlab starts; they "
            "only apply with -o sandbox.address=local."
        )
    if ray.is_initialized():
        address = _gcs_address(options.address)
        log.info("ray sandbox: using this process's Ray connection (%s)", address)
        return Cluster(address=address, owned=False)
    _without_uv_run_hook()
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING}
    if local:
        kwargs.update(
            address="local",
            num_cpus=options.num_cpus,
            include_dashboard=False,
        )
        if options.object_store_mb is not None:
            kwargs["object_store_memory"] = options.object_store_mb * 2**20
    else:
        if options.address != "auto" and "://" not in options.address:
            check_reachable(options.address)
        kwargs["address"] = options.address
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SandboxUnavailableError(
            f"Cannot reach the Ray cluster at '{options.address}': {exc}. Start one with "
            "`ray start --head`, or use -o sandbox.address=local."
        ) from None
    return Cluster(address=_gcs_address(options.address), owned=local)
