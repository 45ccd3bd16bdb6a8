"""One local Ray cluster for the whole test session: 2 CPUs, a small object store, no dashboard.

It is started by a ``ray`` sandbox with ``address=local``, the way ``rlab run --sandbox ray``
starts one, and the session ends by closing that sandbox and checking that the cluster it
started is gone. Every other sandbox of the session joins it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psutil
import pytest

from rlab_core.testing.fixtures import (  # noqa: F401  (autouse: each test's own base)
    isolated_knowledge_base,
    module_knowledge_base,
)


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """The GCS address of a 2-CPU local cluster that this test process started."""
    import ray
    from rlab_ray.options import RaySandboxConfig
    from rlab_ray.sandbox import RaySandbox

    owner = RaySandbox(RaySandboxConfig(address="local", num_cpus=2, object_store_mb=100))
    assert owner.isolation_details()["cluster_started_here"] is True
    daemons = [
        p for p in psutil.Process().children(recursive=True) if p.name() in ("gcs_server", "raylet")
    ]
    assert len(daemons) == 2, daemons
    try:
        yield owner.cluster.address
    finally:
        owner.close()
        assert not ray.is_initialized(), "close() must shut down the cluster the sandbox started"
        deadline = time.monotonic() + 30
        while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in daemons):
            assert time.monotonic() < deadline, f"the cluster outlived close(): {daemons}"
            time.sleep(0.2)
