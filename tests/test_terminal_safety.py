"""Candidate-controlled text never drives the user's terminal.

A scripted agent proposes a hypothesis full of escape sequences and rich markup, and a
candidate prints an OSC 8 hyperlink, a clear-screen and a bell before it crashes, so its
failure message quotes them. Off a terminal rich adds no styling of its own, so any ESC or
BEL byte in what ``rlab run``, ``show``, ``show --tree``, ``final`` and the end-of-run
summary print came from the run: there must be none, and the text must show them escaped.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, extra, toy_config
from rich.console import Console

from rlab_core.journal import replay
from rlab_core.report.live import LiveProgress
from rlab_core.report.sanitize import clean, one_line, safe
from rlab_core.testing.toy import SEED_DIR

HOSTILE = (
    "Slope 2 \x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ \x1b[2J\x07 "
    "[bold red]markup[/] \u202egnp.exe \x9b31m\r"
)
#: a candidate that prints escape sequences to stdout and stderr, then crashes
ESCAPING = r"""import sys
print('\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \x1b[2J \x07 [red]x[/]')
sys.stderr.write('\x1b]0;pwned title\x07\x1b[31mboom \x1b[2J\x07\n')
raise SystemExit(3)"""
SCRIPT = [
    {"hypothesis": HOSTILE, "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")]},
    {"hypothesis": "Crash loudly: " + HOSTILE, "edits": [extra(ESCAPING)]},
]
#: bytes a terminal obeys that rich never writes off a terminal
CONTROL = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def _rlab(args: list[str], cwd: Path, columns: int = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [RLAB, *args],
        env=cli_env(cwd, COLUMNS=str(columns), TERM="dumb"),
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )
    # decoded by hand: text mode would turn a carriage return into a newline
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
    return done


def _assert_inert(done: subprocess.CompletedProcess) -> str:
    text = done.stdout + done.stderr
    for char in CONTROL:
        assert char not in text, f"{char!r} reached the terminal:\n{text}"
    return text


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("hostile")
    config = toy_config(root, SCRIPT, min_iterations=10)
    done = _rlab(["run", "--config", str(config), "-i", "2"], root)
    assert done.returncode == 0, done.stdout + done.stderr
    return root, done


def test_the_run_really_carries_the_escape_sequences(hostile_run):
    root, _ = hostile_run
    tree = replay(next((root / "runs").iterdir()) / "journal.jsonl").tree
    assert tree.get("n0001").hypothesis == HOSTILE and tree.get("n0001").evaluated
    failure = tree.get("n0002").failure
    assert failure is not None and "\x1b[31mboom" in failure.message


def test_run_prints_escapes_visibly_and_markup_literally(hostile_run):
    _, done = hostile_run
    text = _assert_inert(done)
    assert "\\x1b]8;;http://evil\\x1b\\click" in text and "\\x1b[2J\\x07" in text
    assert "[bold red]markup[/]" in text  # rich markup from a hypothesis stays literal
    assert "\\u202egnp.exe \\x9b31m" in text
    assert "\\x1b]0;pwned title\\x07\\x1b[31mboom" in text  # the failure quotes the log


@pytest.mark.parametrize(
    ("args", "columns"),
    [(["show"], 80), (["show"], 200), (["show", "--tree"], 120), (["show", "--json"], 120)],
)
def test_show_in_every_layout_is_inert(hostile_run, args, columns):
    root, _ = hostile_run
    done = _rlab(args, root, columns)
    assert done.returncode == 0, done.stderr
    text = _assert_inert(done)
    if "--json" in args:
        nodes = {n["id"]: n for n in json.loads(done.stdout)["nodes"]}
        assert nodes["n0001"]["hypothesis"] == HOSTILE  # exact for a parser
    elif "--tree" not in args:
        assert "[bold red]markup[/]" in text and "\\x1b[2J\\x07" in text


def test_final_is_inert(hostile_run, tmp_path):
    root, _ = hostile_run
    shutil.copytree(root / "runs", tmp_path / "runs")
    done = _rlab(["final"], tmp_path)
    assert done.returncode == 0, done.stderr
    _assert_inert(done)
    report = _rlab(["final", "--json", "--force"], tmp_path)
    assert json.loads(report.stdout)["hypothesis"] == HOSTILE
    _assert_inert(report)


def test_a_failing_hostile_seed_is_reported_inert(tmp_path):
    seed = tmp_path / "seed"
    shutil.copytree(SEED_DIR, seed)
    main = seed / "main.py"
    main.write_text(main.read_text().replace("# extra behaviour\n", ESCAPING + "\n"))
    done = _rlab(["run", "toy:line", "--seed-candidate", str(seed), "-i", "1"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    text = _assert_inert(done)
    assert "no node was evaluated" in done.stderr and "\\x1b[31mboom" in text


def test_the_live_footer_shows_a_hypothesis_escaped():
    console = Console(file=io.StringIO(), width=300, force_terminal=False)
    progress = LiveProgress(console, iterations_max=3)
    progress({"type": "run_started", "run_id": "r", "task": "toy:line", "isolation": "none",
              "primary_metric": "rmse", "higher_is_better": False})  # fmt: skip
    progress({"type": "node_started", "id": "n0001", "parent_id": "n0000", "kind": "improve",
              "iteration": 1, "hypothesis": HOSTILE})  # fmt: skip
    footer = Console(file=io.StringIO(), width=300, color_system=None)
    footer.print(progress.__rich__())
    shown = footer.file.getvalue()
    assert "evaluating n0001" in shown and "\\x1b[2J\\x07" in shown
    assert not any(char in shown for char in CONTROL)


def test_clean_shows_every_control_and_keeps_tabs_and_newlines():
    assert clean("a\x1b[2Jb\x07\x00\x7f\x9b\u202e\u2066\r\tc\nd") == (
        "a\\x1b[2Jb\\x07\\x00\\x7f\\x9b\\u202e\\u2066\\x0d\tc\nd"
    )
    assert clean("a\nb", newlines=False) == "a b" and clean(None) == ""
    assert one_line("  a \n\n b\x1b ", 5) == "a b\\…"
    assert safe("[red]x[/] \x1b") == "\\[red]x\\[/] \\x1b"
    assert clean("plain text, ± ünïcode ★") == "plain text, ± ünïcode ★"
