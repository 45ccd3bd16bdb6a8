"""Live progress of ``rlab run``: a status bar on a terminal, plain lines everywhere else.

:class:`LiveProgress` prints the same per-node lines as :class:`ProgressPrinter`; when the
console is a terminal it also keeps a live footer under them: the node being evaluated and
its hypothesis, iterations used of the budget, the run's best score so far (the last node
accepted, with its standard error), elapsed time, tokens and cost. Piped into a file or a CI
log it degrades to the plain lines alone.
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
        #: seed replicates are running (the training-noise measurement's or the finalists')
        self.replicating = False
        #: nodes being evaluated now, by id (several with --workers)
        self.running: dict[str, dict[str, Any]] = {}
        self.live: Live | None = None
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
        elif kind == "node_started":
            self.running[event["id"]] = {**event, "since": time.monotonic()}
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
        elif kind == "replicate_scored":
            self.replicating = True
        elif kind in ("finalists_chosen", "seed_noise_measured"):
            self.replicating = False
        super().__call__(event)  # the plain lines; on a terminal Live prints them above the footer
        if kind == "run_stopped":
            self.running.clear()
            self.close()

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

    def __rich__(self) -> RenderableType:
        lines = []
        for c in list(self.running.values()):
            lines.append(
                Text.assemble(
                    ("evaluating ", "bold"),
                    (c["id"], "bold cyan"),
                    f" ({c.get('kind', '?')} ← {c.get('parent_id') or '-'}, "
                    f"{time.monotonic() - c['since']:.0f}s): ",
                    (" ".join(str(c.get("hypothesis") or "(no hypothesis)").split()), ""),
                )
            )
        if not lines and self.replicating:
            lines.append(Text("running seed replicates…", style="dim"))
        if not lines:
            lines.append(Text("waiting for the agent's next hypothesis…", style="dim"))
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


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
