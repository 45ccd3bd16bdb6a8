"""The jail at each level: no network, no view of private paths, no secrets, through the loop."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from rlab_core.builtin import jail
from rlab_core.builtin.jail_netns import find_netns
from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.journal import replay
from rlab_core.records import NodeKind
from rlab_core.testing import TOY_SEED_DIR, check_sandbox

needs_bwrap = pytest.mark.skipif(
    not jail.bubblewrap_works(), reason="bubblewrap is not available here"
)
needs_netns_covers = pytest.mark.skipif(
    not find_netns().covers, reason="unshare cannot give a mount namespace with covers here"
)

PROBE = """
import json, os, socket, pathlib
report = {}
def attempt(name, action):
    try:
        action()
        report[name] = "allowed"
    except Exception as exc:
        report[name] = type(exc).__name__
def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
    s.sendall(b"hello from the candidate")
    s.close()
attempt("socket", connect)
attempt("read_outside", lambda: pathlib.Path(OUTSIDE_FILE).read_text())
attempt("read_private", lambda: pathlib.Path(PRIVATE_FILE).read_text())
attempt("read_journal", lambda: pathlib.Path(JOURNAL).read_text())
attempt("write_data", lambda: pathlib.Path(os.environ["RLAB_DATA_DIR"], "x.txt").write_text("x"))
attempt("write_outside", lambda: pathlib.Path(OUTSIDE_DIR, "planted.txt").write_text("x"))
attempt("write_cache", lambda: pathlib.Path(os.environ["RLAB_CACHE_DIR"], "ok.txt").write_text("x"))
report["secret_vars"] = sorted(k for k in os.environ if any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET", "PASSWORD")))
report["env"] = sorted(os.environ)
(OUT / "probe.json").write_text(json.dumps(report))
"""


class _Listener:
    """A TCP server on the host's loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.running = False
        self.thread.join(timeout=2)
        self.server.close()


def _probe(run_toy, rlab_cache, tmp_path, monkeypatch, isolation: str) -> tuple[dict, int]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("host-only")
    monkeypatch.setenv("MY_SERVICE_API_KEY", "sk-very-secret")
    monkeypatch.setenv("DATABASE_PASSWORD", "hunter2")
    listener = _Listener()
    try:
        code = (
            PROBE.replace("PORT", str(listener.port))
            .replace("OUTSIDE_FILE", repr(str(outside / "notes.txt")))
            .replace("OUTSIDE_DIR", repr(str(outside)))
            .replace(
                "PRIVATE_FILE", repr(str(rlab_cache / "toy" / "line" / "private" / "labels.json"))
            )
            .replace("JOURNAL", repr(str(tmp_path / "runs")))
        )
        # the probe is the seed itself: the guard would (rightly) refuse an edit adding `socket`
        seed = tmp_path / "probe-seed"
        seed.mkdir()
        toy_seed = (TOY_SEED_DIR / "main.py").read_text()
        (seed / "main.py").write_text(toy_seed.replace("# extra behaviour\n", code))
        outcome = run_toy(
            [],
            debug_tries=0,
            sandbox_options={"isolation": isolation},
            benchmark_options={"seed_dir": str(seed)},
        )
    finally:
        listener.close()
    tree = replay(outcome.run.journal_path).tree
    node = next(n for n in tree if n.kind == NodeKind.SEED)
    assert node.execution is not None and node.execution.isolation == isolation
    report = json.loads((outcome.run.node_dir(node.id) / "outputs" / "probe.json").read_text())
    return report, listener.connections


@pytest.mark.parametrize(
    "isolation",
    [
        pytest.param("bubblewrap", marks=needs_bwrap),
        pytest.param("netns", marks=needs_netns_covers),
    ],
)
def test_jailed_candidate_has_no_network_no_outside_view_and_no_secrets(
    run_toy, rlab_cache, tmp_path, monkeypatch, isolation
):
    report, connections = _probe(run_toy, rlab_cache, tmp_path, monkeypatch, isolation)
    assert report["socket"] != "allowed" and connections == 0
    assert report["read_outside"] == "FileNotFoundError"
    assert report["read_private"] == "FileNotFoundError"
    assert (
        report["read_journal"] in ("FileNotFoundError", "IsADirectoryError")
        and report["read_journal"] != "allowed"
    )
    assert report["write_data"] in ("OSError", "PermissionError")  # read-only bind mount
    assert report["write_outside"] == "FileNotFoundError"
    assert report["write_cache"] == "allowed"
    assert report["secret_vars"] == []
    assert not (tmp_path / "outside" / "planted.txt").exists()


def test_without_isolation_the_same_probe_gets_through_but_secrets_stay_out(
    run_toy, rlab_cache, tmp_path, monkeypatch
):
    report, connections = _probe(run_toy, rlab_cache, tmp_path, monkeypatch, "none")
    # the control: the probe really would reach these things without the jail
    assert report["socket"] == "allowed" and connections == 1
    assert report["read_outside"] == "allowed" and report["read_private"] == "allowed"
    # the environment allow-list works at every isolation level
    assert report["secret_vars"] == []
    assert {
        "RLAB_DATA_DIR",
        "RLAB_OUTPUT_DIR",
        "RLAB_CACHE_DIR",
        "RLAB_STAGE",
        "RLAB_SEED",
        "RLAB_THREADS",
    } <= set(report["env"])


@pytest.mark.parametrize(
    "isolation",
    [
        pytest.param("bubblewrap", marks=needs_bwrap),
        pytest.param("netns", marks=needs_netns_covers),
    ],
)
def test_hidden_paths_inside_a_mounted_tree_are_invisible(tmp_path, isolation):
    """A task's raw data inside the interpreter's prefix (like a dataset package) is hidden."""
    import sys

    from rlab_core.testing.conformance import _request

    hidden_dir = Path(sys.prefix) / f"rlab-test-hidden-{isolation}"
    hidden_dir.mkdir(exist_ok=True)
    try:
        (hidden_dir / "raw.csv").write_text("secret,raw\n")
        request = _request(
            tmp_path,
            f"import pathlib\nprint(sorted(p.name for p in pathlib.Path({str(hidden_dir)!r}).iterdir()))\n",
        )
        request = request.model_copy(update={"hidden_paths": [hidden_dir]})
        execution = LocalSandbox(LocalSandboxConfig(isolation=isolation)).run(request)
        assert execution.ok and "[]" in execution.log_tail, execution.log_tail
        plain = LocalSandbox(LocalSandboxConfig(isolation="none")).run(request)
        assert "raw.csv" in plain.log_tail
    finally:
        (hidden_dir / "raw.csv").unlink(missing_ok=True)
        hidden_dir.rmdir()


@pytest.mark.parametrize(
    "isolation",
    [
        "none",
        pytest.param("bubblewrap", marks=needs_bwrap),
        pytest.param("netns", marks=needs_netns_covers),
    ],
)
def test_local_sandbox_passes_the_conformance_suite(isolation):
    check_sandbox(LocalSandbox(LocalSandboxConfig(isolation=isolation)))
