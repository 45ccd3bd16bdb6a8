"""``rlab run`` and ``rlab resume``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from rlab_core.cli.common import RunPath, RunsFolder, console, err_console, make_host, user_errors
from rlab_core.config import build_run_config, parse_overrides
from rlab_core.report.html import REPORT_NAME
from rlab_core.report.live import LiveProgress
from rlab_core.report.numbers import format_score
from rlab_core.run_folder import open_run
from rlab_core.runner import RunOutcome, resume_run, start_run


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("resume")(resume)


#: Command-line parameters whose RunConfig key has another name.
CONFIG_KEY_OF = {"time_budget": "time_budget_s"}
#: Parameters that are not RunConfig keys: the layers themselves.
NOT_CONFIG = {"mode", "config_file", "option"}

#: Exit code of a run that finished but evaluated no node (every seed failed).
NOTHING_EVALUATED = 3


def _summary(outcome: RunOutcome) -> None:
    best = outcome.best
    console.print(f"[bold]run folder:[/] {outcome.run.root}")
    if best is None or best.score is None:
        # a run that achieved nothing must not look like success to a script or CI
        err_console.print(
            f"[bold red]no node was evaluated:[/] {outcome.stop_reason}; each node's "
            f"failure and log are in {outcome.run.nodes_dir}/<id>/ (result.json, log.txt).",
            soft_wrap=True,
        )
        raise typer.Exit(code=NOTHING_EVALUATED)
    seeds = [s for s in outcome.seeds if s.score is not None]
    score = format_score(best.score.primary, best.score.standard_error)
    line = f"[bold]best:[/] {best.id}  {best.score.primary_metric} = {score}"
    if seeds:
        seed = seeds[0].score
        gain = best.score.primary - seed.primary  # type: ignore[union-attr]
        line += f"  (seed {seed.primary:.5f}, {'+' if gain >= 0 else ''}{gain:.5f})"  # type: ignore[union-attr]
    console.print(line)
    if outcome.rule:
        console.print(f"[bold]selection:[/] {escape(outcome.rule)}")
    report = outcome.run.root / REPORT_NAME
    if report.exists():
        console.print(f"[bold]report:[/] {report}")
    console.print(
        f"isolation: [bold]{outcome.isolation}[/]   next: `rlab show {outcome.run.root}`, `rlab final {outcome.run.root}`"
    )


@user_errors
def run(
    ctx: typer.Context,
    task: str = typer.Argument(
        None, help="BENCHMARK:TASK; default: the installed default task.", envvar="RLAB_TASK"
    ),
    agent: str = typer.Option(None, "--agent", "-d", help="Agent name.", envvar="RLAB_AGENT"),
    strategy: str = typer.Option(
        None, "--strategy", help="Search strategy.", envvar="RLAB_STRATEGY"
    ),
    sandbox: str = typer.Option(None, "--sandbox", help="Sandbox.", envvar="RLAB_SANDBOX"),
    iterations: int = typer.Option(
        None,
        "--iterations",
        "-i",
        help="Agent iterations (repairs included).",
        envvar="RLAB_ITERATIONS",
    ),
    time_budget: float = typer.Option(
        None, "--time-budget", help="Wall-clock budget in seconds.", envvar="RLAB_TIME_BUDGET"
    ),
    max_tokens: int = typer.Option(
        None, "--max-tokens", help="Token budget.", envvar="RLAB_MAX_TOKENS"
    ),
    max_cost: float = typer.Option(
        None, "--max-cost", help="Cost budget in USD.", envvar="RLAB_MAX_COST"
    ),
    mode: str = typer.Option(
        None, "--mode", "-m", help="Named preset (see `rlab list modes`).", envvar="RLAB_MODE"
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
        None, "--option", "-o", help="Plugin option, e.g. -o agent.temperature=0.2."
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
    host = make_host()
    config = build_run_config(
        host,
        cli={**given, **parse_overrides(option or [])},
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
