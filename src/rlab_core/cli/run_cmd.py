"""``rlab run`` and ``rlab resume``."""

from __future__ import annotations

import functools
import json
import os
import shlex
import sys
from pathlib import Path

import typer

from rlab_core.cli.common import (
    RunPath,
    RunsFolder,
    complete_modes,
    complete_names,
    console,
    err_console,
    make_host,
    user_errors,
)
from rlab_core.config import build_run_config, parse_overrides
from rlab_core.report.html import REPORT_NAME
from rlab_core.report.live import LiveProgress
from rlab_core.report.numbers import format_score
from rlab_core.report.sanitize import one_line, safe
from rlab_core.report.status import failure_cause
from rlab_core.run_folder import RunFolder, open_run
from rlab_core.runner import RunOutcome, resume_run, start_run


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("resume")(resume)


#: Command-line parameters whose RunConfig key has another name.
CONFIG_KEY_OF = {"time_budget": "time_budget_s"}
#: Parameters that are not RunConfig keys: the layers themselves.
NOT_CONFIG = {"mode", "config_file", "option", "no_kg"}

#: Exit code of a run that finished but evaluated no node (every seed failed).
NOTHING_EVALUATED = 3


def invoked_as() -> str:
    """How the user started rlab, for the commands the summary suggests: ``uv run rlab``
    under ``uv run`` (which sets ``UV_RUN_RECURSION_DEPTH`` for what it starts), else the
    name rlab was started by (``rlab``)."""
    if os.environ.get("UV_RUN_RECURSION_DEPTH"):
        return "uv run rlab"
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    # `python -m ...` or an embedding program: the installed command is the safe advice
    return name if name and not name.endswith(".py") and name != "-c" else "rlab"


def _exported(run: RunFolder) -> tuple[Path | None, Path | None]:
    """``best/src`` and the submission ``export_best`` wrote (from ``best/manifest.json``)."""
    if not run.best_dir.is_dir():
        return None, None
    try:
        manifest = json.loads((run.best_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        manifest = {}
    name = manifest.get("submission") if isinstance(manifest, dict) else None
    submission = run.best_dir / str(name) if name else None
    source = run.best_dir / "src"
    return (
        source if source.is_dir() else None,
        submission if submission is not None and submission.is_file() else None,
    )


def _summary(outcome: RunOutcome) -> None:
    """The end of ``rlab run``/``resume``: where the run, the winner and its submission are,
    and the commands to look further, written the way the user started rlab.

    Run text (the stop reason quotes a candidate's failure) is escaped, and rich never
    breaks these lines (a terminal wraps them softly, a pipe gets them whole), so paths
    and commands stay whole for copying.
    """
    run, best = outcome.run, outcome.best
    say = functools.partial(console.print, soft_wrap=True)
    rlab = invoked_as()
    root = shlex.quote(str(run.root))
    say(f"[bold]run folder:[/] {safe(run.root)}")
    if best is None or best.score is None:
        # a run that achieved nothing must not look like success to a script or CI
        err_console.print(
            f"[bold red]no node was evaluated:[/] {safe(outcome.stop_reason, newlines=False)}",
            soft_wrap=True,
        )
        failed = sorted((s for s in outcome.seeds if s.failure is not None), key=lambda s: s.id)
        first = failed[0] if failed else None
        cause = failure_cause(first) if first is not None else None
        if first is not None and first.failure and cause is not None:
            message = one_line(first.failure.message, 300)
            if message[:60] not in one_line(outcome.stop_reason):  # not quoted there already
                err_console.print(
                    f"{safe(first.id)} failed: {safe(cause.label)} — {safe(message)}",
                    soft_wrap=True,
                )
        where = run.node_dir(first.id) if first is not None else run.nodes_dir / "<id>"
        err_console.print(
            f"the seed's log: {safe(where / 'log.txt')}; every node's failure: "
            f"`{safe(rlab)} show {safe(root)}`",
            soft_wrap=True,
        )
        raise typer.Exit(code=NOTHING_EVALUATED)
    seeds = [s for s in outcome.seeds if s.score is not None]
    score = format_score(best.score.primary, best.score.standard_error)
    line = f"[bold]best:[/] {safe(best.id)}  {safe(best.score.primary_metric)} = {score}"
    if seeds:
        seed = seeds[0].score
        gain = best.score.primary - seed.primary  # type: ignore[union-attr]
        line += f"  (seed {seed.primary:.5f}, {'+' if gain >= 0 else ''}{gain:.5f})"  # type: ignore[union-attr]
    say(line)
    if outcome.rule:
        say(f"[bold]selection:[/] {safe(outcome.rule)}")
    source, submission = _exported(run)
    if source is not None:
        say(f"[bold]best program:[/] {safe(source)}")
    if submission is not None:
        say(f"[bold]submission:[/] {safe(submission)}")
    report = run.root / REPORT_NAME
    if report.exists():
        say(f"[bold]report:[/] {safe(report)}")
    say(f"isolation: [bold]{safe(outcome.isolation)}[/]")
    say(
        f"next: `{safe(rlab)} show {safe(root)}` (every node, its score or why it failed; "
        f"a node's log: {safe(run.nodes_dir)}/<id>/log.txt)"
    )
    say(f"      `{safe(rlab)} final {safe(root)}` (score the test split once)")


@user_errors
def run(
    ctx: typer.Context,
    task: str = typer.Argument(
        None, help="BENCHMARK:TASK; default: the installed default task.", envvar="RLAB_TASK"
    ),
    agent: str = typer.Option(
        None,
        "--agent",
        "-d",
        help="Agent name.",
        envvar="RLAB_AGENT",
        autocompletion=complete_names("agents"),
    ),
    strategy: str = typer.Option(
        None,
        "--strategy",
        help="Search strategy.",
        envvar="RLAB_STRATEGY",
        autocompletion=complete_names("strategies"),
    ),
    sandbox: str = typer.Option(
        None,
        "--sandbox",
        help="Sandbox.",
        envvar="RLAB_SANDBOX",
        autocompletion=complete_names("sandboxes"),
    ),
    iterations: int = typer.Option(
        None,
        "--iterations",
        "-i",
        help="Agent iterations (repairs included).",
        envvar="RLAB_ITERATIONS",
    ),
    time_budget: float = typer.Option(
        None,
        "--time-budget",
        help="Wall-clock budget in seconds.",
        envvar="RLAB_TIME_BUDGET",
        metavar="SECONDS",
    ),
    max_tokens: int = typer.Option(
        None, "--max-tokens", help="Token budget.", envvar="RLAB_MAX_TOKENS"
    ),
    max_cost: float = typer.Option(
        None, "--max-cost", help="Cost budget in USD.", envvar="RLAB_MAX_COST"
    ),
    mode: str = typer.Option(
        None,
        "--mode",
        "-m",
        help="Named preset (see `rlab list modes`).",
        envvar="RLAB_MODE",
        autocompletion=complete_modes,
    ),
    config_file: Path = typer.Option(
        None, "--config", help="YAML config file.", envvar="RLAB_CONFIG"
    ),
    target_val: float = typer.Option(
        None, "--target-val", help="Stop once validation reaches this."
    ),
    seed: int = typer.Option(None, "--seed", help="Random seed.", envvar="RLAB_SEED"),
    seed_candidate: Path = typer.Option(
        None, "--seed-candidate", help="Start from your own program folder."
    ),
    workers: int = typer.Option(
        None, "--workers", help="Candidates evaluated at once; each gets its share of the cores."
    ),
    out: Path = typer.Option(
        None, "--out", help="Folder for run folders (default ./runs).", envvar="RLAB_OUT"
    ),
    rebuild_cache: bool = typer.Option(
        None, "--rebuild-cache", help="Rebuild the task's prepared data."
    ),
    option: list[str] = typer.Option(
        None,
        "--option",
        "-o",
        help="Plugin option, e.g. -o agent.temperature=0.2.",
        metavar="SECTION.OPTION=VALUE",
    ),
    no_kg: bool = typer.Option(
        False,
        "--no-kg",
        help="Agents see nothing of earlier runs (the run still writes its lessons back; "
        "-o knowledge.record=false stops that).",
    ),
) -> None:
    """Run the research loop on a task."""
    # every other parameter is a RunConfig key of the same name (or the one mapped below):
    # the command line is one more layer, merged and validated with the others at once
    given = {
        CONFIG_KEY_OF.get(name, name): value
        for name, value in ctx.params.items()
        if value is not None and name not in NOT_CONFIG
    }
    overrides = parse_overrides(option or [])
    if no_kg:
        overrides.setdefault("knowledge", {})["enabled"] = False
    host = make_host()
    config = build_run_config(
        host,
        cli={**given, **overrides},
        config_file=config_file,
        mode=mode,
    )
    with LiveProgress(
        console,
        iterations_max=config.iterations,
        time_budget_s=config.time_budget_s,
        max_tokens=config.max_tokens,
        max_cost=config.max_cost,
    ) as progress:
        outcome = start_run(host, config, on_event=progress)
    _summary(outcome)


@user_errors
def resume(
    run_path: RunPath,
    iterations: int = typer.Option(
        None, "--iterations", "-i", min=0, help="Raise the iteration budget."
    ),
    out: RunsFolder = Path("runs"),
) -> None:
    """Continue a stopped or killed run from its journal."""
    opened = open_run(run_path, out)  # run.json and the journal, read once for both uses
    config = opened.config
    with LiveProgress(
        console,
        iterations_max=iterations or config.iterations,
        time_budget_s=config.time_budget_s,
        max_tokens=config.max_tokens,
        max_cost=config.max_cost,
        prior=opened.state.tree,
        elapsed_before_s=opened.state.elapsed_s,
    ) as progress:
        outcome = resume_run(make_host(), opened, iterations=iterations, on_event=progress)
    _summary(outcome)
