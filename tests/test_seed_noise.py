"""Training-seed noise: the best seed re-run with other seeds before the search, its spread
counted in every paired verdict, journaled once and reused by the finalists and a resume."""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

import numpy as np
from conftest import RLAB, cli_env, edit

from rlab_core.journal import read_events, replay
from rlab_core.report.data import collect_report_data
from rlab_core.report.numbers import format_number
from rlab_core.resampling import paired_difference
from rlab_core.run_folder import open_run
from rlab_core.runner import resume_run
from rlab_core.testing.toy import EXTRA_MARKER, SEED_DIR

SLOPE_2 = {
    "hypothesis": "Slope 2 is closer to the data.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
}
#: A tiny gain on every point: the paired rows' bootstrap alone calls it better.
NUDGE = {
    "hypothesis": "Nudge the intercept toward the data.",
    "edits": [edit("INTERCEPT = 0.0\n", "INTERCEPT = 0.001\n")],
}


def _jittery_seed(tmp_path: Path) -> Path:
    """The toy seed whose slope moves with ``RLAB_SEED``, as a model's training luck does."""
    folder = tmp_path / "jittery"
    folder.mkdir()
    source = (SEED_DIR / "main.py").read_text()
    jitter = "SLOPE += {'1': 0.05, '2': -0.04}.get(os.environ.get('RLAB_SEED', '0'), 0.0)\n"
    (folder / "main.py").write_text(source.replace(EXTRA_MARKER, jitter + EXTRA_MARKER))
    return folder


def _events(run, kind: str | None = None) -> list[dict]:
    events = read_events(run.journal_path)[0]
    return [e for e in events if kind is None or e["type"] == kind]


def test_the_seed_noise_is_measured_before_the_search_and_widens_every_verdict(
    run_toy, tmp_path: Path
):
    outcome = run_toy(
        [SLOPE_2, NUDGE], seed_candidate=_jittery_seed(tmp_path), noise_seeds=2, iterations=2
    )
    events = _events(outcome.run)
    kinds = [e["type"] for e in events]
    # the seed, its two replicates, the measurement, then the search
    assert [e["seed"] for e in events if e["type"] == "replicate_scored"] == [1, 2]
    measured = kinds.index("seed_noise_measured")
    first_child = next(
        i for i, e in enumerate(events) if e["type"] == "node_started" and e["id"] != "n0000"
    )
    assert measured < first_child
    noise = events[measured]
    assert noise["node_id"] == "n0000" and sorted(noise["scores"]) == ["0", "1", "2"]
    assert noise["sd"] == statistics.stdev(noise["scores"].values()) > 0.01
    tree = replay(outcome.run.journal_path).tree
    slope_2, nudged = tree.get("n0001"), tree.get("n0002")
    # a large gain stays better; the nudge, far smaller than a seed's luck, is within noise
    assert slope_2.gain.verdict == "better" and slope_2.gain.seed_sd == noise["sd"]
    assert nudged.gain.verdict == "within noise" and not nudged.accepted
    assert tree.best().id == "n0001"
    # said in `rlab show` and on the dashboard
    sd_text = f"SD {format_number(noise['sd'])}, counted in every verdict"
    show = subprocess.run(
        [RLAB, "show", str(outcome.run.root)],
        env=cli_env(tmp_path, COLUMNS="200", TERM="dumb"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert show.returncode == 0 and "training-seed noise: n0000 over seeds 0: " in show.stdout
    assert sd_text in show.stdout
    assert sd_text in collect_report_data(outcome.run)["acceptance"]["text"]


def test_without_the_measurement_the_same_nudge_is_better(run_toy, tmp_path: Path):
    outcome = run_toy(
        [SLOPE_2, NUDGE], seed_candidate=_jittery_seed(tmp_path), noise_seeds=0, iterations=2
    )
    assert not _events(outcome.run, "seed_noise_measured")
    nudged = replay(outcome.run.journal_path).tree.get("n0002")
    assert nudged.gain.verdict == "better" and nudged.gain.seed_sd is None and nudged.accepted


def test_a_seed_that_ignores_rlab_seed_measures_zero_and_changes_no_verdict(run_toy):
    outcome = run_toy([SLOPE_2, NUDGE], noise_seeds=2, iterations=2)
    (noise,) = _events(outcome.run, "seed_noise_measured")
    assert noise["sd"] == 0.0
    nudged = replay(outcome.run.journal_path).tree.get("n0002")
    assert nudged.gain.verdict == "better" and nudged.gain.seed_sd is None


def test_the_finalists_reuse_the_measurement_and_a_resume_does_not_measure_again(
    run_toy, toy_host, tmp_path: Path
):
    outcome = run_toy(
        [SLOPE_2, NUDGE],
        seed_candidate=_jittery_seed(tmp_path),
        noise_seeds=2,
        finalists=3,
        finalist_seeds=2,
        iterations=1,
    )
    pairs = [(e["node_id"], e["seed"]) for e in _events(outcome.run, "replicate_scored")]
    # the seed's replicates ran once, before the search; the finalists ran only the child's
    assert pairs == [("n0000", 1), ("n0000", 2), ("n0001", 1), ("n0001", 2)]
    resume_run(toy_host, open_run(outcome.run.root), iterations=2)
    assert len(_events(outcome.run, "seed_noise_measured")) == 1
    tree = replay(outcome.run.journal_path).tree
    sd = _events(outcome.run, "seed_noise_measured")[0]["sd"]
    assert tree.get("n0002").gain.seed_sd == sd  # the resumed judge read it back


def test_extra_noise_widens_the_paired_bounds_the_same_way_every_time():
    rng = np.random.default_rng(0)
    base = rng.normal(0.70, 0.01, 1000)
    better = base + 0.004 + rng.normal(0, 0.0005, 1000)
    plain = paired_difference(0.704, 0.700, better, base, higher_is_better=True, level=0.9)
    wide = paired_difference(
        0.704, 0.700, better, base, higher_is_better=True, level=0.9, extra_sd=0.004
    )
    again = paired_difference(
        0.704, 0.700, better, base, higher_is_better=True, level=0.9, extra_sd=0.004
    )
    assert plain.verdict == "better" and wide.verdict == "within noise"
    assert wide.low < plain.low < plain.high < wide.high
    assert (wide.low, wide.high) == (again.low, again.high)
    # the added spread is the normal one: the 90 % half-width grows to about √(0.0005² + 0.004²)·1.28
    assert abs((wide.high - wide.low) / 2 - 1.2816 * np.hypot(0.0005, 0.004)) < 0.0006
