"""The dashboard on a run with every kind of node: status labels that follow the winner's path,
failure causes, the seed → best diff, the winner's paths, the seed baseline, candidate facts,
and a decision tree in creation order whose connectors never cross.

One real toy run serves the module. The tree strategy drafts three children of the seed
(slope 2, slope 3, a sleep past the timeout), then improves the best draft: a crash its fix
repairs (the winner), an early exit that breaks the output contract and whose fix fails too,
a memory hog, an edit whose anchor is missing, and a slope that overshoots.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import edit, extra

from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import Execution, Failure, FailureStage, Node, NodeKind, NodeStatus
from rlab_core.report.data import collect_report_data
from rlab_core.report.html import write_report
from rlab_core.report.status import (
    OUTCOME_LABEL,
    Outcome,
    classify,
    failure_cause,
    new_best_ids,
    winner_path,
)
from rlab_core.report.tree_layout import tree_rows
from rlab_core.run_folder import RunFolder
from rlab_core.runner import start_run
from rlab_core.testing.toy import plugin as toy_plugin

HOSTILE = "<img src=x onerror=alert(1)>"
SCRIPT = [
    {
        "hypothesis": "Slope 2 is closer to the data.",
        "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
    },
    {"hypothesis": "Slope 3 matches the trend.", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")]},
    {"hypothesis": "Sleep past the timeout.", "edits": [extra("import time\ntime.sleep(60)")]},
    {
        "hypothesis": "Intercept 1, but the change crashes; its fix repairs it.",
        "edits": [edit("INTERCEPT = 0.0\n", f"INTERCEPT = 1.0\nraise RuntimeError('{HOSTILE}')\n")],
        "fix": [edit(f"raise RuntimeError('{HOSTILE}')\n", "")],
    },
    {
        "hypothesis": "Exit early without writing predictions.",
        "edits": [extra("raise SystemExit(0)")],
        "fix": [edit("raise SystemExit(0)\n", "raise SystemExit(3)\n")],
    },
    {
        "hypothesis": "A lookup table far larger than memory allows.",
        "edits": [extra("hog = bytearray(700 * 2**20)\nhog[::4096] = b'x' * len(hog[::4096])")],
    },
    {
        "hypothesis": "An edit whose anchor is gone.",
        "edits": [edit("SLOPE = 9.9\n", "SLOPE = 1\n")],
    },
    {"hypothesis": "Slope 3.3 overshoots.", "edits": [edit("SLOPE = 3.0\n", "SLOPE = 3.3\n")]},
]
BY_STEP = {
    "n0001": "Slope 2",
    "n0002": "Slope 3 ",
    "n0003": "Sleep",
    "n0004": "Intercept 1",
    "n0005": "repair: Intercept 1",
    "n0006": "Exit early",
    "n0007": "repair: Exit early",
    "n0008": "A lookup table",
    "n0009": "An edit whose",
    "n0010": "Slope 3.3",
}


@pytest.fixture(scope="module")
def every_node_run(tmp_path_factory) -> RunFolder:
    root = tmp_path_factory.mktemp("dashboard")
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    config = RunConfig(
        task="toy:line",
        agent="scripted",
        agent_options={"script": SCRIPT},
        strategy="tree",
        strategy_options={"num_drafts": 3, "exploration": 0.0, "node_expansion_limit": 6},
        out=root / "runs",
        iterations=len(SCRIPT) + 4,
        min_iterations=100,
        timeout_s=2,
        memory_mb=300,
        noise_seeds=0,
        finalist_seeds=1,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(root / "rlab-cache"))
        return start_run(host, config).run


@pytest.fixture(scope="module")
def data(every_node_run: RunFolder) -> dict:
    return collect_report_data(every_node_run)


def test_the_run_has_the_nodes_the_module_describes(every_node_run: RunFolder):
    tree = replay(every_node_run.journal_path).tree
    for node_id, start in BY_STEP.items():
        assert tree.get(node_id).hypothesis.startswith(start), node_id
    assert [tree.get(i).parent_id for i in ("n0001", "n0002", "n0003")] == ["n0000"] * 3
    assert tree.get("n0004").parent_id == "n0002" and tree.get("n0005").repair_of == "n0004"
    assert tree.selected().id == "n0005"


# --------------------------------------------------------------------------- status labels


def test_improved_kept_is_said_only_on_the_winners_path(every_node_run: RunFolder):
    tree = replay(every_node_run.journal_path).tree
    outcomes = classify(tree)
    path = winner_path(tree)
    assert path == ["n0000", "n0002", "n0004", "n0005"]
    # slope 2 was the run's best for a while and beat its parent, but the winner is elsewhere
    assert "n0001" in new_best_ids(tree) and tree.improved_on_parent(tree.get("n0001"))
    assert outcomes["n0001"] == Outcome.IMPROVED_OFF_PATH
    assert OUTCOME_LABEL[outcomes["n0001"]] == "improved, off path"
    assert [i for i, o in outcomes.items() if o == Outcome.IMPROVED] == ["n0002", "n0005"]
    assert all(i in path for i, o in outcomes.items() if o == Outcome.IMPROVED)
    # the seed is on the path: it is not "not kept"
    assert (
        outcomes["n0000"] == Outcome.EVALUATED
        and "not kept" not in OUTCOME_LABEL[Outcome.EVALUATED]
    )
    assert outcomes["n0010"] == Outcome.EVALUATED  # worse than its parent


def test_recovered_failure_needs_a_repair_attempt(every_node_run: RunFolder):
    tree = replay(every_node_run.journal_path).tree
    outcomes = classify(tree)
    # the journal closed these branches, but the agent never offered a repair: plain failures
    for node_id in ("n0003", "n0008"):
        assert tree.get(node_id).status == NodeStatus.RECOVERED_FAILURE
        assert outcomes[node_id] == Outcome.FAILED
    assert outcomes["n0009"] == Outcome.FAILED  # an edit failure: no repair either
    assert outcomes["n0004"] == Outcome.REPAIRED  # its repair n0005 evaluated
    # the contract failure and its failed repair: the repair was tried and failed
    assert outcomes["n0006"] == outcomes["n0007"] == Outcome.RECOVERED_FAILURE
    assert OUTCOME_LABEL[Outcome.RECOVERED_FAILURE] == "repair failed"


# --------------------------------------------------------------------------- failure causes


def test_failed_nodes_say_why(data: dict):
    nodes = {n["id"]: n for n in data["nodes"]}
    causes = {i: n["failure"]["cause"] for i, n in nodes.items() if n["failure"]}
    assert causes == {
        "n0003": "timeout",
        "n0004": "crash (exit 1)",
        "n0006": "contract",
        "n0007": "crash (exit 3)",
        "n0008": "out of memory",
        "n0009": "edit refused",
    }
    assert nodes["n0003"]["failure"]["cause_detail"] == (
        "run stage: killed after 2s wall-clock timeout"
    )
    assert "more than 300 MiB" in nodes["n0008"]["failure"]["cause_detail"]
    assert nodes["n0006"]["failure"]["cause_detail"].startswith("contract stage: ")


def _node(stage: FailureStage, execution: Execution | None = None) -> Node:
    return Node(
        id="n0001",
        parent_id="n0000",
        iteration=1,
        kind=NodeKind.IMPROVE,
        status=NodeStatus.FAILED,
        hypothesis="h",
        failure=Failure(stage=stage, message="what happened"),
        execution=execution,
    )


def test_failure_causes_of_every_stage():
    def run(**fields) -> Execution:
        return Execution(command=["python", "main.py"], wall_s=1.0, **fields)

    assert failure_cause(_node(FailureStage.SMOKE, run(exit_code=None, killed_by="timeout"))) == (
        "smoke timeout",
        "smoke stage: what happened",
    )
    assert failure_cause(_node(FailureStage.RUN, run(exit_code=-9, killed_by="signal")))[0] == (
        "killed by signal"
    )
    assert failure_cause(_node(FailureStage.RUN, run(exit_code=137)))[0] == "crash (exit 137)"
    assert failure_cause(_node(FailureStage.RUN))[0] == "crash"
    assert failure_cause(_node(FailureStage.GUARD))[0] == "guard refused"
    assert failure_cause(_node(FailureStage.SCORE))[0] == "scoring failed"
    assert failure_cause(_node(FailureStage.AGENT))[0] == "agent error"
    ok = _node(FailureStage.RUN).model_copy(update={"failure": None})
    assert failure_cause(ok) is None


# --------------------------------------------------------------------------- what the run hands over


def test_seed_to_best_is_the_whole_change_from_the_source_folders(data: dict):
    view = data["seed_to_best"]
    assert (view["seed"], view["best"], view["steps"]) == ("n0000", "n0005", 3)
    diff = view["diff"]
    assert "\n-SLOPE = 1.0\n-INTERCEPT = 0.0\n+SLOPE = 3.0\n+INTERCEPT = 1.0\n" in diff
    # the crash came in with n0004 and left with its repair: the composed change never has it
    assert "RuntimeError" not in diff
    assert view["files"] == ["main.py"] and (view["added"], view["removed"]) == (2, 2)
    assert view["missing"] is None


def test_the_winners_paths_are_absolute_and_exist(every_node_run: RunFolder, data: dict):
    paths = data["exported"]
    best = every_node_run.best_dir.resolve()
    assert paths["node"] == "n0005" == data["best"]
    assert paths["src"] == str(best / "src") and (best / "src" / "main.py").is_file()
    assert paths["submission"] == str(best / "submission.json")
    assert paths["manifest"] == str(best / "manifest.json")
    assert all(
        Path(paths[k]).is_absolute() and Path(paths[k]).exists() for k in ("src", "submission")
    )


def test_before_the_export_no_path_is_claimed(every_node_run: RunFolder, tmp_path: Path):
    copy = tmp_path / "copy"
    shutil.copytree(every_node_run.root, copy)
    shutil.rmtree(copy / "best")
    paths = collect_report_data(RunFolder(copy))["exported"]
    assert paths["src"] is None and paths["submission"] is None and paths["node"] is None
    assert paths["best_dir"] == str((copy / "best").resolve())


def test_facts_carry_the_candidate_timeout_and_workers(data: dict):
    assert data["candidates"] == {
        "timeout_s": 2.0,
        "memory_mb": 300,
        "workers": 1,
        "parallel_order": None,
    }


# --------------------------------------------------------------------------- the tree's rows


def _creation_dfs(parents: dict[str, str | None]) -> list[str]:
    """The ordering rule, written out recursively: roots, then each subtree, by node number."""
    number = lambda i: int(i[1:])  # noqa: E731
    children = {i: sorted((c for c, p in parents.items() if p == i), key=number) for i in parents}
    roots = sorted((i for i, p in parents.items() if p not in parents), key=number)
    order: list[str] = []

    def walk(node_id: str) -> None:
        order.append(node_id)
        for child in children[node_id]:
            walk(child)

    for root in roots:
        walk(root)
    return order


def crossings(rows: list[dict], parents: dict[str, str | None]) -> list[tuple]:
    """Every way the connectors could tangle, drawn as the page draws them.

    A connector from parent p to child c runs down p's lane from p's dot; when c sits in
    another lane it leaves that lane 0.7 rows above c's row in an elbow into c's dot.
    Heights are in tenths of a row (a dot in row r sits at 10 r).
    """
    row = {r["id"]: i for i, r in enumerate(rows)}
    lane = {r["id"]: r["lane"] for r in rows}
    edges = [(p, c) for c, p in parents.items() if p in row]
    runs, elbows, found = [], [], []
    for p, c in edges:
        lp, lc, yp, yc = lane[p], lane[c], 10 * row[p], 10 * row[c]
        if yc <= yp:
            found.append(("goes up", p, c))
        if lc == lp:
            runs.append((lp, yp, yc, p))
        else:
            runs.append((lp, yp, yc - 7, p))
            elbows.append((min(lp, lc), max(lp, lc), yc - 7, yc, (p, c)))
            if lc < lp:
                found.append(("turns left", p, c))
    for run_lane, top, bottom, parent in runs:
        for other, r in row.items():
            if lane[other] == run_lane and top < 10 * r < bottom:
                found.append(("through a dot", parent, other))
    for i, (lane1, top1, bottom1, parent1) in enumerate(runs):
        for lane2, top2, bottom2, parent2 in runs[i + 1 :]:
            if lane1 == lane2 and parent1 != parent2 and max(top1, top2) < min(bottom1, bottom2):
                found.append(("overlaps", parent1, parent2))
    for left, right, top, bottom, edge in elbows:
        for run_lane, run_top, run_bottom, parent in runs:
            if left < run_lane < right and run_top < bottom and run_bottom > top:
                found.append(("crosses", edge, parent))
    return found


def test_rows_follow_creation_order_and_no_connectors_cross_on_random_trees():
    rng = random.Random(16)
    for size in list(range(1, 30)) * 12:
        parents: dict[str, str | None] = {}
        for i in range(size):
            seeds = [k for k, p in parents.items() if p is None]
            root = i == 0 or (len(seeds) < 3 and rng.random() < 0.08)
            parents[f"n{i:04d}"] = None if root else rng.choice(list(parents))
        shuffled = list(parents.items())
        rng.shuffle(shuffled)  # the finishing order must not matter
        rows = tree_rows([{"id": i, "parent_id": p} for i, p in shuffled])
        assert [r["id"] for r in rows] == _creation_dfs(parents)
        assert crossings(rows, parents) == [], parents


def test_the_checker_sees_a_crossing():
    """Rows out of depth-first order, and a node in its parent's lane that is not the last."""
    parents = {"n0": None, "n1": "n0", "n2": "n1", "n3": "n0", "n4": "n0"}
    split = ["n0", "n1", "n3", "n2", "n4"]  # n1's subtree split by n3
    lanes = {"n0": 0, "n1": 1, "n2": 1, "n3": 2, "n4": 0}
    rows = [{"id": i, "lane": lanes[i]} for i in split]
    assert crossings(rows, parents) == [("crosses", ("n0", "n3"), "n1")]
    crowded = [{"id": i, "lane": 0} for i in ("n0", "n1", "n2")]
    assert crossings(crowded, {"n0": None, "n1": "n0", "n2": "n0"}) == [
        ("through a dot", "n0", "n1")
    ]


def test_the_dashboard_rows_are_in_creation_order(every_node_run: RunFolder, data: dict):
    rows = data["tree_rows"]
    assert [r["id"] for r in rows] == [
        "n0000",
        "n0001",
        "n0002",
        "n0004",
        "n0005",
        "n0006",
        "n0007",
        "n0008",
        "n0009",
        "n0010",
        "n0003",
    ]
    parents = {n["id"]: n["parent_id"] for n in data["nodes"]}
    assert crossings(rows, parents) == []
    # a running node joins its parent's subtree in creation order
    running = tree_rows([*data["nodes"], {"id": "n0011", "parent_id": "n0001"}])
    assert [r["id"] for r in running][:3] == ["n0000", "n0001", "n0011"]


# --------------------------------------------------------------------------- the browser


class _Dom(HTMLParser):
    """Elements of a dumped page: (tag, attributes, text directly and below)."""

    VOID = {"meta", "link", "br", "img", "input", "hr"}  # svg elements come with end tags

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[list] = []
        self.open: list[list] = []

    def handle_starttag(self, tag, attrs):
        element = [tag, {k: v or "" for k, v in attrs}, ""]
        self.elements.append(element)
        if tag not in self.VOID:
            self.open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.elements.append([tag, {k: v or "" for k, v in attrs}, ""])

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        while self.open:
            if self.open.pop()[0] == tag:
                break

    def handle_data(self, data):
        for element in self.open:
            element[2] += data

    def find(self, tag: str | None = None, cls: str | None = None) -> list[tuple[dict, str]]:
        return [
            (attrs, text)
            for t, attrs, text in self.elements
            if (tag is None or t == tag) and (cls is None or cls in attrs.get("class", "").split())
        ]


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_the_page_shows_it_all(every_node_run: RunFolder, data: dict, tmp_path: Path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; .ci/run installs it)")
    page = write_report(every_node_run, tmp_path / "report.html")
    assert page.stat().st_size < 120_000  # one small file
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    flags += [f"--user-data-dir={tmp_path / 'profile'}", "--disable-background-networking"]
    done = subprocess.run(
        [browser, *flags, "--window-size=1400,1800", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    dom = _Dom()
    dom.feed(done.stdout)
    assert dom.find("body")[0][0].get("data-ready") == "1", done.stderr[-2000:]
    nodes = {n["id"]: n for n in data["nodes"]}

    # the tree: rows in creation order, the lanes of tree_layout, one connector per parent
    rows = [a["data-id"] for a, _ in dom.find("div", "tnode")]
    assert rows == [r["id"] for r in data["tree_rows"]]
    drawn = [{"id": a["data-id"], "lane": int(a["data-lane"])} for a, _ in dom.find(cls="tdot")]
    assert sorted(drawn, key=lambda r: rows.index(r["id"])) == data["tree_rows"]
    edges = {(a["data-from"], a["data-to"]) for a, _ in dom.find("path", "edge")}
    assert edges == {(n["parent_id"], i) for i, n in nodes.items() if n["parent_id"]}
    # status chips say what classify says, and failed rows say why
    chips = {a["data-id"]: text for a, text in dom.find("div", "tnode")}
    assert "improved, off path" in chips["n0001"] and "improved, kept" in chips["n0002"]
    assert "repair failed" in chips["n0006"] and "failed" in chips["n0003"]
    causes = [(a["title"], text) for a, text in dom.find("span", "cause")]
    assert ("run stage: killed after 2s wall-clock timeout", "timeout") in causes
    assert "out of memory" in chips["n0008"] and "crash (exit 1)" in chips["n0004"]

    # the chart: a cross per failed node with its cause, and the seed's baseline
    marks = {a["data-id"]: (a["aria-label"], text) for a, text in dom.find("g", "fail-mark")}
    assert set(marks) == {i for i, n in nodes.items() if n["failure"]}
    for node_id, (label, text) in marks.items():
        assert text == nodes[node_id]["failure"]["cause"]
        assert label.endswith(nodes[node_id]["failure"]["cause_detail"])
    [(seed_line, seed_text)] = dom.find("g", "seed-line")
    assert seed_line["data-id"] == "n0000" and seed_text.startswith("seed n0000 2.6976 ± ")
    [seed_point] = [a for a, _ in dom.find("circle", "point") if a["data-id"] == "n0000"]
    [(baseline, _)] = dom.find("line", "seed-baseline")
    assert baseline["y1"] == baseline["y2"] == seed_point["cy"]  # at the seed's score

    # the seed → best diff and the winner's paths, copyable
    [(_, diff)] = dom.find("div", "seed-diff")
    assert "+SLOPE = 3.0" in diff and "+INTERCEPT = 1.0" in diff and "RuntimeError" not in diff
    shown = [text for _, text in dom.find("code", "path")]
    exported = data["exported"]
    assert shown == [exported["src"], exported["submission"], exported["manifest"]]
    assert len(dom.find("button", "copy")) == 3

    # the run facts: the candidates' timeout and how many ran at once
    [(_, facts)] = dom.find("div", "facts")
    assert "candidate timeout2 s" in facts and "workers1" in facts

    # the candidate's markup, in its crash message and log, stayed text
    assert not dom.find("img") and HOSTILE.replace("<", "&lt;").replace(">", "&gt;") in done.stdout
    assert HOSTILE not in page.read_text()  # in the embedded data it is \u003cimg ...
