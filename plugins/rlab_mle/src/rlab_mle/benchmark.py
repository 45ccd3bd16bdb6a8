"""The ``mle`` benchmark: competition listing and the sanitized task folder."""

from __future__ import annotations

import sys
from pathlib import Path

from rlab_core.api import (
    Benchmark,
    ConfigError,
    DataUnavailableError,
    PreparedTask,
    TaskListing,
    cache_home,
)
from rlab_mle import build, mlebench_source
from rlab_mle.options import MleOptions
from rlab_mle.registry import BUILTIN_RAW, Registry, builtin_is_current
from rlab_mle.task import MleTask


class MleBenchmark(Benchmark[MleOptions]):
    """MLE-bench competitions (mlebench, a definition folder, built-ins) by id."""

    def registry(self, cache_root: Path | None = None) -> Registry:
        """The competitions these options make visible."""
        return Registry(self.config, cache_root or cache_home() / "mle")

    def list_tasks(self) -> list[TaskListing]:
        options = self.config
        found = self.registry()
        listings = []
        for cid in found.ids(lite=options.lite):
            listings.append(_listing(found, cid))
        if not options.lite and not mlebench_source.available():
            listings.append(
                TaskListing(
                    name="mle:<mle-bench id>",
                    summary="the 75 MLE-bench competitions (22 with -o benchmark.lite=true)",
                    available=False,
                    note=f"{mlebench_source.status()[1]}; install it from "
                    "github.com/openai/mle-bench, or point -o benchmark.competitions_dir at "
                    "definition folders",
                )
            )
        return listings

    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        options = self.config
        found = self.registry(cache_root)
        competition = found.ensure_data(found.get(task))
        target = build.task_dir(cache_root, competition, options)
        reason = (
            "--rebuild-cache" if rebuild_cache else build.stale_reason(target, competition, options)
        )
        if reason:
            if target.exists():
                print(f"rlab-mle: rebuilding mle:{task} ({reason})", file=sys.stderr)
            build.build(competition, target, options)
        return MleTask(competition, target, options)


def _listing(found: Registry, cid: str) -> TaskListing:
    """One line: name, metric and whether the data is ready."""
    try:
        competition = found.get(cid)
    except (ConfigError, DataUnavailableError) as exc:
        summary = "MLE-bench competition" if isinstance(exc, DataUnavailableError) else "unusable"
        return TaskListing(name=f"mle:{cid}", summary=summary, available=False, note=str(exc))
    medals = "leaderboard" if competition.leaderboard else "no leaderboard"
    summary = f"{competition.name} — metric: {competition.grader_name} ({medals})"
    if competition.source == "builtin":
        try:
            BUILTIN_RAW[cid]()  # the package that ships its data
        except DataUnavailableError as exc:
            return TaskListing(name=f"mle:{cid}", summary=summary, available=False, note=str(exc))
        ready = builtin_is_current(competition)
        note = "built in; " + (
            "generated" if ready else "generated on first use from installed packages"
        )
        return TaskListing(name=f"mle:{cid}", summary=summary, available=True, note=note)
    if competition.is_prepared():
        return TaskListing(
            name=f"mle:{cid}",
            summary=summary,
            available=True,
            note=f"prepared in {competition.root}",
        )
    return TaskListing(
        name=f"mle:{cid}",
        summary=summary,
        available=False,
        note=f"not prepared: `{competition.prepare_command()}`",
    )
