"""``rlab knowledge ...`` on a base that a real toy run (the real ``rlab`` executable) wrote.

The runs and ``rlab final`` go through the executable; the many knowledge commands run the
same Typer app in-process (each executable start costs a second).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, toy_config
from typer.testing import CliRunner

from rlab_core.cli.app import app
from rlab_core.knowledge.records import Lesson, TaskFingerprint
from rlab_core.knowledge.store import KnowledgeStore

STEPS = [
    {
        "hypothesis": "Slope 2 is closer to the data.",
        "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
    },
    {"hypothesis": "Slope 3 fits the trend.", "edits": [edit("SLOPE = 2.0\n", "SLOPE = 3.0\n")]},
]


class _Done:
    """What a command left: its exit code, stdout and stderr."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _rlab(args: list[str], tmp_path: Path, base: Path) -> _Done:
    if args[0] in ("run", "final"):
        done = subprocess.run(
            [RLAB, *args],
            env=cli_env(tmp_path, RLAB_KNOWLEDGE=str(base)),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return _Done(done.returncode, done.stdout, done.stderr)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_KNOWLEDGE", str(base))
        patch.setenv("COLUMNS", "200")
        result = CliRunner().invoke(app, args)
    return _Done(result.exit_code, result.stdout, result.stderr)


def test_run_writes_back_and_the_cli_searches_shows_shares_and_forgets(tmp_path):
    base = tmp_path / "kb.sqlite"
    config = toy_config(tmp_path, STEPS, min_iterations=10)
    done = _rlab(["run", "--config", str(config), "-i", "2"], tmp_path, base)
    assert done.returncode == 0, done.stderr
    run_dir = next((tmp_path / "runs").iterdir())

    stats = json.loads(_rlab(["knowledge", "stats", "--json"], tmp_path, base).stdout)
    assert (stats["lessons"], stats["runs"], stats["tasks"]) == (3, 1, 1)
    # the installed benchmarks' curated pages were synced when the run started
    assert stats["families"]["toy"] == {"lessons": 3, "pages": 0}
    total = stats["lessons"] + stats["pages"]

    found = _rlab(["knowledge", "search", "slope trend", "--json"], tmp_path, base)
    hits = json.loads(found.stdout)
    assert hits[0]["lesson"]["hypothesis"] == "Slope 3 fits the trend."
    assert hits[0]["lesson"]["verdict"] == "better" and hits[0]["lesson"]["gain"] > 0
    table = _rlab(["knowledge", "search", "slope"], tmp_path, base)
    assert table.returncode == 0 and "Slope 3 fits" in table.stdout and "better +" in table.stdout

    shown = _rlab(["knowledge", "show", "line"], tmp_path, base)  # the task part alone
    assert shown.returncode == 0 and "lessons for toy:line" in shown.stdout
    assert f"{run_dir.name}/n0002" in shown.stdout
    as_json = json.loads(_rlab(["knowledge", "show", "toy:line", "--json"], tmp_path, base).stdout)
    assert [lesson["node"] for lesson in as_json] == ["n0000", "n0001", "n0002"]

    export = tmp_path / "team.jsonl"
    assert _rlab(["knowledge", "export", str(export)], tmp_path, base).returncode == 0
    assert len(export.read_text().splitlines()) == total
    other = tmp_path / "other.sqlite"
    for _ in range(2):  # importing twice changes nothing
        imported = _rlab(["knowledge", "import", str(export)], tmp_path, other)
        assert imported.returncode == 0 and f"imported {total} records" in imported.stdout
    assert (
        json.loads(_rlab(["knowledge", "stats", "--json"], tmp_path, other).stdout)["lessons"] == 3
    )

    forgot = _rlab(["knowledge", "forget", str(run_dir)], tmp_path, base)
    assert forgot.returncode == 0 and "forgot 3 lessons" in forgot.stdout
    assert (
        json.loads(_rlab(["knowledge", "stats", "--json"], tmp_path, base).stdout)["lessons"] == 0
    )
    # the run id works as well as the folder
    assert _rlab(["knowledge", "forget", run_dir.name], tmp_path, other).returncode == 0


def test_knowledge_record_false_and_final_through_the_cli(tmp_path):
    base = tmp_path / "kb.sqlite"
    config = toy_config(tmp_path, STEPS[:1], min_iterations=10)
    off = ["run", "--config", str(config), "-i", "1", "-o", "knowledge.record=false"]
    assert _rlab(off, tmp_path, base).returncode == 0
    stats = json.loads(_rlab(["knowledge", "stats", "--json"], tmp_path, base).stdout)
    assert stats["lessons"] == 0
    # `rlab final` records the run too, honouring the run's own setting
    assert _rlab(["final"], tmp_path, base).returncode == 0
    assert (
        json.loads(_rlab(["knowledge", "stats", "--json"], tmp_path, base).stdout)["lessons"] == 0
    )


def test_user_errors_are_one_sentence_and_exit_2(tmp_path):
    base = tmp_path / "kb.sqlite"
    missing = _rlab(["knowledge", "import", str(tmp_path / "nope.jsonl")], tmp_path, base)
    assert missing.returncode == 2 and "Cannot read" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "lesson", "lesson": {"run_id": "r"}}\n')
    malformed = _rlab(["knowledge", "import", str(bad)], tmp_path, base)
    assert malformed.returncode == 2 and "Line 1 of" in malformed.stderr
    unknown = _rlab(["knowledge", "show", "toy:nothing"], tmp_path, base)
    assert unknown.returncode == 2 and "No lessons for task 'toy:nothing'" in unknown.stderr
    forget = _rlab(["knowledge", "forget", "no-such-run"], tmp_path, base)
    assert forget.returncode == 2 and "No lessons of run 'no-such-run'" in forget.stderr
    kind = _rlab(["knowledge", "search", "x", "--kind", "node"], tmp_path, base)
    assert kind.returncode == 2 and "use 'lesson' or 'page'" in kind.stderr
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not a database" * 200)
    broken = _rlab(["knowledge", "stats"], tmp_path, corrupt)
    assert broken.returncode == 2 and "move the file aside" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_candidate_text_in_the_base_reaches_the_terminal_escaped(tmp_path):
    # a failure cause is a candidate's own output: a clear-screen, a bell, a hyperlink
    base = tmp_path / "kb.sqlite"
    hostile = "run: boom \x1b[2J\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ [bold]markup[/]"
    KnowledgeStore(base).add_lessons(
        [
            Lesson(
                run_id="r1",
                node_id="n0001",
                recorded_at=0.0,
                fingerprint=TaskFingerprint(benchmark="toy", task="toy:line", family="toy"),
                hypothesis="boom \x1b[31mred\x1b[0m",
                status="failed",
                failure_cause=hostile,
            )
        ]
    )
    for args in (["knowledge", "search", "boom"], ["knowledge", "show", "toy:line"]):
        done = _rlab(args, tmp_path, base)
        assert done.returncode == 0, done.stdout
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout, args
        assert "\\x1b" in done.stdout and "[bold]markup[/]" in done.stdout.replace("\n", "")
