"""Why a search stops, besides the strategy's own reasons: an error (the run's storage
among them), no evaluated seed, an agent that keeps failing, nothing left to expand."""

from __future__ import annotations

import logging

from rlab_core.errors import AgentAuthError, RlabUserError, StorageFullError, storage_errno
from rlab_core.records import FailureStage
from rlab_core.tree import Tree

log = logging.getLogger(__name__)

#: A run whose agent keeps failing stops instead of burning its budget on nothing.
MAX_AGENT_FAILURES_IN_A_ROW = 5
NOTHING_LEFT = "nothing left to expand: the agent has no untried change for any evaluated node"
NO_SEED_RAN = "no seed candidate ran successfully"
#: Longest piece of a candidate's failure message a stop reason quotes.
QUOTED_FAILURE_CHARS = 300


def stop_reason_of_error(error: BaseException) -> str:
    """The journaled stop reason of a search that ended by an exception."""
    if isinstance(error, AgentAuthError):
        return f"agent credentials refused: {error}"
    if isinstance(error, StorageFullError) or storage_errno(error) is not None:
        return f"the run's storage failed: {error}"
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (Ctrl-C); continue with `rlab resume`"
    return f"stopped by an error: {type(error).__name__}: {error}"


def failing_agent_reason(view: Tree) -> str | None:
    """Stop when the agent failed the last :data:`MAX_AGENT_FAILURES_IN_A_ROW` times."""
    recent = list(view)[-MAX_AGENT_FAILURES_IN_A_ROW:]
    agent_failures = [
        n.failure for n in recent if n.failure is not None and n.failure.stage == FailureStage.AGENT
    ]
    if len(agent_failures) == MAX_AGENT_FAILURES_IN_A_ROW:
        return (
            f"the agent failed {MAX_AGENT_FAILURES_IN_A_ROW} times in a row "
            f"(last: {agent_failures[-1].message[:200]}); check its backend and options"
        )
    return None


def no_seed_reason(view: Tree) -> str | None:
    """Stop when no seed was evaluated; the reason quotes the first seed's failure."""
    if view.evaluated():
        return None
    failed = sorted(((n.id, n.failure) for n in view.seeds() if n.failure), key=lambda t: t[0])
    if not failed:
        return NO_SEED_RAN
    first, failure = failed[0]
    return (
        f"{NO_SEED_RAN}; the first, {first}, failed at {failure.stage}: {quoted(failure.message)}"
    )


def tree_stop_reason(view: Tree) -> str | None:
    """The stop reasons read from the tree alone: no evaluated seed, a failing agent."""
    return no_seed_reason(view) or failing_agent_reason(view)


def quoted(text: str, limit: int = QUOTED_FAILURE_CHARS) -> str:
    """A candidate's text for a one-line reason: control characters escaped, bounded."""
    flat = "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def log_unjournaled_stop(error: Exception) -> None:
    """Say that why the search stopped could not be journaled.

    A storage failure (a :class:`~rlab_core.errors.RlabUserError`, the disk still full) is
    one warning line; anything else is a bug and keeps its traceback.
    """
    full = isinstance(error, RlabUserError)
    level = logging.WARNING if full else logging.ERROR
    log.log(level, "could not journal why the search stopped: %s", error, exc_info=not full)
