"""`rlab list` through the real executable: available tasks first with whole ids, one line per
benchmark for the rest, ``--all``, ``--json`` on every listing, broken user modes marked."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from conftest import RLAB, cli_env

needs_plugins = pytest.mark.skipif(
    not all(importlib.util.find_spec(p) for p in ("rlab_kuairand", "rlab_relbench")),
    reason="rlab-kuairand and rlab-relbench are not installed (uv sync installs them)",
)


def _rlab(args: list[str], tmp_path: Path, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RLAB, *args],
        env=cli_env(tmp_path, **extra_env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _real_benchmarks(tmp_path: Path) -> dict[str, str]:
    """KuaiRand and RelBench with nothing downloaded: a few tasks here, most of them not."""
    (tmp_path / "empty").mkdir(exist_ok=True)
    return {
        "RLAB_LOAD_PLUGINS": "kuairand,relbench",
        "RLAB_PLUGIN_MODULES": "",
        "RLAB_KUAIRAND_DIR": str(tmp_path / "empty"),
        "HF_HUB_CACHE": str(tmp_path / "empty"),
        "COLUMNS": "80",
    }


@needs_plugins
def test_list_tasks_shows_whole_ids_first_and_one_line_per_benchmark_for_the_rest(tmp_path):
    env = _real_benchmarks(tmp_path)
    listed = _rlab(["list", "tasks", "--json"], tmp_path, **env)
    assert listed.returncode == 0, listed.stderr
    tasks = json.loads(listed.stdout)  # nothing but JSON on stdout
    assert {t["benchmark"] for t in tasks} == {"kuairand", "relbench"}
    ready = [t["name"] for t in tasks if t["available"]]
    missing = {
        b: [t for t in tasks if t["benchmark"] == b and not t["available"]]
        for b in ("kuairand", "relbench")
    }
    assert "kuairand:sample" in ready and "relbench:rel-flights/plane-arr-delay" in ready
    assert len(missing["kuairand"]) == 2 and len(missing["relbench"]) > 30

    shown = _rlab(["list", "tasks"], tmp_path, **env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    for name in ready:  # whole, on a line of their own column, at 80 columns
        assert any(line.startswith(f"│ {name} ") for line in lines), (name, shown.stdout)
    for task in missing["kuairand"] + missing["relbench"]:
        assert f"{task['name']} " not in shown.stdout
    assert "…" not in shown.stdout.split("available tasks")[1].split("kuairand: ")[0]
    summaries = [line for line in lines if line.startswith(("kuairand: ", "relbench: "))]
    assert summaries == [
        "kuairand: 2 more tasks not available here (KuaiRand-Pure data was not found and could "
        "not be downloaded; KuaiRand-1K data was not found and could not be downloaded); "
        "`rlab list tasks kuairand --all` shows them and how to get their data.",
        f"relbench: {len(missing['relbench'])} more tasks not available here (downloaded from "
        f"the Hub on first use into {tmp_path / 'empty'}); `rlab list tasks relbench --all` "
        "shows them and how to get their data.",
    ]
    assert len(lines) < 60, len(lines)  # not one line per unavailable task

    everything = _rlab(["list", "tasks", "kuairand", "--all"], tmp_path, **env)
    assert everything.returncode == 0, everything.stderr
    for name in ("kuairand:sample", "kuairand:pure", "kuairand:1k"):
        assert f"│ {name} " in everything.stdout
    assert "RLAB_KUAIRAND_DIR" in everything.stdout  # each note says how to get the data
    assert everything.stdout.index("kuairand:sample") < everything.stdout.index("kuairand:pure")


@needs_plugins
def test_a_narrow_terminal_keeps_ids_whole(tmp_path):
    env = {**_real_benchmarks(tmp_path), "COLUMNS": "30"}
    shown = _rlab(["list", "tasks", "relbench"], tmp_path, **env)
    assert shown.returncode == 0, shown.stderr
    assert "relbench:rel-flights/plane-arr-delay" in shown.stdout.splitlines()


@pytest.mark.parametrize(
    ("kind", "name", "option"),
    [
        ("benchmarks", "toy", "timeout_s"),
        ("agents", "scripted", "script"),
        ("strategies", "tree", "num_drafts"),
        ("sandboxes", "local", "isolation"),
    ],
)
def test_json_listings_are_machine_readable(tmp_path, kind, name, option):
    done = _rlab(["list", kind, "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    entries = {entry["name"]: entry for entry in json.loads(done.stdout)}
    entry = entries[name]
    assert entry["summary"] and entry["plugin"]
    options = {row["name"]: row for row in entry["options"]}
    assert option in options and "description" in options[option]
    if kind == "benchmarks":
        assert entry["default_task"] == "toy:line"
    if kind == "strategies":
        assert options["num_drafts"]["default"] == 3


def test_plugins_json(tmp_path):
    done = _rlab(["plugins", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    records = {r["name"]: r for r in json.loads(done.stdout)}
    assert records["builtin"]["status"] == "loaded"
    assert records["builtin"]["provides"]["sandboxes"] == ["local", "docker"]
    assert records["rlab_core.testing.toy.plugin"]["provides"]["agents"] == ["scripted"]


def test_list_modes_marks_a_broken_user_mode_with_its_reason(tmp_path):
    modes = tmp_path / "modes"
    modes.mkdir()
    (modes / "twice.yaml").write_text("iterations: 1\niterations: 2\n")
    (modes / "quick.yaml").write_text("summary: no search\niterations: 0\n")
    env = {"RLAB_MODES_DIR": str(modes), "COLUMNS": "250"}

    table = _rlab(["list", "modes"], tmp_path, **env)
    assert table.returncode == 0, table.stderr
    cells = " ".join(part.strip() for part in table.stdout.replace("│", "\n").splitlines())
    assert "twice broken: Config file" in cells and "key 'iterations' is given twice" in cells
    assert "MINIMAL" in table.stdout and "no search" in table.stdout

    as_json = _rlab(["list", "modes", "--json"], tmp_path, **env)
    assert as_json.returncode == 0, as_json.stderr
    found = {mode["name"]: mode for mode in json.loads(as_json.stdout)}
    assert found["quick"] == {
        "name": "quick",
        "summary": "no search",
        "values": {"iterations": 0},
        "source": str(modes / "quick.yaml"),
        "broken": None,
    }
    assert "given twice" in found["twice"]["broken"] and found["twice"]["values"] == {}
    assert found["MINIMAL"]["source"] == "plugin builtin" and found["MINIMAL"]["broken"] is None
