"""The ``ranked-playbook`` agent: a task's playbook moves in rank order, for benchmark tests.

Running a benchmark's moves through the real loop needs an agent that plays them. This one
follows the playbook rules (:func:`rlab_core.api.applicable_moves`: lowest rank first,
``requires`` honoured, moves whose anchors are absent skipped, a failed move repaired with
its declared ``fix``) with no options and no randomness, so a benchmark's tests need no
agents plugin (rlab-agents' ``playbook`` agent adds exploration on top of the same rules).

Register this module as a plugin (``host.register(rlab_core.testing.playbook,
name="ranked-playbook")`` or ``RLAB_PLUGIN_MODULES=rlab_core.testing.playbook``) and run
with ``agent="ranked-playbook"``.
"""

from __future__ import annotations

from rlab_core.api import (
    Agent,
    AgentContext,
    AgentInfo,
    EmptyConfig,
    NothingToPropose,
    Proposal,
    RepairContext,
    applicable_moves,
    fix_proposal,
    hookimpl,
    move_proposal,
)


class RankedPlaybookAgent(Agent[EmptyConfig]):
    """Proposes the best-ranked untried move that applies to the parent; repairs with its fix."""

    def propose(self, context: AgentContext) -> Proposal:
        usable = applicable_moves(context)
        if not usable:
            raise NothingToPropose(f"no untried playbook move applies to {context.parent.id}")
        return move_proposal(usable[0])

    def repair(self, context: RepairContext) -> Proposal | None:
        return fix_proposal(context)


def _load() -> type[RankedPlaybookAgent]:
    return RankedPlaybookAgent


@hookimpl
def rlab_register_agents():
    return [
        AgentInfo(
            "ranked-playbook",
            "Plays the task's playbook moves in rank order (tests).",
            _load,
            EmptyConfig,
            default_priority=-1,
        )
    ]
