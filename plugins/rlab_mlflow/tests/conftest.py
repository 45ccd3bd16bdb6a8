"""A real ``mlflow server`` on 127.0.0.1 for the session, and a toy research run to mirror.

The server keeps its runs in a SQLite file and its artifacts in a folder, both temporary;
it is started once (a few seconds) and stopped at the end of the session.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rlab_core.config import RunConfig
from rlab_core.plugins import PluginHost
from rlab_core.runner import RunOutcome, start_run
from rlab_core.testing.fixtures import (  # noqa: F401  (autouse: each test's own base)
    isolated_knowledge_base,
    module_knowledge_base,
)


def free_port() -> int:
    """A TCP port nothing listens on right now (closed again at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where no server answers."""
    return free_port()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real MLflow tracking server this test session started."""
    mlflow = Path(sys.executable).parent / "mlflow"
    if not mlflow.exists():
        pytest.fail(f"no `mlflow` command beside {sys.executable}: install the test group")
    folder = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        str(mlflow),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination",
        str(folder / "artifacts"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    with (folder / "server.log").open("w") as out:
        server = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log = (folder / "server.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"mlflow server did not answer (exit {server.poll()}):\n{log}")
            time.sleep(0.3)
        yield url
    finally:
        # the server's own workers are in its process group
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


@pytest.fixture
def host() -> PluginHost:
    """The toy benchmark, the scripted agent and this plugin, nothing installed leaking in."""
    from rlab_mlflow import plugin as mlflow_plugin

    from rlab_core.testing.toy import plugin as toy_plugin

    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(mlflow_plugin, name="mlflow")
    return host


@pytest.fixture
def run_toy(
    host: PluginHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., RunOutcome]:
    """Run ``toy:line`` with a script and the given MLflow options."""
    monkeypatch.setenv("RLAB_CACHE_HOME", str(tmp_path / "rlab-cache"))

    def run(script: list[dict[str, Any]], mlflow: dict[str, Any], **overrides: Any) -> RunOutcome:
        config = RunConfig(
            task="toy:line",
            agent="scripted",
            agent_options={"script": script},
            out=tmp_path / "runs",
            observer_options={"mlflow": mlflow} if mlflow else {},
            **{
                "iterations": len(script) + 2,
                "min_iterations": 100,
                "finalists": 0,
                "noise_seeds": 0,
                **overrides,
            },
        )
        return start_run(host, config)

    return run
