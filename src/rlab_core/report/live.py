"""Live progress of ``rlab run``: a status bar on a terminal, plain lines everywhere else.

:class:`LiveProgress` prints the same per-node lines as :class:`ProgressPrinter`; when the
console is a terminal it also keeps a live footer under them: the node being evaluated and
its hypothesis (or what the run is doing between nodes: preparing the task's data, running
the seeds, running seed replicates, waiting for the agent, finishing), iterations used of
the budget, the run's best score so far (the last node accepted, with its standard error),
elapsed time, tokens and cost. The footer goes the moment the run stops, before the stop
line is printed, so nothing repaints under the summary. Piped into a file or a CI log it
degrades to the plain lines alone.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from rlab_core.records import NodeKind
from rlab_core.report.numbers import format_score
from rlab_core.report.sanitize import one_line
from rlab_core.report.terminal import ProgressPrinter
from rlab_core.tree import Tree


class LiveProgress(ProgressPrinter):
    """Run events as lines, plus a live status footer when the console is a terminal.

    Use it as a context manager around the run so the footer is removed however the run
    ends. Budgets are optional; ``prior`` is the tree of a run being resumed.
    """

    def __init__(
        self,
        console: Console,
        *,
        iterations_max: int | None = None,
        time_budget_s: float | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        prior: Tree | None = None,
        elapsed_before_s: float = 0.0,
    ) -> None:
        super().__init__(console)
        self.iterations_max = iterations_max
        self.time_budget_s = time_budget_s
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.elapsed_before_s = elapsed_before_s
        self.started = time.monotonic()
        self.iterations = 0
        self.tokens = 0
        self.cost = 0.0
        self.metric = "score"
        #: what the run does between nodes, a key of :data:`PHASE_WORDS`
        self.phase = "preparing"
        #: seed replicates are running (the training-noise measurement's or the finalists')
        self.replicating = False
        #: nodes being evaluated now, by id (several with --workers)
        self.running: dict[str, dict[str, Any]] = {}
        self.live: Live | None = None
        #: the phase a resumed run goes back to: the search once a seed has finished
        self.resume_phase = "search" if prior is not None and prior.seeds() else "seeds"
        if prior is not None:
            self.higher = prior.higher_is_better
            self.iterations = prior.iterations_used()
            self.tokens = sum(n.usage.total_tokens for n in prior)
            self.cost = sum(n.usage.cost_usd for n in prior)
            best = prior.best()
            if best is not None and best.score is not None:
                self.best, self.best_id = best.score.primary, best.id
                self.best_se = best.score.standard_error
                self.metric = best.score.primary_metric

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LiveProgress:
        if self.console.is_terminal and not self.console.is_dumb_terminal:
            self.live = Live(
                self,
                console=self.console,
                refresh_per_second=4,
                transient=True,
                redirect_stderr=False,
            )
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the footer (idempotent)."""
        if self.live is not None:
            self.live.stop()
            self.live = None

    # ------------------------------------------------------------------ events

    def __call__(self, event: dict[str, Any]) -> None:
        # the footer's state first: printing the line below redraws the footer
        kind = event["type"]
        if kind == "run_started":
            self.metric = event.get("primary_metric", self.metric)
            self.higher = bool(event.get("higher_is_better", True))
            self.phase = "seeds"
        elif kind == "run_resumed":
            self.phase = self.resume_phase
        elif kind == "node_started":
            self.running[event["id"]] = {**event, "since": time.monotonic()}
            if event.get("kind") != NodeKind.SEED:
                self.phase = "search"
        elif kind == "node_abandoned":
            self.running.pop(event["id"], None)
        elif kind == "node_finished":
            node = event["node"]
            self.running.pop(node.get("id"), None)
            if node.get("kind") != NodeKind.SEED:
                self.iterations += 1
            usage = node.get("usage") or {}
            self.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
            self.cost += float(usage.get("cost_usd", 0.0))
        elif kind in ("replicates_started", "replicate_scored"):
            self.replicating = True
        elif kind == "seed_noise_measured":
            self.replicating = False
            self.phase = "search"
        elif kind == "finalists_chosen":
            self.replicating = False
            self.phase = "finishing"
        elif kind == "run_stopped":
            # the footer goes first: Live's last refresh then draws nothing, and the stop
            # line and the summary below it are never painted over
            self.phase = "stopped"
            self.running.clear()
            self.close()
        super().__call__(event)  # the plain lines; on a terminal Live prints them above the footer

    # ------------------------------------------------------------------ the footer

    def status_line(self) -> str:
        """Budget used and the best score, in one plain line."""
        parts = [
            f"iteration {self.iterations}"
            + (f"/{self.iterations_max}" if self.iterations_max else "")
        ]
        if self.best is not None:
            parts.append(
                f"best {self.metric} {format_score(self.best, self.best_se)} ({self.best_id})"
            )
        elapsed = self.elapsed_before_s + time.monotonic() - self.started
        parts.append(
            _clock(elapsed) + (f" of {_clock(self.time_budget_s)}" if self.time_budget_s else "")
        )
        if self.tokens or self.max_tokens:
            parts.append(
                f"{self.tokens:,} tokens" + (f" of {self.max_tokens:,}" if self.max_tokens else "")
            )
        if self.cost or self.max_cost:
            parts.append(
                f"${self.cost:.2f}" + (f" of ${self.max_cost:.2f}" if self.max_cost else "")
            )
        return "  ·  ".join(parts)

    def waiting_words(self) -> str:
        """What the run does while no node is being evaluated."""
        if self.replicating:
            return PHASE_WORDS["replicates"]
        if self.phase == "search" and self._budget_spent():
            return PHASE_WORDS["finishing"]
        return PHASE_WORDS[self.phase]

    def _budget_spent(self) -> bool:
        # no new hypothesis is asked for: what follows is the finalists' round and the report
        return self.iterations_max is not None and self.iterations >= self.iterations_max

    def __rich__(self) -> RenderableType:
        if self.phase == "stopped":
            return Text("")
        lines = []
        for c in list(self.running.values()):
            lines.append(
                Text.assemble(
                    ("evaluating ", "bold"),
                    (one_line(c["id"]), "bold cyan"),
                    f" ({one_line(c.get('kind', '?'))} ← {one_line(c.get('parent_id') or '-')}, "
                    f"{time.monotonic() - c['since']:.0f}s): ",
                    (one_line(c.get("hypothesis") or "(no hypothesis)"), ""),
                )
            )
        if not lines:
            lines.append(Text(self.waiting_words(), style="dim"))
        top = Table.grid(padding=(0, 1))
        for what in lines:
            what.no_wrap, what.overflow = True, "ellipsis"
            top.add_row(Spinner("dots", style="cyan"), what)
        bar = Table.grid(padding=(0, 1))
        if self.iterations_max:
            bar.add_row(
                ProgressBar(total=self.iterations_max, completed=self.iterations, width=24),
                Text(self.status_line(), style="dim"),
            )
        else:
            bar.add_row(Text(self.status_line(), style="dim"))
        return Group(top, bar)


#: the footer's words while no node is being evaluated, by phase
PHASE_WORDS = {
    "preparing": "preparing the task's data…",
    "seeds": "running the seeds…",
    "replicates": "running seed replicates…",
    "search": "waiting for the agent's next hypothesis…",
    "finishing": "finishing the run…",
    "stopped": "",
}


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
