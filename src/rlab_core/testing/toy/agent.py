"""A scripted agent: proposes the entries of its script in order, repairs with their fixes."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.api import (
    Agent,
    AgentAuthError,
    AgentContext,
    AgentError,
    Edit,
    NodeKind,
    NothingToPropose,
    Proposal,
    RepairContext,
    Usage,
)


class ScriptedOptions(BaseModel):
    """Options of the ``scripted`` agent."""

    model_config = ConfigDict(extra="forbid")

    script: list[dict[str, Any]] = Field(
        default_factory=list, description="Steps: hypothesis, edits, fix, tokens."
    )
    concurrent: bool = Field(default=False, description="Allow proposals from several threads.")
    think_s: float = Field(default=0.0, description="Seconds each proposal takes.")


class ScriptedAgent(Agent[ScriptedOptions]):
    """Step k of the script answers the k-th propose call of the run (counted from the tree).

    A step is a dict: ``hypothesis``, ``edits`` (dicts of :class:`Edit`), optionally
    ``files`` (whole files), ``fix`` (edits its repair applies), ``tokens`` and ``cost``
    (reported usage), ``auth_error`` or ``agent_error`` (raise that error instead).
    """

    #: (start, end) of every propose call, for the parallel tests
    calls: ClassVar[list[tuple[float, float]]] = []

    def __init__(self, config: ScriptedOptions) -> None:
        super().__init__(config)
        self.script: list[dict[str, Any]] = config.script
        self.concurrent_calls = config.concurrent
        self.think_s = config.think_s

    def propose(self, context: AgentContext) -> Proposal:
        start = time.time()
        try:
            time.sleep(self.think_s)
            return self._step(context)
        finally:
            ScriptedAgent.calls.append((start, time.time()))

    def _step(self, context: AgentContext) -> Proposal:
        made = [n for n in context.tree if n.kind not in (NodeKind.SEED, NodeKind.DEBUG)]
        if len(made) >= len(self.script):
            raise NothingToPropose("the script is finished")
        step = self.script[len(made)]
        if step.get("auth_error"):
            raise AgentAuthError(step["auth_error"])
        if step.get("agent_error"):
            raise AgentError(step["agent_error"], usage=Usage(input_tokens=step.get("tokens", 0)))
        return Proposal(
            hypothesis=step["hypothesis"],
            edits=[Edit(**e) for e in step.get("edits", [])],
            files=step.get("files"),
            move_id=f"step{len(made)}",
            usage=Usage(
                input_tokens=step.get("tokens", 0),
                output_tokens=step.get("tokens", 0) // 2,
                cost_usd=step.get("cost", 0.0),
            ),
        )

    def repair(self, context: RepairContext) -> Proposal | None:
        move = context.parent.move_id or ""
        if move.endswith(":fix") or not move.startswith("step"):
            return None
        step = self.script[int(move[4:])]
        if "fix" not in step:
            return None
        return Proposal(
            hypothesis=f"repair: {step['hypothesis']}",
            edits=[Edit(**e) for e in step["fix"]],
            move_id=move + ":fix",
        )
