"""rlab with its defaults against Optuna TPE over the same seed's declared parameters, equal wall.

Usage: ``uv run python bench/vs_optuna.py [--tasks a,b] [--seeds 0,1,2] [--wall S]
[--iterations N] [--equal-wall] [--out f.json] [--keep]`` (``--wall``: seconds per arm, default per task
from :data:`WALL_S`; ``--keep``: keep the runs and trials for a look afterwards).

What a data scientist would do instead of rlab is tune the seed's hyperparameters with
Optuna. For each task and run seed this runs both, side by side, for the same wall-clock:

- **rlab**: ``start_run`` with every setting at its default (playbook agent, best-first,
  ``acceptance: significant``, finalists, every seed the task offers — on rel-flights the
  program Optuna tunes, :data:`SAME_START`) but ``time_budget_s``
  = the wall and ``threads=1``; the iteration cap is lifted (``--iterations`` sets one) so
  the wall is the budget. The chosen node is ``tree.selected()``, as ``rlab final`` takes it.
- **Optuna**: ``optuna.create_study(sampler=TPESampler(seed=s))`` and
  ``study.optimize(objective, timeout=wall)`` — the whole wall even when rlab converges
  sooner (the harder test for rlab); with ``--equal-wall`` it starts no trial once rlab's
  run has ended, so both take the same wall-clock — over the seed's declared parameters
  (``# tune:`` lines, :func:`rlab_core.tuning.space.declared_params`; the seed is
  :data:`OPTUNA_SEED`'s LightGBM one where a task offers several); the seed's own values
  are the first trial. A trial is the seed folder with the trial's values set
  (``setting_edits``), run as ``python main.py`` with the candidate contract's variables
  (``RLAB_STAGE=full``, ``RLAB_THREADS=1``) and scored by the task's validation scorer; a
  trial that fails is a failed Optuna trial. The best trial by validation is the pick.

The two arms of a (task, seed) run at the same time, one candidate thread each, so they see
the same machine load. Each arm's pick is then scored on test once; the paired bootstrap over
the test split's units (the same draws for both arms) gives rlab - Optuna with its 90 %
two-sided interval, positive meaning rlab is better. Per task the seeds' replicate
differences are averaged into a pooled interval and verdict. Everything runs in a throw-away
folder (cache, runs, knowledge bases), removed afterwards; Ctrl-C stops cleanly and prints
what finished.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from rlab_core.acceptance import DRAW_SEED_BASE
from rlab_core.cache import remove_tree
from rlab_core.config import RunConfig
from rlab_core.edits import apply_edits, changed_files, copy_source, read_source, write_source
from rlab_core.evaluation import THREAD_VARIABLES
from rlab_core.guard import candidate_environment
from rlab_core.interfaces import PreparedTask
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.records import Node
from rlab_core.resampling import paired_difference, replicate_scores
from rlab_core.run_folder import RunFolder
from rlab_core.runner import prepare_task, start_run
from rlab_core.tuning.space import TunableParam, declared_params, format_value, setting_edits

TASKS = (
    "mle:uci-handwritten-digits",
    "mle:diabetes-progression",
    "mle:nyc-flights-air-time",
    "mle:wdbc-breast-cancer",
    "relbench:rel-flights/plane-delay",
    "kuairand:sample",
)
#: Seconds per arm by default: the default bench (3 seeds, both arms at once) takes about
#: 40 minutes on 2 cores. Measured on 2026-12-03, one thread, one seed run at full stage:
#: mle 2-4 s (10 s under rlab, smoke run included, with the other arm running), kuairand
#: 1-11 s a seed, rel-flights' LightGBM seeds 3 and 10 s and its GNN seed 120-160 s. rlab's
#: seed phase (every seed, two noise replicates of the best) takes ~40 s on mle and ~230 s on
#: plane-delay, and it keeps up to half the budget for the finalists: at these walls it
#: makes few agent nodes (``--wall`` gives longer ones).
WALL_S = {
    "mle:uci-handwritten-digits": 100,
    "mle:diabetes-progression": 100,
    "mle:nyc-flights-air-time": 100,
    "mle:wdbc-breast-cancer": 100,
    "relbench:rel-flights/plane-delay": 200,
    "kuairand:sample": 100,
}
DEFAULT_WALL_S = 120
#: The seed Optuna tunes where a task offers several (by seed name); else the first seed.
OPTUNA_SEED = {
    "relbench:rel-flights/plane-delay": "entity-table-only-lightgbm",
    "kuairand:sample": "history_lgbm",
}
#: Tasks where rlab starts from the program Optuna tunes (``seed_candidate``) instead of
#: every seed the task offers: on rel-flights the GNN seed alone takes 120-160 s of one
#: thread, most of a wall, so the comparison there is of the two searches from one program.
SAME_START = ("relbench:rel-flights/plane-delay",)
LEVEL = 0.90  # two-sided
RESAMPLES = 1000
ARMS = ("rlab", "optuna")
#: Written into the Optuna arm's folder when rlab's run has ended: no trial starts after it.
STOP_FILE = "stop"
#: How long an interrupted arm gets to journal its stop before it is killed.
STOP_GRACE_S = 30


class TrialFailed(Exception):
    """A trial whose program failed or whose outputs broke the contract (an Optuna FAIL)."""


# ---------------------------------------------------------------- the rlab arm


def rlab_arm(task_name: str, seed: int, wall: float, iterations: int | None, home: Path) -> dict:
    """One rlab run with its defaults for ``wall`` seconds; its pick's test-side outputs."""
    start_from = None
    if task_name in SAME_START:
        start_from = optuna_seed(prepare_task(PluginHost(), task_name), task_name).path
    config = RunConfig(
        task=task_name,
        seed=seed,
        time_budget_s=wall,
        iterations=iterations,
        threads=1,
        seed_candidate=start_from,
        out=home / "runs",
    )
    start = time.perf_counter()
    outcome = start_run(PluginHost(), config)
    wall_used = time.perf_counter() - start
    tree = replay(outcome.run.journal_path).tree
    chosen = tree.selected() or outcome.best
    if chosen is None or chosen.score is None:
        return {"error": f"no evaluated node ({outcome.stop_reason})", "wall_s": wall_used}
    evaluated = tree.evaluated()
    return {
        "val": chosen.score.primary,
        "wall_s": round(wall_used, 1),
        "evaluated": len(evaluated),
        "tuning": sum(1 for n in evaluated if getattr(n, "tuning", None) is not None),
        "seeds": len(tree.seeds()),
        "chosen": chosen.id,
        "hypothesis": chosen.hypothesis[:100],
        "stop": outcome.stop_reason,
        "test_dir": str(node_test_side(outcome.run, chosen)),
    }


def node_test_side(run: RunFolder, node: Node) -> Path:
    """A node's test-side predictions: its private folder, else its outputs (read in place:
    the run's folders are the harness's own copies, and they stay until the study is done)."""
    private = run.private_node_dir(node.id)
    return private if private.is_dir() else run.node_dir(node.id) / "outputs"


# ---------------------------------------------------------------- the Optuna arm


def optuna_seed(task: PreparedTask, task_name: str):
    """The seed Optuna tunes: :data:`OPTUNA_SEED`'s pick for the task, else the first."""
    seeds = task.seed_candidates()
    wanted = OPTUNA_SEED.get(task_name)
    for candidate in seeds:
        if candidate.name == wanted:
            return candidate
    return seeds[0]


def suggest(trial: Any, param: TunableParam) -> Any:
    """The trial's value of one declared parameter."""
    if param.kind == "choice":
        return trial.suggest_categorical(param.name, param.choices)
    if param.kind == "int":
        return trial.suggest_int(param.name, int(param.low), int(param.high), log=param.log)
    return trial.suggest_float(param.name, param.low, param.high, log=param.log)


def trial_source(seed_dir: Path, params: list[TunableParam], values: dict, dest: Path) -> None:
    """``dest``: a copy of the seed folder with ``values`` set on the declaring lines."""
    copy_source(seed_dir, dest)
    before = read_source(dest)
    after = apply_edits(before, setting_edits(params, values), ("*.py",))
    write_source(dest, after, changed_files(before, after))


def trial_environment(task: PreparedTask, name: str, src: Path, out: Path, cache: Path, seed: int):
    """The variables the evaluator gives a candidate (rlab_core.evaluation), one thread."""
    contract = {
        "RLAB_NODE_ID": name,
        "RLAB_DATA_DIR": str(task.data_dir),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(cache),
        "RLAB_STAGE": "full",
        "RLAB_SEED": str(seed),
        "RLAB_THREADS": "1",
        "HOME": str(src),
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": str(seed),
        "MPLBACKEND": "Agg",
        **dict.fromkeys(THREAD_VARIABLES, "1"),
    }
    return candidate_environment(os.environ, contract)


def run_trial(task: PreparedTask, seed_dir: Path, params, values: dict, folder: Path, seed: int):
    """Run one trial in ``folder``; its validation score (raises :class:`TrialFailed`)."""
    src, out, private = folder / "src", folder / "outputs", folder / "private"
    trial_source(seed_dir, params, values, src)
    out.mkdir(parents=True)
    cache = folder.parent / "cache"  # one for the study, as a run has one
    cache.mkdir(exist_ok=True)
    env = trial_environment(task, folder.name, src, out, cache, seed)
    with (folder / "log.txt").open("w") as log:
        try:
            done = subprocess.run(
                [sys.executable, "main.py"],
                cwd=src,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=task.limits.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise TrialFailed(f"timed out after {task.limits.timeout_s:.0f}s") from exc
    if done.returncode:
        tail = (folder / "log.txt").read_text(errors="replace")[-300:]
        raise TrialFailed(f"exit code {done.returncode}: {tail}")
    # as the evaluator does: the test side leaves the outputs before anything reads them
    for pattern in task.private_outputs:
        for path in sorted(out.glob(pattern)):
            target = private / path.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
    problems = task.validate_outputs(out, "val")
    if problems:
        raise TrialFailed("; ".join(problems))
    return task.score(out, "val").primary


def test_side(folder: Path) -> Path:
    """A trial's test-side predictions: its private folder, else its outputs."""
    private = folder / "private"
    return private if private.is_dir() else folder / "outputs"


def optuna_arm(task_name: str, seed: int, wall: float, home: Path) -> dict:
    """Plain Optuna TPE over the seed's declared parameters for ``wall`` seconds."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # failures are counted, not logged
    task = prepare_task(PluginHost(), task_name)
    candidate = optuna_seed(task, task_name)
    params = declared_params(read_source(candidate.path))
    higher = task.higher_is_better
    study = optuna.create_study(
        direction="maximize" if higher else "minimize",
        sampler=optuna.samplers.TPESampler(seed=seed),
    )
    study.enqueue_trial({p.name: p.current for p in params})  # start where rlab starts
    best: dict[str, Any] = {}

    def objective(trial: Any) -> float:
        values = {p.name: suggest(trial, p) for p in params}
        folder = home / "trials" / f"trial{trial.number:04d}"
        try:
            value = run_trial(task, candidate.path, params, values, folder, seed)
        except TrialFailed as exc:
            trial.set_user_attr("failure", str(exc)[:300])
            shutil.rmtree(folder, ignore_errors=True)
            raise
        better = not best or (value > best["val"] if higher else value < best["val"])
        if better:
            if best:
                shutil.rmtree(best["folder"], ignore_errors=True)
            best.update(val=value, folder=folder, number=trial.number, params=values)
        else:
            shutil.rmtree(folder, ignore_errors=True)
        return value

    start = time.perf_counter()
    # an empty space has one setting: the seed's own, run once
    stop_file = home / STOP_FILE

    def stop_with_rlab(study: Any, _trial: Any) -> None:
        """Equal wall-clock: once rlab's run has ended, no trial starts."""
        if stop_file.exists():
            study.stop()

    study.optimize(
        objective,
        timeout=wall,
        n_trials=None if params else 1,
        catch=(TrialFailed,),
        callbacks=[stop_with_rlab],
    )
    wall_used = time.perf_counter() - start
    states = [t.state.name for t in study.trials]
    failures = [t.user_attrs.get("failure", "") for t in study.trials if t.state.name == "FAIL"]
    if not best:
        return {"error": f"every trial failed: {failures[:1]}", "wall_s": round(wall_used, 1)}
    return {
        "val": best["val"],
        "wall_s": round(wall_used, 1),
        "trials": len(states),
        "failed": states.count("FAIL"),
        "seed": candidate.name,
        "declared": len(params),
        "best_trial": best["number"],
        "best_params": {p.name: format_value(p, best["params"][p.name]) for p in params},
        "failures": failures[:3],
        "test_dir": str(test_side(best["folder"])),
    }


def arm_main(args: argparse.Namespace) -> int:
    """A child process: run one arm, write its result as JSON."""
    logging.getLogger("rlab_core").setLevel(logging.ERROR)
    logging.getLogger("rlab_core.builtin.local_sandbox").setLevel(logging.ERROR)
    home = args.home
    try:
        if args.arm == "rlab":
            result = rlab_arm(args.task, args.seed, args.wall, args.iterations, home)
        else:
            result = optuna_arm(args.task, args.seed, args.wall, home)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the parent reports it with the other arm's result
        result = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    (home / "result.json").write_text(json.dumps(result, indent=1))
    return 0


# ---------------------------------------------------------------- the pair, side by side


def run_pair(args: argparse.Namespace, task_name: str, seed: int, wall: float, study: Path):
    """Both arms of one (task, seed) at the same time, each in a process of its own."""
    children = {}
    for arm in ARMS:
        home = study / arm
        home.mkdir(parents=True)
        command = [
            sys.executable,
            __file__,
            "--arm",
            arm,
            "--task",
            task_name,
            "--seed",
            str(seed),
            "--wall",
            str(wall),
            "--home",
            str(home),
        ]
        if args.iterations is not None:
            command += ["--iterations", str(args.iterations)]
        # a knowledge base per arm and study: no earlier run's lessons steer this one
        env = {**os.environ, "RLAB_KNOWLEDGE": str(home / "knowledge.sqlite")}
        children[arm] = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
    try:
        children["rlab"].wait()
        if args.equal_wall:
            # rlab chose to stop here (its budget, or convergence): Optuna gets the same wall
            (study / "optuna" / STOP_FILE).touch()
        children["optuna"].wait()
    except KeyboardInterrupt:
        stop_children(children.values())
        raise
    results = {}
    for arm in ARMS:
        path = study / arm / "result.json"
        results[arm] = (
            json.loads(path.read_text())
            if path.exists()
            else {"error": f"the arm exited with code {children[arm].returncode}"}
        )
    return results


def stop_children(children) -> None:
    """Interrupt running arms (they journal their stop), killing any that linger."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE_S
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# ---------------------------------------------------------------- test scores, comparisons


def test_score(task: PreparedTask, folder: Path) -> tuple[float, np.ndarray | None]:
    """The test score of an arm's pick and its replicates on the shared bootstrap draws."""
    score = task.score(folder, "test").primary
    resampling = task.resampling(folder, "test")
    replicates = (
        None if resampling is None else replicate_scores(resampling, RESAMPLES, DRAW_SEED_BASE)
    )
    return score, replicates


def compare(task: PreparedTask, results: dict) -> dict:
    """Both arms' test scores and the paired difference rlab - Optuna (positive: rlab better)."""
    (rlab_test, rlab_reps), (opt_test, opt_reps) = (
        test_score(task, Path(results[arm]["test_dir"])) for arm in ARMS
    )
    row: dict[str, Any] = {"rlab_test": rlab_test, "optuna_test": opt_test}
    if rlab_reps is None or opt_reps is None:
        return row
    # one-sided bounds at 95 % are the two-sided 90 % interval
    paired = paired_difference(
        rlab_test,
        opt_test,
        rlab_reps,
        opt_reps,
        higher_is_better=task.higher_is_better,
        level=1 - (1 - LEVEL) / 2,
    )
    sign = 1.0 if task.higher_is_better else -1.0
    row["deltas"] = sign * (rlab_reps - opt_reps)  # kept for the pooled interval, not saved
    if paired is not None:
        row.update(diff=paired.delta, low=paired.low, high=paired.high)
        row["verdict"] = verdict(paired.low, paired.high)
    return row


def verdict(low: float, high: float) -> str:
    """The interval in words: which arm is better beyond the noise, else a tie."""
    if low > 0:
        return "rlab better"
    if high < 0:
        return "Optuna better"
    return "tie"


def pooled(rows: list[dict]) -> dict | None:
    """The task's verdict over seeds: the mean difference, its interval from the seeds'
    replicate differences averaged draw by draw (the draws are the same for every seed)."""
    usable = [r for r in rows if "deltas" in r and "diff" in r]
    if not usable:
        return None
    mean = np.mean(np.stack([r["deltas"] for r in usable]), axis=0)
    mean = mean[np.isfinite(mean)]
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(mean, [tail, 1 - tail])
    diff = float(np.mean([r["diff"] for r in usable]))
    return {"diff": diff, "low": float(low), "high": float(high), "seeds": len(usable)}


# ---------------------------------------------------------------- the printout


HEADER = (
    "| task | seed | val rlab / Optuna | test rlab / Optuna | rlab - Optuna on test "
    "[90 %] | verdict | rlab nodes (tuning) | Optuna trials (failed) | wall s rlab / Optuna |"
)


def fmt(value: Any, digits: int = 4) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{value:.{digits}f}")
    )


def study_row(row: dict) -> str:
    """One (task, seed) as a Markdown row."""
    r, o = row["rlab"], row["optuna"]
    if "error" in r or "error" in o:
        problem = "; ".join(f"{arm}: {row[arm]['error']}" for arm in ARMS if "error" in row[arm])
        return f"| {row['task']} | {row['seed']} | failed: {problem} |||||||"
    interval = (
        f"{row['diff']:+.4f} [{row['low']:+.4f}, {row['high']:+.4f}]" if "diff" in row else "—"
    )
    return (
        f"| {row['task']} | {row['seed']} | {fmt(r['val'])} / {fmt(o['val'])} | "
        f"{fmt(row.get('rlab_test'))} / {fmt(row.get('optuna_test'))} | {interval} | "
        f"{row.get('verdict', 'unmeasured')} | {r['evaluated']} ({r['tuning']}) | "
        f"{o['trials']} ({o['failed']}) | {r['wall_s']:.0f} / {o['wall_s']:.0f} |"
    )


def task_verdicts(rows: list[dict], tasks: list[str]) -> dict[str, dict]:
    """Per task: the seeds' differences and the pooled difference with its verdict."""
    out = {}
    for task_name in tasks:
        mine = [r for r in rows if r["task"] == task_name]
        if not mine:
            continue
        pool = pooled(mine)
        out[task_name] = {
            "by_seed": [r.get("diff") for r in mine],
            **(pool or {}),
            "verdict": "unmeasured" if pool is None else verdict(pool["low"], pool["high"]),
        }
    return out


def summary(verdicts: dict[str, dict]) -> list[str]:
    """The per-task table and the final line."""
    lines = [
        "",
        "| task | rlab - Optuna by seed | pooled mean [90 %] | verdict |",
        "|---|---|---|---|",
    ]
    for task_name, v in verdicts.items():
        by_seed = ", ".join("—" if d is None else f"{d:+.4f}" for d in v["by_seed"])
        pool = f"{v['diff']:+.4f} [{v['low']:+.4f}, {v['high']:+.4f}]" if "diff" in v else "—"
        lines.append(f"| {task_name} | {by_seed} | {pool} | {v['verdict']} |")
    judged = [t for t, v in verdicts.items() if v["verdict"] != "unmeasured"]
    worse = [t for t in judged if verdicts[t]["verdict"] == "Optuna better"]
    lines.append(
        f"rlab >= Optuna on {len(judged) - len(worse)} of {len(judged)} tasks; "
        f"significantly worse on: {', '.join(worse) or 'none'}"
    )
    return lines


def preamble(args: argparse.Namespace) -> str:
    cap = "no iteration cap" if args.iterations is None else f"at most {args.iterations} iterations"
    return (
        "Both arms of a (task, seed) run at the same time, one candidate thread each "
        "(RLAB_THREADS=1, one worker), so they see the same machine load.\n"
        f"rlab: defaults (playbook agent, best-first, acceptance, finalists, every seed the "
        f"task offers — on {', '.join(SAME_START)} the program Optuna tunes), the wall as its "
        f"time budget, {cap}. Optuna: TPESampler(seed) over the tuned seed's declared "
        "parameters, the seed's own values first, RLAB_STAGE=full; "
        + (
            "it starts no trial once rlab's run has ended (equal wall-clock).\n"
            if args.equal_wall
            else "it runs its whole wall whenever rlab stops.\n"
        )
    )


# ---------------------------------------------------------------- the bench


def prepare(host: PluginHost, task_name: str) -> tuple[PreparedTask | None, str]:
    """The prepared task, or why it cannot be prepared here (offline, plugin missing)."""
    try:
        task = prepare_task(host, task_name)
        seed = optuna_seed(task, task_name)
        params = declared_params(read_source(seed.path))
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0]
        return None, f"{type(exc).__name__}: {first}"
    rlab_seeds = (
        seed.name if task_name in SAME_START else ", ".join(s.name for s in task.seed_candidates())
    )
    space = f"{len(params)} declared parameters" if params else "no declared parameter (run once)"
    return task, f"rlab starts from {rlab_seeds}; Optuna tunes {seed.name}: {space}"


def bench(args: argparse.Namespace, root: Path, rows: list[dict]) -> list[str]:
    """Every (task, seed) pair; fills ``rows`` as they finish; returns the tasks judged."""
    host = PluginHost()
    tasks = []
    for task_name in args.tasks.split(","):
        task, note = prepare(host, task_name)
        if task is None:
            print(f"{task_name}: skipped, cannot be prepared here ({note})", flush=True)
            continue
        tasks.append(task_name)
        wall = args.wall or WALL_S.get(task_name, DEFAULT_WALL_S)
        print(f"{task_name}: {wall:.0f} s per arm; {note}", flush=True)
        for seed in (int(s) for s in args.seeds.split(",")):
            study = root / f"{task_name.replace(':', '_').replace('/', '_')}-{seed}"
            results = run_pair(args, task_name, seed, wall, study)
            row = {"task": task_name, "seed": seed, "wall": wall, **results}
            if all("error" not in results[arm] for arm in ARMS):
                try:
                    row.update(compare(task, results))
                except Exception as exc:  # a pick the test scorer refuses: say so, go on
                    row["rlab"]["error"] = f"test scoring failed: {type(exc).__name__}: {exc}"
            rows.append(row)
            print(study_row(row), flush=True)
            if not args.keep:
                remove_tree(study)
    return tasks


def serializable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "deltas"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--seeds", default="0,1,2", help="run seeds, e.g. 0,1,2")
    parser.add_argument(
        "--wall", type=float, default=None, help="seconds per arm for every task (default: WALL_S)"
    )
    parser.add_argument("--iterations", type=int, default=None, help="cap rlab's iterations")
    parser.add_argument(
        "--equal-wall",
        action="store_true",
        help="Optuna starts no trial once rlab's run has ended, so both take the same "
        "wall-clock (default: Optuna runs its whole wall even when rlab converges sooner)",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument(
        "--keep", action="store_true", help="keep the runs and trials (prints the folder)"
    )
    # the internal child mode: one arm of one study
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        return arm_main(args)
    logging.getLogger("rlab_core").setLevel(logging.ERROR)
    root = Path(tempfile.mkdtemp(prefix="rlab-bench-vs-optuna-"))
    os.environ["RLAB_CACHE_HOME"] = str(root / "cache")  # the children inherit it
    rows: list[dict] = []
    print(preamble(args))
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    interrupted = False
    tasks: list[str] = args.tasks.split(",")
    try:
        tasks = bench(args, root, rows)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: the figures below are of the studies that finished", flush=True)
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            remove_tree(root)
    verdicts = task_verdicts(rows, tasks)
    print("\n".join(summary(verdicts)), flush=True)
    if args.out:
        figures = {"studies": [serializable(r) for r in rows], "tasks": verdicts}
        args.out.write_text(json.dumps(figures, indent=1, default=str))
    return 130 if interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
