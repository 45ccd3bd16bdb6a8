"""Why a search stops, besides the strategy's own reasons: an error, an agent that keeps
failing, nothing left to expand."""

from __future__ import annotations

from rlab_core.errors import AgentAuthError
from rlab_core.records import FailureStage
from rlab_core.tree import Tree

#: A run whose agent keeps failing stops instead of burning its budget on nothing.
MAX_AGENT_FAILURES_IN_A_ROW = 5
NOTHING_LEFT = "nothing left to expand: the agent has no untried change for any evaluated node"


def stop_reason_of_error(error: BaseException) -> str:
    """The journaled stop reason of a search that ended by an exception."""
    if isinstance(error, AgentAuthError):
        return f"agent credentials refused: {error}"
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
