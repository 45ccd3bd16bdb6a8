"""``rlab-mle``: the seed system's command line (-c, --list, --lite, --list-agents) over rlab.

Every action is an ordinary rlab command underneath, so runs, listings and grading are
exactly those of ``rlab``:

- ``rlab-mle --list [--lite]``: ``rlab list tasks mle`` (metric, data prepared or not);
- ``rlab-mle --list-agents``: ``rlab list agents``;
- ``rlab-mle -c ID [-c ID ...] [-i N] [-d AGENT] [--final]``: ``rlab run mle:ID`` for each,
  then ``rlab final`` on it when ``--final`` is given;
- ``rlab-mle --lite [-i N]``: the same for every prepared competition of MLE-bench Lite;
- ``rlab-mle -c ID --validate FILE``: mle-bench's validation endpoint (valid, or invalid
  with the reason, never a score).
"""

from __future__ import annotations

from pathlib import Path

import typer

from rlab_core.api import RlabUserError, run_cli

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


def rlab(args: list[str]) -> int:
    """Run one ``rlab`` command in this process; return its exit code."""
    return run_cli(args)


@app.command()
def main_command(
    competition: list[str] = typer.Option(
        None, "--competition", "-c", help="Competition id to run (repeatable)."
    ),
    list_: bool = typer.Option(False, "--list", help="List competitions and exit."),
    lite: bool = typer.Option(False, "--lite", help="Only the 22 MLE-bench Lite competitions."),
    list_agents: bool = typer.Option(False, "--list-agents", help="List agents and exit."),
    iterations: int = typer.Option(None, "--iterations", "-i", help="Iterations per run."),
    agent: str = typer.Option(None, "--agent", "-d", help="Agent name."),
    data_dir: Path = typer.Option(None, "--data-dir", help="mle-bench data folder."),
    competitions_dir: Path = typer.Option(
        None, "--competitions-dir", help="Folder of competition definitions."
    ),
    final: bool = typer.Option(False, "--final", help="Grade each run's test split at its end."),
    validate: Path = typer.Option(
        None, "--validate", help="Check a submission file for -c ID (valid or why not)."
    ),
    option: list[str] = typer.Option(None, "--option", "-o", help="More rlab run options."),
) -> None:
    """Run, list and check MLE-bench competitions with rlab."""
    try:
        code = _dispatch(
            competition or [],
            list_,
            lite,
            list_agents,
            iterations,
            agent,
            data_dir,
            competitions_dir,
            final,
            validate,
            option or [],
        )
    except RlabUserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None
    raise typer.Exit(code=code)


def _dispatch(
    competitions: list[str],
    list_: bool,
    lite: bool,
    list_agents: bool,
    iterations: int | None,
    agent: str | None,
    data_dir: Path | None,
    competitions_dir: Path | None,
    final: bool,
    validate: Path | None,
    option: list[str],
) -> int:
    benchmark = [f"benchmark.data_dir={data_dir}"] if data_dir else []
    if competitions_dir:
        benchmark.append(f"benchmark.competitions_dir={competitions_dir}")
    if list_agents:
        return rlab(["list", "agents"])
    if list_:
        extra = [*benchmark, *(["benchmark.lite=true"] if lite else [])]
        return rlab(["list", "tasks", "mle", *[w for o in extra for w in ("-o", o)]])
    if validate is not None:
        return _validate(competitions, validate, data_dir, competitions_dir)
    if not competitions and lite:
        competitions = _prepared_lite(data_dir, competitions_dir)
    if not competitions:
        raise RlabUserError(
            "Name a competition with -c ID (see --list), or pass --lite to run the prepared "
            "MLE-bench Lite competitions."
        )
    code = 0
    for cid in competitions:
        args = ["run", f"mle:{cid}"]
        args += ["-i", str(iterations)] if iterations else []
        args += ["-d", agent] if agent else []
        args += [w for o in [*benchmark, *option] for w in ("-o", o)]
        code = rlab(args) or code
        if final and code == 0:
            code = rlab(["final", "latest"]) or code
    return code


def _options(data_dir: Path | None, competitions_dir: Path | None, lite: bool = False):
    from rlab_mle.options import MleOptions

    return MleOptions(data_dir=data_dir, competitions_dir=competitions_dir, lite=lite)


def _prepared_lite(data_dir: Path | None, competitions_dir: Path | None) -> list[str]:
    from rlab_mle.benchmark import MleBenchmark

    listings = MleBenchmark(_options(data_dir, competitions_dir, lite=True)).list_tasks()
    for listing in listings:
        if not listing.available:
            typer.echo(f"skipping {listing.name}: {listing.note}", err=True)
    return [x.name.partition(":")[2] for x in listings if x.available]


def _validate(
    competitions: list[str], path: Path, data_dir: Path | None, competitions_dir: Path | None
) -> int:
    from rlab_core.api import cache_home
    from rlab_mle.competition_grading import check_submission
    from rlab_mle.registry import Registry

    if len(competitions) != 1:
        raise RlabUserError(
            "--validate checks one submission: name its competition with one -c ID."
        )
    found = Registry(_options(data_dir, competitions_dir), cache_home() / "mle")
    competition = found.ensure_data(found.get(competitions[0]))
    valid, message = check_submission(path, competition)
    typer.echo(message)
    return 0 if valid else 1


def main() -> None:
    """Console-script entry point."""
    app()
