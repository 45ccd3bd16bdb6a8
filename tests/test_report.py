"""The run dashboard: report.html on real toy runs, in a headless browser, and the terminal views."""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit, extra
from rich.console import Console

from rlab_core.config import RunConfig
from rlab_core.final import finalize
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.report import html as report_html
from rlab_core.report.html import embed_json, write_report
from rlab_core.report.live import LiveProgress
from rlab_core.report.status import Outcome, classify
from rlab_core.run_folder import RunFolder
from rlab_core.runner import start_run
from rlab_core.testing.toy import plugin as toy_plugin

XSS = "</script><script>document.title='pwned'</script><img src=x onerror=alert(1)> & \u2028"

#: one run that ends with every outcome the dashboard colours
EVERY_OUTCOME = [
    {
        "hypothesis": "Slope 2 is closer to the data.",
        "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
    },
    {
        "hypothesis": "An intercept of 1, but the change crashes; its fix repairs it.",
        "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\nraise RuntimeError('boom')\n")],
        "fix": [edit("raise RuntimeError('boom')\n", "")],
        "tokens": 120,
        "cost": 0.02,
    },
    {
        "hypothesis": "A crashing change whose fix fails too.",
        "edits": [extra("raise RuntimeError('still broken')")],
        "fix": [edit("raise RuntimeError('still broken')\n", "raise ValueError('fix broke')\n")],
    },
    {"hypothesis": XSS, "edits": [edit("SLOPE = 2.0\n", "SLOPE = 5.0\n")]},
    {"agent_error": "the model returned no edit"},
]


def page_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="rlab-data">(.*?)</script>', page, re.S)
    assert match, "no embedded data"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory) -> RunFolder:
    """One toy run for the whole module (tests that change it work on a copy)."""
    root = tmp_path_factory.mktemp("report")
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    config = RunConfig(
        task="toy:line",
        agent="scripted",
        agent_options={"script": EVERY_OUTCOME},
        out=root / "runs",
        iterations=len(EVERY_OUTCOME) + 4,
        min_iterations=100,
        debug_tries=1,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(root / "rlab-cache"))
        return start_run(host, config).run


@pytest.fixture
def full_run(shared_run: RunFolder, tmp_path: Path, rlab_cache: Path) -> RunFolder:
    """A finished toy run with improved, evaluated, failed, repaired and recovered nodes."""
    copy = tmp_path / "runs" / shared_run.run_id
    shutil.copytree(shared_run.root, copy)
    return RunFolder(copy)


def by_hypothesis(data: dict, start: str) -> dict:
    return next(n for n in data["nodes"] if n["hypothesis"].startswith(start))


def test_every_run_writes_a_report_with_every_outcome(full_run: RunFolder):
    page = (full_run.root / "report.html").read_text()  # written by the run itself
    data = page_data(page)
    outcomes = {n["id"]: n["outcome"] for n in data["nodes"]}
    assert outcomes == {
        "n0000": "evaluated",  # the seed
        "n0001": "improved",  # slope 2
        "n0002": "repaired",  # crashed, then its fix evaluated
        "n0003": "improved",  # the fix: slope 2 + intercept 1, the winner
        "n0004": "recovered_failure",
        "n0005": "recovered_failure",  # its failed repair
        "n0006": "evaluated",  # slope 5: worse, not kept
        "n0007": "failed",  # the agent gave no proposal: no repair
    }
    tree = replay(full_run.journal_path).tree
    assert {k: str(v) for k, v in classify(tree).items()} == outcomes
    assert data["best"] == "n0003" and data["winner_path"] == ["n0000", "n0001", "n0002", "n0003"]
    seed, best = tree.get("n0000").score.primary, tree.get("n0003").score.primary
    head = data["headline"]
    assert head["seed"] == {"id": "n0000", "score": seed} and head["best"]["score"] == best
    assert head["gain"]["delta"] == pytest.approx(best - seed)  # rmse: lower is better
    assert head["gain"]["relative_pct"] == pytest.approx((seed - best) / seed * 100)
    assert head["gain"]["better"] is True and data["run"]["higher_is_better"] is False
    repaired = data["nodes"][2]
    assert repaired["failure"]["stage"] == "run" and "boom" in repaired["log_tail"]
    assert repaired["usage"]["total_tokens"] == 180 and repaired["usage"]["cost_usd"] == 0.02
    fix = data["nodes"][3]
    assert fix["repair_of"] == "n0002" and "-raise RuntimeError('boom')" in fix["diff"]
    assert fix["metrics"]["rmse"] == best and fix["execution"]["exit_code"] == 0
    assert fix["timing"]["candidate_s"] > 0 and fix["log_tail"].startswith("stage full full")
    assert data["nodes"][4]["closed_reason"].startswith("repair failed")
    assert data["budget"]["iterations"] == {"used": 7, "max": 9}
    assert data["budget"]["tokens"]["used"] == 180
    assert data["status"]["stopped"] and "nothing left" in data["status"]["stop_reason"]
    assert data["isolation"]["level"] in ("bubblewrap", "netns", "none")
    assert "rlab-core" in data["versions"] and data["final"] is None
    assert data["metrics"] == ["rmse"]
    # no test-side number before `rlab final`
    assert "test_predictions" not in page and "secret_test_labels" not in page


def test_untrusted_text_cannot_break_out_of_the_page(full_run: RunFolder):
    page = (full_run.root / "report.html").read_text()
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "onerror=alert" not in page.split('id="rlab-data">')[0]
    assert "<img" not in page and "\u2028" not in page
    assert by_hypothesis(page_data(page), "</script>")["hypothesis"] == XSS
    assert embed_json({"a": "</script>"}) == '{"a":"\\u003c/script\\u003e"}'
    js = report_html._script()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "fetch(" not in js


def test_final_adds_the_chosen_nodes_test_metrics(full_run: RunFolder, toy_host):
    report = finalize(toy_host, full_run)
    data = page_data((full_run.root / "report.html").read_text())
    assert data["final"]["node"] == "n0003" and data["final"]["audit_clean"] is True
    assert data["final"]["test_primary"] == report["test_primary"] > 0
    # only the chosen node's test metrics: no other node carries a test number
    assert all("test" not in json.dumps(n.get("metrics", {})) for n in data["nodes"])


def test_report_of_a_run_in_progress_shows_what_exists(full_run: RunFolder, tmp_path: Path):
    lines = full_run.journal_path.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"id":"n0004"' in line)  # n0004 started
    live = tmp_path / "live-run"
    shutil.copytree(full_run.root, live)
    (live / "journal.jsonl").write_text("".join(lines[: cut + 1]) + '{"seq":99,"t":1,"ty')
    path = write_report(RunFolder(live), tmp_path / "out" / "live.html")
    data = page_data(path.read_text())
    assert not data["status"]["stopped"] and data["status"]["in_flight"] == ["n0004"]
    assert data["status"]["torn_tail"] is True
    assert [n["id"] for n in data["nodes"]] == ["n0000", "n0001", "n0002", "n0003", "n0004"]
    running = data["nodes"][-1]
    assert running["outcome"] == "running" and running["hypothesis"].startswith("A crashing")
    assert data["best"] == "n0003" and data["budget"]["iterations"]["used"] == 3


def test_a_report_failure_never_fails_the_run(run_toy, monkeypatch, caplog):
    def broken(run):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(report_html, "collect_report_data", broken)
    with caplog.at_level(logging.WARNING):
        outcome = run_toy(EVERY_OUTCOME[:1])
    assert outcome.best is not None and not (outcome.run.root / "report.html").exists()
    assert "could not write report.html: disk on fire" in caplog.text


# --------------------------------------------------------------------------- the browser


class _Elements(HTMLParser):
    """Every start tag of a page as (tag, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def having(self, tag: str | None = None, cls: str | None = None) -> list[dict[str, str]]:
        return [
            a
            for t, a in self.found
            if (tag is None or t == tag) and (cls is None or cls in a.get("class", "").split())
        ]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
    flags += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    flags += [f"--user-data-dir={profile}", "--hide-scrollbars"]
    return subprocess.run(
        [browser, *flags, *args], capture_output=True, text=True, timeout=90, check=False
    )


def test_the_page_draws_in_a_headless_browser(full_run: RunFolder, tmp_path: Path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; .ci/run installs it)")
    url = (full_run.root / "report.html").as_uri()
    dumped = _headless(browser, tmp_path / "profile", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _Elements()
    dom.feed(dumped.stdout)
    ids = [f"n{i:04d}" for i in range(8)]
    assert dom.having("body")[0].get("data-ready") == "1", "the script did not finish"
    assert sorted(a["data-id"] for a in dom.having("div", "tnode")) == ids
    assert sorted(a["data-id"] for a in dom.having(cls="tdot")) == ids
    points = {a["data-id"] for a in dom.having("circle", "point")}
    assert points == {"n0000", "n0001", "n0003", "n0006"}  # one per evaluated node
    assert {a["data-id"] for a in dom.having("g", "fail-mark")} == {
        "n0002",
        "n0004",
        "n0005",
        "n0007",
    }
    assert dom.having("path", "best-line") and dom.having("svg", "lanes")
    assert sorted(a["data-id"] for a in dom.having("tr") if "data-id" in a) == ids
    selected = [a["data-id"] for a in dom.having("div", "tnode") if "selected" in a["class"]]
    assert selected == ["n0003"]
    assert len(dom.having("path", "winner")) == 3  # n0000 → n0001 → n0002 → n0003
    # the hostile hypothesis is text on the page, not markup
    assert not dom.having("img") and "<title>rlab" in dumped.stdout
    assert "&lt;/script&gt;&lt;script&gt;document.title" in dumped.stdout

    # a run that has only started (its seed is running) draws too
    empty = RunFolder.create(tmp_path / "runs", "toy:line")
    first = {"seq": 0, "t": 1.0, "type": "run_started", "run_id": empty.run_id, "task": "toy:line"}
    seed = {"seq": 1, "t": 2.0, "type": "node_started", "id": "n0000", "parent_id": None}
    empty.journal_path.write_text(json.dumps(first) + "\n" + json.dumps(seed) + "\n")
    started = _headless(browser, tmp_path / "profile", "--dump-dom", write_report(empty).as_uri())
    dom = _Elements()
    dom.feed(started.stdout)
    assert dom.having("body")[0].get("data-ready") == "1", started.stderr[-2000:]
    assert [a["data-id"] for a in dom.having("div", "tnode")] == ["n0000"]
    assert "no evaluated node yet" in started.stdout and "in progress" in started.stdout

    shot = tmp_path / "report.png"
    taken = _headless(
        browser, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,1800", url
    )
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


# --------------------------------------------------------------------------- the terminal

TREE_SNAPSHOT = """\
20261202-000000-toy-line  (rmse, lower is better)
└── ■ n0000     2.69763 ± 0.28  evaluated           seed      X.Xs  Seed candidate 'line-seed': slope 1, intercept 0
    └── ● n0001     1.69778 ± 0.16  improved, kept      improve   X.Xs  Slope 2 is closer to the data.
        └── ● n0002           -         repaired            improve   X.Xs  An intercept of 1, but the change crashes;…
            └── ● n0003 ★   1.10711 ± 0.12  improved, kept      debug     X.Xs  repair: An intercept of 1, but the cha…
                ├── ● n0004           -         repair failed       improve   X.Xs  A crashing change whose fix fails …
                │   └── ● n0005           -         repair failed       debug     X.Xs  repair: A crashing change whos…
                ├── ● n0006     2.25411 ± 0.24  evaluated           improve   X.Xs  </script><script>document.title='p…
                └── ● n0007           -         failed              improve      -  (the agent produced no usable prop…
  ● improved, kept   ● improved, off path   ● evaluated   ● failed   ● repaired   ● repair failed   ● running   ■ seed  
★ best   underlined: the winner's path
"""


def test_show_tree_draws_the_tree(full_run: RunFolder, tmp_path: Path):
    stable = full_run.root.parent / "20261202-000000-toy-line"
    full_run.root.rename(stable)
    done = subprocess.run(
        [RLAB, "show", str(stable), "--tree"],
        env=cli_env(tmp_path, COLUMNS="120", TERM="dumb"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    tree = done.stdout[done.stdout.index("20261202-000000-toy-line  (") :]
    tree = re.sub(r"\s+\d+\.\ds  ", lambda m: " " * (len(m.group(0)) - 6) + "X.Xs  ", tree)
    assert tree == TREE_SNAPSHOT, tree


def test_report_command_writes_where_asked(full_run: RunFolder, tmp_path: Path):
    target = tmp_path / "elsewhere" / "dash.html"
    done = subprocess.run(
        [
            RLAB,
            "report",
            full_run.run_id,
            "--out",
            str(full_run.root.parent),
            "--output",
            str(target),
        ],
        env=cli_env(tmp_path, COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"report: {target}" in done.stdout and page_data(target.read_text())["best"] == "n0003"
    missing = subprocess.run(
        [RLAB, "report", str(tmp_path / "nope")],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "not a run folder" in missing.stderr


def _events(run: RunFolder) -> list[dict]:
    return [json.loads(line) for line in run.journal_path.read_text().splitlines()]


def test_progress_is_plain_lines_off_a_terminal_and_live_on_one(full_run: RunFolder):
    events = _events(full_run)
    plain = Console(file=io.StringIO(), width=100, force_terminal=False)
    with LiveProgress(plain, iterations_max=9) as progress:
        assert progress.live is None
        for event in events:
            progress(event)
    text = plain.file.getvalue()
    assert "n0003 debug   ← n0002 val 1.10711" in text and "★ new best" in text
    assert "evaluating" not in text and "\x1b[" not in text

    terminal = Console(file=io.StringIO(), width=120, force_terminal=True, color_system=None)
    with LiveProgress(terminal, iterations_max=9) as progress:
        assert progress.live is not None
        started = next(i for i, e in enumerate(events) if e.get("id") == "n0004")
        for event in events[: started + 1]:
            progress(event)
        footer = Console(file=io.StringIO(), width=160, color_system=None)
        footer.print(progress.__rich__())
        shown = footer.file.getvalue()
    assert "evaluating n0004 (improve ← n0003" in shown and "A crashing change whose fix" in shown
    assert "iteration 3/9" in shown and "best rmse 1.10711 ± 0.12 (n0003)" in shown
    assert progress.live is None  # the footer is gone after the block
    assert Outcome.RUNNING.value == "running"
