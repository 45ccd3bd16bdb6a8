"""Numbers with their uncertainty in every view: `rlab show`, the live lines, the dashboard
and `rlab final` print each score with its bootstrap standard error, each gain with its
verdict, only accepted nodes as new bests, and the finalists' seed replicates with the rule
that chose the node. One real toy run serves the module; its four agent nodes are one gain
of each kind: better, within noise, worse, and better again with a seed-dependent program
(so the finalists' seeds disagree)."""

# ruff: noqa: RUF001 - the views print a typographic minus (U+2212) and en dashes

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import RLAB, cli_env, edit
from rich.console import Console

from rlab_core.config import RunConfig
from rlab_core.final import finalize
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import Gain, Node
from rlab_core.report.data import collect_report_data
from rlab_core.report.html import write_report
from rlab_core.report.live import LiveProgress
from rlab_core.report.numbers import (
    final_gap_text,
    final_test_text,
    format_interval,
    format_score,
    format_se,
    gain_detail,
    gain_text,
)
from rlab_core.report.status import Outcome, best_after_each, classify, new_best_ids
from rlab_core.report.terminal import node_table
from rlab_core.run_folder import RunFolder
from rlab_core.runner import start_run
from rlab_core.testing.toy import plugin as toy_plugin
from rlab_core.tree import Tree

PREDICTIONS = 'INTERCEPT for x in data[f"{split}_x"]]'
#: one gain of each verdict, all from the same parent (the script never beats n0001 until n0004)
NOISY = [
    {
        "hypothesis": "Slope 2 is closer to the data.",
        "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
    },
    {
        # ±0.05 on alternate points: helps some, hurts others — a gain lost in the noise
        "hypothesis": "Wiggle the predictions.",
        "edits": [
            edit(
                PREDICTIONS,
                'INTERCEPT + 0.05 * (-1) ** i for i, x in enumerate(data[f"{split}_x"])]',
            )
        ],
    },
    {"hypothesis": "Slope 1.5 instead.", "edits": [edit("SLOPE = 2.0\n", "SLOPE = 1.5\n")]},
    {
        "hypothesis": "Intercept 0.8, nudged by the seed.",
        "edits": [
            edit(
                "INTERCEPT = 0.0\n",
                "INTERCEPT = 0.8 + 0.05 * int(os.environ.get('RLAB_SEED', '0'))\n",
            )
        ],
    },
]
STABLE_ID = "20261203-000000-toy-line"


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory) -> RunFolder:
    root = tmp_path_factory.mktemp("noise")
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    config = RunConfig(
        task="toy:line",
        agent="scripted",
        agent_options={"script": NOISY},
        out=root / "runs",
        iterations=len(NOISY) + 2,
        min_iterations=100,
        noise_seeds=0,  # the training-seed noise has its own tests (test_seed_noise.py)
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(root / "rlab-cache"))
        run = start_run(host, config).run
    stable = run.root.parent / STABLE_ID  # a fixed id keeps the printed tables' widths fixed
    run.root.rename(stable)
    return RunFolder(stable)


@pytest.fixture
def run_copy(noisy_run: RunFolder, tmp_path: Path, rlab_cache: Path) -> RunFolder:
    copy = tmp_path / "runs" / noisy_run.run_id
    shutil.copytree(noisy_run.root, copy)
    return RunFolder(copy)


def _nodes(run: RunFolder) -> dict[str, Node]:
    return replay(run.journal_path).tree.nodes


def _events(run: RunFolder) -> list[dict]:
    return [json.loads(line) for line in run.journal_path.read_text().splitlines()]


def _rlab(args: list[str], tmp_path: Path, columns: int) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [RLAB, *args],
        env=cli_env(tmp_path, COLUMNS=str(columns), TERM="dumb"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_the_run_has_one_gain_of_each_kind_and_finalists(noisy_run: RunFolder):
    nodes = _nodes(noisy_run)
    verdicts = {i: n.gain.verdict for i, n in nodes.items() if n.gain is not None}
    assert verdicts == {
        "n0001": "better",
        "n0002": "within noise",
        "n0003": "worse",
        "n0004": "better",
    }
    assert all(
        n.score.standard_error > 0 and n.score.resample_unit == "points" for n in nodes.values()
    )
    # the wiggle scores better than its parent, but within noise: it is not accepted
    assert nodes["n0002"].score.better_than(nodes["n0001"].score)
    assert [i for i, n in nodes.items() if n.accepted] == ["n0000", "n0001", "n0004"]
    state = replay(noisy_run.journal_path)
    assert state.finalists["node_id"] == "n0004" and len(state.replicates["n0004"]) == 2
    assert state.finalists["finalists"][0]["spread"] > 0  # the seeds disagree on n0004


# --------------------------------------------------------------------------- the numbers


def test_scores_carry_two_significant_digits_of_their_error():
    assert format_score(0.667331, 0.00731) == "0.66733 ± 0.0073"
    assert format_score(1.18197, 0.1248) == "1.18197 ± 0.12"
    assert format_score(1234.5, 12.3) == "1234.50000 ± 12"
    assert format_score(0.5, None) == "0.50000" and format_score(None, 0.1) == "-"
    assert format_score(-0.25, 0.0) == "−0.25000 ± 0"
    assert format_se(0.000123456) == "0.00012" and format_se(None) == "-"


def test_gains_say_their_verdict_at_the_precision_of_their_bound():
    noise = Gain(against="n0001", delta=0.0046, low=-0.003, high=0.012, verdict="within noise")
    assert gain_text(noise) == "+0.0046 within noise"
    assert gain_detail(noise) == "+0.0046, 90 % lower bound −0.0030: within noise"
    better = Gain(against="n0001", delta=0.0213, low=0.011, high=0.031, verdict="better")
    assert gain_text(better) == "+0.021 better"
    assert gain_detail(better) == "+0.021, 90 % lower bound +0.011: better"
    worse = Gain(against="n0001", delta=-0.01, low=-0.02, high=-0.004, level=0.95, verdict="worse")
    assert gain_text(worse) == "−0.010 worse"
    assert gain_detail(worse) == "−0.010, 95 % upper bound −0.004: worse"
    unmeasured = Gain(against="n0001", delta=0.5158)
    assert gain_text(unmeasured) == "+0.516 unmeasured"
    assert "unmeasured (the benchmark offers no resampling" in gain_detail(unmeasured)
    assert gain_text({"delta": 0.0, "low": -0.01, "high": 0.01, "verdict": "within noise"}) == (
        "0.000 within noise"
    )


def test_test_summary_and_gap_read_final_report_fields():
    report = {
        "primary_metric": "roc_auc",
        "higher_is_better": True,
        "val_primary": 0.6683,
        "val_standard_error": 0.0071,
        "test_primary": 0.66521,
        "test_standard_error": 0.0068,
        "test_interval": [0.6540, 0.6761],
        "test_interval_level": 0.9,
        "test_resample_unit": "users",
        "val_test_gap": 0.66521 - 0.6683,
    }
    assert final_test_text(report) == (
        "test roc_auc 0.66521 ± 0.0068 (90 % interval 0.6540–0.6761, over users)"
    )
    assert final_gap_text(report) == (
        "val–test gap (test − val) −0.0031 ± 0.0098: worse on test, within noise at 90 %"
    )
    lower = {**report, "higher_is_better": False, "val_test_gap": -0.05}
    assert final_gap_text(lower).endswith("better on test, beyond noise at 90 %")
    assert final_gap_text({**report, "val_test_gap": None}) is None
    assert format_interval(-0.01, 0.02, 2) == "−0.01 to 0.02"


# --------------------------------------------------------------------------- rlab show


def test_show_prints_errors_verdicts_and_the_finalists_at_80_columns(
    run_copy: RunFolder, tmp_path: Path
):
    nodes = _nodes(run_copy)
    for columns in (80, 200):
        out = _rlab(["show", str(run_copy.root)], tmp_path, columns).stdout
        for node in nodes.values():
            assert format_score(node.score.primary, node.score.standard_error) in out
        table = out[: out.index("finalists:")]
        rows = {line.split()[1]: line for line in table.splitlines() if re.match(r"│ n000\d", line)}
        assert "within noise" in rows["n0002"] and gain_text(nodes["n0002"].gain) in rows["n0002"]
        assert gain_text(nodes["n0001"].gain) in rows["n0001"] and "better" in rows["n0001"]
        assert gain_text(nodes["n0003"].gain) in rows["n0003"] and "worse" in rows["n0003"]
        # the best mark only on the node the run chose: never on the gain within noise
        assert [i for i, row in rows.items() if "★" in row.split("│")[1]] == ["n0004"]
        assert "acceptance: a gain counts when its 90 % one-sided paired bootstrap" in out
        assert "seed 0" in out and "seed 2" in out and "mean ± spread" in out
        finalists = out[out.index("mean ± spread") :]
        assert re.search(r"n0004 ★ .*1\.18197 .* ± 0\.02", finalists)
        rule = " ".join(out[out.index("★ n0004:") :].split())
        assert rule.startswith("★ n0004: chosen by mean validation over 3 seeds among the 3 best")
        if columns == 80:
            assert max(len(line) for line in out.splitlines()) <= 80, out
            assert "Wiggle the predictions." in out  # the hypotheses, listed under the table
        else:
            assert "│ Wiggle the predictions." in out  # a hypothesis column on a wide terminal


def test_show_tree_marks_a_gain_within_noise_as_not_kept(run_copy: RunFolder, tmp_path: Path):
    out = _rlab(["show", str(run_copy.root), "--tree"], tmp_path, 80).stdout
    lines = {m.group(1): line for line in out.splitlines() if (m := re.search(r"(n000\d)", line))}
    assert "evaluated" in lines["n0002"] and "improved" not in lines["n0002"]
    assert "± 0.1" in lines["n0002"]
    assert "improved, kept" in lines["n0004"] and "★" in lines["n0004"]
    assert all(len(line) <= 80 for line in out.splitlines() if "n000" in line)
    outcomes = classify(replay(run_copy.journal_path).tree)
    assert outcomes["n0002"] == Outcome.EVALUATED and outcomes["n0001"] == Outcome.IMPROVED
    assert new_best_ids(replay(run_copy.journal_path).tree) == {"n0000", "n0001", "n0004"}


def test_show_reads_journals_from_before_the_acceptance_rule(run_copy: RunFolder, tmp_path: Path):
    """No standard errors, gains, acceptance or finalists: plain scores, ★ on the best score."""
    lines = []
    for event in _events(run_copy):
        if event["type"] in ("replicate_scored", "finalists_chosen"):
            continue
        if event["type"] == "node_finished":
            node = event["node"]
            for key in ("gain", "versus_best", "accepted", "top_nodes"):
                node.pop(key, None)
            if node.get("score"):
                node["score"].pop("standard_error", None)
                node["score"].pop("resample_unit", None)
        lines.append(json.dumps(event, separators=(",", ":")))  # as the journal writes it
    run_copy.journal_path.write_text("\n".join(lines) + "\n")
    info = json.loads((run_copy.root / "run.json").read_text())
    info.pop("acceptance")
    (run_copy.root / "run.json").write_text(json.dumps(info))
    out = _rlab(["show", str(run_copy.root)], tmp_path, 120).stdout
    assert "±" not in out.split("val ± SE")[1].split("★ best")[0]  # no error in any row
    assert "1.69697" in out and "finalists" not in out and "acceptance:" not in out
    best = [line for line in out.splitlines() if "★" in line and "n000" in line]
    assert len(best) == 1 and "n0004" in best[0]


def test_an_unmeasured_gain_says_so(noisy_run: RunFolder):
    tree = replay(noisy_run.journal_path).tree
    node = tree.nodes["n0002"]
    node.gain = Gain(against="n0001", delta=node.gain.delta)  # a benchmark without resampling
    node.score.standard_error = None
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(node_table(tree, width=200))
    row = next(line for line in console.file.getvalue().splitlines() if "│ n0002" in line)
    assert "unmeasured" in row and "±" not in row.split("│")[5]


# --------------------------------------------------------------------------- live progress


def _live(events: list[dict], width: int = 100) -> tuple[str, LiveProgress]:
    console = Console(file=io.StringIO(), width=width, force_terminal=False)
    with LiveProgress(console, iterations_max=6) as progress:
        for event in events:
            progress(event)
    return console.file.getvalue(), progress


def test_live_lines_say_the_verdict_and_only_accepted_nodes_are_new_bests(noisy_run: RunFolder):
    events = _events(noisy_run)
    nodes = _nodes(noisy_run)
    text, progress = _live(events)
    lines = {
        m.group(1): line for line in text.splitlines() if (m := re.match(r"  (n000\d) .*←", line))
    }
    assert "baseline" in lines["n0000"] and "new best" not in lines["n0000"]
    assert "★ new best" in lines["n0001"] and "★ new best" in lines["n0004"]
    # n0002 scores better than the best, but within noise: no new best
    assert "within noise" in lines["n0002"] and "new best" not in lines["n0002"]
    assert "worse" in lines["n0003"] and "new best" not in lines["n0003"]
    for node_id, node in nodes.items():
        assert (
            f"val {format_score(node.score.primary, node.score.standard_error)}" in lines[node_id]
        )
    replicates = [e for e in events if e["type"] == "replicate_scored"]
    for event in replicates:
        assert f"replicate {event['node_id']} seed {event['seed']}: {event['primary']:.5f}" in text
    assert "mean ± spread" in text and "★ n0004: chosen by mean validation over 3 seeds" in text
    assert text.index("replicate n0004 seed 1") < text.index("★ n0004: chosen")
    assert progress.best_id == "n0004"
    assert (
        "best rmse "
        + format_score(nodes["n0004"].score.primary, nodes["n0004"].score.standard_error)
        in progress.status_line()
    )


def test_live_prints_the_acceptance_note_once(noisy_run: RunFolder):
    events = _events(noisy_run)
    note = "toy:line offers no resampling of its metric, so rlab cannot tell a gain from noise"
    started = {**events[0], "acceptance_note": note}
    text, _ = _live([started, *events[1:3], started])
    assert text.count(note) == 1 and "note:" in text


def test_live_lines_of_an_old_journal_mark_new_bests_by_score(noisy_run: RunFolder):
    events = []
    for event in _events(noisy_run):
        if event["type"] == "node_finished":
            event["node"].pop("accepted", None)
            event["node"].pop("gain", None)
        events.append(event)
    text, _ = _live(events)
    lines = {
        m.group(1): line for line in text.splitlines() if (m := re.match(r"  (n000\d) .*←", line))
    }
    assert "★ new best" in lines["n0002"]  # by score, as before the rule
    assert "within noise" not in text


# --------------------------------------------------------------------------- the dashboard


def test_dashboard_data_carries_errors_verdicts_and_finalists(run_copy: RunFolder, toy_host):
    data = collect_report_data(run_copy)
    nodes = {n["id"]: n for n in data["nodes"]}
    records = _nodes(run_copy)
    for node_id, node in nodes.items():
        assert node["standard_error"] == records[node_id].score.standard_error
        assert node["se_text"] == format_se(records[node_id].score.standard_error)
    noise = nodes["n0002"]
    assert noise["gain"]["verdict"] == "within noise" and noise["accepted"] is False
    assert noise["gain"]["text"] == gain_text(records["n0002"].gain)
    assert re.fullmatch(
        r"\+\d\.\d+, 90 % lower bound −\d\.\d+: within noise", noise["gain"]["detail"]
    )
    assert noise["new_best"] is False and noise["outcome"] == "evaluated"
    assert noise["best_after"]["id"] == "n0001"  # the chart's best line does not move
    assert [i for i, n in nodes.items() if n["new_best"]] == ["n0000", "n0001", "n0004"]
    assert data["best"] == "n0004" and data["accepted_best"] == "n0004"
    assert data["acceptance"]["rule"] == "significant" and data["acceptance"]["unit"] == "points"
    finalists = data["finalists"]
    assert finalists["chosen"] == "n0004" and finalists["seeds"] == ["0", "1", "2"]
    assert finalists["rule"].startswith("chosen by mean validation over 3 seeds")
    assert finalists["rows"][0]["mean_text"].startswith(f"{finalists['rows'][0]['mean']:.5f} ± ")

    report = finalize(toy_host, run_copy)
    final = collect_report_data(run_copy)["final"]
    assert final["test_standard_error"] == report["test_standard_error"] > 0
    assert final["test_text"] == final_test_text(report) and "90 % interval" in final["test_text"]
    assert final["gap_text"] == final_gap_text(report) and final["gap_text"].startswith(
        "val–test gap"
    )
    assert final["selection_rule"] == report["selection_rule"] == finalists["rule"]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_the_dashboard_draws_error_bars_verdicts_and_finalists(run_copy: RunFolder, tmp_path: Path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; .ci/run installs it)")
    page = write_report(run_copy)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    flags += [f"--user-data-dir={tmp_path / 'profile'}", "--disable-background-networking"]
    done = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    dom = done.stdout
    assert 'data-ready="1"' in dom, done.stderr[-2000:]
    bars = re.findall(r'<g class="err-bar" data-id="(n\d+)"', dom)
    assert sorted(bars) == ["n0000", "n0001", "n0002", "n0003", "n0004"]
    nodes = _nodes(run_copy)
    assert f">{gain_text(nodes['n0002'].gain)}<" in dom and "within noise" in dom
    assert 'class="verdict noise"' in dom and 'class="verdict bad"' in dom
    assert "mean ± spread" in dom and "★ n0004: chosen by mean validation over 3 seeds" in dom
    assert "90 % one-sided paired bootstrap" in dom
    # the detail panel of the chosen node: its gain with the bound that decided it
    assert "90 % lower bound" in dom and "it became the run's best" in dom
    assert "± " + format_se(nodes["n0004"].score.standard_error) in dom


# --------------------------------------------------------------------------- rlab final


def test_final_prints_the_test_interval_the_gap_and_the_rule(run_copy: RunFolder, tmp_path: Path):
    out = _rlab(["final", str(run_copy.root)], tmp_path, 200).stdout
    report = json.loads(run_copy.final_report.read_text())
    assert report["node"] == "n0004" and report["test_interval_level"] == 0.9
    assert final_test_text(report) in out
    assert re.search(
        r"test rmse \d\.\d{5} ± 0\.\d+ \(90 % interval \d\.\d+–\d\.\d+, over points\)", out
    )
    assert final_gap_text(report) in out and "val–test gap (test − val)" in out
    assert f"selection: {report['selection_rule']}" in out
    assert "chosen by mean validation over 3 seeds" in out
    val = format_score(report["val_primary"], report["val_standard_error"])
    assert f"val  rmse {val} (over points)" in out
    assert re.search(r"n0004 ★ \d\.\d{5} ± 0\.0\d+ +\(3 seeds\)", out)


def test_views_of_a_run_whose_replicates_are_still_running(run_copy: RunFolder, tmp_path: Path):
    lines = run_copy.journal_path.read_text().splitlines(keepends=True)
    third = [i for i, line in enumerate(lines) if '"replicate_scored"' in line][2]
    run_copy.journal_path.write_text("".join(lines[: third + 1]))
    out = _rlab(["show", str(run_copy.root)], tmp_path, 80).stdout
    assert "finalists' seed replicates so far: 3 (no choice yet)" in out
    assert "mean ± spread" not in out and "not stopped" in out
    data = collect_report_data(run_copy)
    assert data["finalists"]["chosen"] is None and data["best"] == "n0004"
    assert {r["node"]: sorted(r["scores"]) for r in data["finalists"]["rows"]} == {
        "n0004": ["1", "2"],
        "n0001": ["1"],
    }
    text, _ = _live(_events(run_copy))
    assert text.count("replicate n000") == 3 and "chosen by mean" not in text


def test_show_says_when_the_benchmark_cannot_tell_gains_from_noise(
    run_copy: RunFolder, tmp_path: Path
):
    info = json.loads((run_copy.root / "run.json").read_text())
    note = "toy:line offers no resampling of its metric, so rlab cannot tell a gain from noise"
    info["acceptance"] = {**info["acceptance"], "rule": "any", "note": note}
    (run_copy.root / "run.json").write_text(json.dumps(info))
    out = " ".join(_rlab(["show", str(run_copy.root)], tmp_path, 80).stdout.split())
    assert f"acceptance: any validation gain counts; note: {note}" in out
    assert collect_report_data(run_copy)["acceptance"]["note"] == note


def test_the_views_best_so_far_follows_the_trees_rule(noisy_run: RunFolder):
    """best_after_each walks the run once; at every step it names what Tree.best() would."""
    tree = replay(noisy_run.journal_path).tree
    legacy = replay(noisy_run.journal_path).tree
    for node in legacy:
        node.accepted = None  # a journal from before the rule: by score
    for whole in (tree, legacy):
        partial = Tree(higher_is_better=whole.higher_is_better)
        for node, best in best_after_each(whole):
            partial.add(node)
            assert best.id == partial.best().id, node.id
    assert [b.id for _, b in best_after_each(legacy)][2] == "n0002"  # by score it would be
    assert [b.id for _, b in best_after_each(tree)][2] == "n0001"  # within noise: it is not
