"""``rlab knowledge ...`` (search, show, export, import, forget, stats) and ``rlab mcp``.

The base is one file: ``$RLAB_KNOWLEDGE``, else ``~/.local/share/rlab/knowledge.sqlite``.
Listings take ``--json``: the same facts as JSON on stdout, nothing else there.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from rlab_core.cli.common import JsonFlag, RunsFolder, console, print_json, user_errors
from rlab_core.errors import RlabUserError
from rlab_core.knowledge.mcp_server import hit_view, lesson_view
from rlab_core.knowledge.records import Lesson
from rlab_core.knowledge.store import KnowledgeStore
from rlab_core.report.sanitize import safe

app = typer.Typer(
    help="The knowledge base runs write back: search it, inspect it, share it.",
    no_args_is_help=True,
)


class NoLessonsError(RlabUserError):
    """A task or run has no lessons in the knowledge base."""


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="knowledge")
    root.command("mcp")(mcp)


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4g}" if signed else f"{value:.4g}"


def _shown(text: object) -> str:
    """Text from the base on one terminal line: lessons carry candidates' failure messages and
    agents' hypotheses, so control characters are written as escapes, markup kept literal."""
    return safe(text, newlines=False)


def _outcome(lesson: Lesson) -> str:
    """What a lesson's node came to: its verdict and gain, or its failure."""
    if lesson.failure_cause:
        return (
            f"[red]{_shown(lesson.status)}[/] {_shown(lesson.failure_cause.splitlines()[0][:80])}"
        )
    if lesson.verdict or lesson.gain is not None:
        interval = ""
        if lesson.interval:
            lo, hi = lesson.interval
            interval = f" [{_number(lo, True)}, {_number(hi, True)}]"
        return f"{_shown(lesson.verdict or 'gain')} {_number(lesson.gain, True)}{interval}"
    return _shown(lesson.node_kind or lesson.status)


@app.command("search")
@user_errors
def search(
    text: str = typer.Argument(..., help="Words to look for (any may match)."),
    family: str | None = typer.Option(None, "--family", help="Only this task family."),
    kind: str | None = typer.Option(None, "--kind", help="Only 'lesson' or 'page'."),
    limit: int = typer.Option(20, "--limit", min=1, help="At most this many hits."),
    as_json: JsonFlag = False,
) -> None:
    """Lessons and curated pages that match TEXT, best first."""
    if kind not in (None, "lesson", "page"):
        raise RlabUserError(f"--kind {kind!r} is not a kind; use 'lesson' or 'page'.")
    hits = KnowledgeStore().search(text, family=family, kind=kind, limit=limit)
    if as_json:
        print_json([hit_view(hit) for hit in hits])
        return
    if not hits:
        console.print(f"no match for {_shown(text)!r}")
        return
    table = Table(show_lines=False)
    for column in ("kind", "title", "where", "what"):
        table.add_column(column)
    for hit in hits:
        if hit.lesson is not None:
            where = f"{hit.lesson.fingerprint.task} {hit.lesson.run_id}/{hit.lesson.node_id}"
            what = _outcome(hit.lesson)
        else:
            where = f"{hit.page.family} page {hit.page.id}" if hit.page else ""
            what = _shown(hit.text[:120])
        table.add_row(hit.kind, _shown(hit.title[:80]), _shown(where), what)
    console.print(table)


@app.command("show")
@user_errors
def show(
    task: str = typer.Argument(..., help="BENCHMARK:TASK, or the task part alone."),
    as_json: JsonFlag = False,
) -> None:
    """Every lesson recorded for one task, run by run."""
    store = KnowledgeStore()
    lessons = store.lessons(task=task)
    if not lessons:
        known = store.tasks()
        matches = [name for name in known if name.partition(":")[2] == task]
        if len(matches) == 1:
            task, lessons = matches[0], store.lessons(task=matches[0])
        else:
            listed = ", ".join(known[:10]) or "none yet"
            raise NoLessonsError(
                f"No lessons for task {task!r} in {store.path}; tasks with lessons: {listed}."
            )
    if as_json:
        print_json([lesson_view(lesson) for lesson in lessons])
        return
    table = Table(title=f"lessons for {_shown(task)}")
    for column in ("run/node", "move or hypothesis", "val", "outcome"):
        table.add_column(column)
    for lesson in lessons:
        table.add_row(
            _shown(f"{lesson.run_id}/{lesson.node_id}"),
            _shown(lesson.title[:80]),
            _number(lesson.val_score),
            _outcome(lesson),
        )
    console.print(table)


@app.command("export")
@user_errors
def export(path: Path = typer.Argument(..., help="JSON-lines file to write.")) -> None:
    """Write every lesson and page to a JSON-lines file (to share a team's base)."""
    store = KnowledgeStore()
    count = store.export_jsonl(path)
    console.print(f"exported {count} records from {_shown(str(store.path))} to {_shown(str(path))}")


@app.command("import")
@user_errors
def import_(
    path: Path = typer.Argument(..., help="A file written by `rlab knowledge export`."),
) -> None:
    """Merge a JSON-lines export into this base (importing twice changes nothing)."""
    store = KnowledgeStore()
    count = store.import_jsonl(path)
    console.print(f"imported {count} records into {_shown(str(store.path))}")


@app.command("forget")
@user_errors
def forget(run: str = typer.Argument(..., help="Run id or run folder.", metavar="RUN")) -> None:
    """Delete every lesson of one run."""
    folder = Path(run).expanduser()
    run_id = folder.resolve().name if folder.is_dir() else run.rstrip("/").rpartition("/")[2]
    store = KnowledgeStore()
    removed = store.forget_run(run_id)
    if removed == 0:
        raise NoLessonsError(
            f"No lessons of run {run_id!r} in {store.path}; `rlab knowledge stats` counts the runs there."
        )
    console.print(f"forgot {removed} lessons of run {_shown(run_id)}")


@app.command("stats")
@user_errors
def stats(as_json: JsonFlag = False) -> None:
    """How many lessons, runs, tasks and pages the base holds, per family."""
    facts = KnowledgeStore().stats()
    if as_json:
        print_json(facts)
        return
    console.print(
        f"{_shown(facts['path'])}: {facts['lessons']} lessons from {facts['runs']} runs on "
        f"{facts['tasks']} tasks, {facts['pages']} pages"
    )
    for family, counts in facts["families"].items():
        console.print(f"  {_shown(family)}: {counts['lessons']} lessons, {counts['pages']} pages")


@user_errors
def mcp(
    run: str | None = typer.Option(
        None, "--run", help="The run `run_history` reads when the client names none."
    ),
    out: RunsFolder = Path("runs"),
) -> None:
    """Serve the knowledge base and a run's history to an MCP client over stdio."""
    from rlab_core.knowledge.mcp_server import serve

    serve(run=run, out=out)
