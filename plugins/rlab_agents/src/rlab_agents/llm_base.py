"""What the OpenAI and Anthropic agents share: options, the conversation, retries, usage.

One proposal is one short conversation. The prompt (:mod:`rlab_agents.prompt`) goes out; the
reply is parsed against the contract (:mod:`rlab_agents.reply`). A malformed reply gets one
retry that quotes the validation error; edits that do not apply to the parent's source get
one retry that quotes the edit error. Whatever is still unusable raises
:class:`~rlab_core.errors.AgentError` (the node fails, the run goes on). Tokens and cost are
summed over every call of the conversation.

Where the parent declares tunable parameters, the model may answer ``{"tune": N}`` instead of
a code change: the agent then returns the first trial of a tuning burst of N trials
(:func:`rlab_core.tuning.study.tuning_proposal`), and the burst's further trials without
calling the model again (:func:`rlab_core.tuning.policy.pending_burst`).

Transport-level retries (rate limits, server errors, timeouts) are the SDKs' own: they back
off exponentially and honour ``retry-after``. Refused credentials raise
:class:`~rlab_core.errors.AgentAuthError` with one sentence naming the environment variable.
The key is read from the environment only, handed to the SDK client and to nothing else.
"""

from __future__ import annotations

import logging
import os
from abc import abstractmethod
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rlab_agents.pricing import ModelPrice, PriceTable
from rlab_agents.prompt import SYSTEM, build_prompt, build_repair_prompt
from rlab_agents.reply import AgentReply, ReplyError, TuneRequest, parse_reply
from rlab_core.api import (
    Agent,
    AgentAuthError,
    AgentContext,
    AgentError,
    EditError,
    FailureStage,
    NothingToPropose,
    Proposal,
    RepairContext,
    Usage,
    build_child,
    pending_burst,
    tuning_proposal,
)

log = logging.getLogger(__name__)

#: Sent as the key when ``api_key_env`` is null, so the SDKs never look for one elsewhere.
NO_KEY = "no-key-needed"

REPLY_RETRY = (
    "Your reply could not be used: {error}\n"
    "Reply again with ONE JSON object exactly as the output contract above says, and nothing else."
)
EDIT_RETRY = (
    "Your edits could not be applied to the parent's source: {error}\n"
    "Copy every anchor exactly from the current file; it must occur there exactly once, so "
    "include neighbouring lines when it is short. Reply again with the whole JSON object "
    "(hypothesis, rationale, edits)."
)


class LLMOptions(BaseModel):
    """Options every LLM agent takes (each agent sets its own defaults)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Model name as the server knows it.")
    base_url: str | None = Field(
        default=None,
        description="API base URL (a vLLM, Ollama, LiteLLM or other compatible server); "
        "default: the provider's own endpoint.",
    )
    api_key_env: str | None = Field(
        description="Environment variable that holds the API key (keys are never options); "
        "null for a server that needs no key."
    )
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="Sampling temperature; default: the model's own."
    )
    max_output_tokens: int | None = Field(
        default=None, gt=0, description="Most tokens one reply may use (reasoning included)."
    )
    timeout_s: float = Field(default=600.0, gt=0, description="Seconds one API request may take.")
    max_retries: int = Field(
        default=4,
        ge=0,
        description="Retries of one request on rate limits, server errors and timeouts "
        "(exponential backoff, honouring retry-after).",
    )
    tree_budget_chars: int = Field(
        default=40_000,
        ge=1_000,
        description="Characters of the solution tree in the prompt; the oldest nodes are "
        "compacted first when it grows past this.",
    )
    source_budget_chars: int = Field(
        default=60_000, ge=1_000, description="Characters of the parent's source in the prompt."
    )
    prices: dict[str, ModelPrice] = Field(
        default={},  # pydantic copies it per instance; a literal shows in `rlab list agents`
        description="Price overrides in USD per 1M tokens, {MODEL: {input, output, "
        "cached_input}}; unknown models cost 0 (with a warning).",
    )


@dataclass
class Completion:
    """One model call: the reply text and what it used (cost not yet priced)."""

    text: str
    usage: Usage
    cache_write_tokens: int = 0


Turn = tuple[Literal["user", "assistant"], str]


class LLMAgentError(AgentError):
    """An :class:`AgentError` that carries the tokens the failed conversation used."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


def read_api_key(env_name: str | None, agent: str) -> str:
    """The key from the environment; a missing one is an :class:`AgentAuthError`."""
    if not env_name:
        return NO_KEY
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise AgentAuthError(
            f"The {agent} agent needs an API key in the environment variable {env_name}; set "
            f"it (rlab reads keys from the environment only), or pass -o agent.api_key_env=null "
            f"for a server that needs no key."
        )
    return value


#: The options model of an LLM agent.
LLMOptionsT = TypeVar("LLMOptionsT", bound=LLMOptions)


class LLMAgent(Agent[LLMOptionsT]):
    """Base of the API agents; a subclass imports its SDK and makes one call."""

    #: Name in messages ("OpenAI", "Anthropic").
    provider = "LLM"
    #: The agent's registered name, for messages.
    agent_name = "llm"
    #: The SDK's client class, by name (``OpenAI``, ``Anthropic``); both SDKs take the same
    #: ``api_key``, ``timeout``, ``max_retries`` and ``base_url`` arguments.
    client_class: ClassVar[str] = ""
    #: The SDK clients are thread-safe and each call keeps its own conversation, so with
    #: ``--workers N`` several proposals are in flight at once.
    concurrent_calls = True

    def __init__(self, config: LLMOptionsT) -> None:
        super().__init__(config)
        self.prices = PriceTable(config.prices)
        self._key = read_api_key(config.api_key_env, self.agent_name)
        self._sdk = self._import_sdk()
        self._client: Any = self._make_client(self._key)

    # ------------------------------------------------------------------ subclass hooks

    @abstractmethod
    def _import_sdk(self) -> ModuleType:
        """Import and return the SDK module (kept out of plugin registration)."""

    def _make_client(self, api_key: str) -> Any:
        """The SDK client, with base URL, timeout and retries from the options."""
        kwargs: dict[str, Any] = {
            "api_key": api_key,
            "timeout": self.config.timeout_s,
            "max_retries": self.config.max_retries,
        }
        if self.config.base_url:
            kwargs["base_url"] = self.config.base_url
        return getattr(self._sdk, self.client_class)(**kwargs)

    @abstractmethod
    def _call(self, system: str, turns: list[Turn]) -> Completion:
        """One request; SDK exceptions pass through (they are mapped by :meth:`_complete`)."""

    # ------------------------------------------------------------------ the agent contract

    def propose(self, context: AgentContext) -> Proposal:
        """Ask the model for one hypothesis and edits that apply to the parent, or for a
        tuning burst; a burst's later trials are proposed without asking the model."""
        if pending_burst(context) > 0:
            try:
                trial = tuning_proposal(context)
            except NothingToPropose:
                pass  # the study's space is spent: the model decides what comes next
            else:
                note = (
                    f"[{self.agent_name}: a trial of the tuning burst the model asked for; no call]"
                )
                return trial.model_copy(update={"rationale": _joined(trial.rationale, note)})
        prompt = build_prompt(
            context,
            tree_budget=self.config.tree_budget_chars,
            source_budget=self.config.source_budget_chars,
        )
        return self._converse(context, prompt)

    def repair(self, context: RepairContext) -> Proposal | None:
        """Ask the model to fix the failed node, given its hypothesis and error tail."""
        prompt = build_repair_prompt(
            context,
            tree_budget=max(1_000, self.config.tree_budget_chars // 2),
            source_budget=self.config.source_budget_chars,
        )
        return self._converse(context, prompt)

    def close(self) -> None:
        """Close the SDK client's connections."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()

    # ------------------------------------------------------------------ the conversation

    def _converse(self, context: AgentContext, prompt: str) -> Proposal:
        turns: list[Turn] = [("user", prompt)]
        total = Usage()
        retries = {"reply": 1, "edit": 1}
        notes: list[str] = []
        while True:
            try:
                completion = self._complete(SYSTEM, turns)
            except AgentError as exc:
                raise LLMAgentError(str(exc), total) from None
            total = total + self._priced(completion)
            try:
                reply = parse_reply(
                    completion.text, allow_tune=not isinstance(context, RepairContext)
                )
                if isinstance(reply, TuneRequest):
                    proposal = self._burst(context, reply)
                else:
                    self._check_edits(context, reply)
            except (ReplyError, EditError) as exc:
                kind = "reply" if isinstance(exc, ReplyError) else "edit"
                error = self._scrub(str(exc))
                if retries[kind] == 0:
                    what = "reply was unusable" if kind == "reply" else "edits did not apply"
                    raise LLMAgentError(
                        f"the model's {what} after one retry: {error}", total
                    ) from None
                retries[kind] -= 1
                notes.append(f"retried after: {error[:160]}")
                template = REPLY_RETRY if kind == "reply" else EDIT_RETRY
                turns += [("assistant", completion.text), ("user", template.format(error=error))]
                continue
            calls = len(turns) // 2 + 1
            note = f"[{self.agent_name} {self.config.model}, {calls} call(s)"
            note += ("; " + "; ".join(notes) + "]") if notes else "]"
            if isinstance(reply, TuneRequest):
                rationale = _joined(reply.rationale, proposal.rationale, note)
                return proposal.model_copy(update={"rationale": rationale, "usage": total})
            rationale = f"{reply.rationale}\n\n{note}" if reply.rationale else note
            return Proposal(
                hypothesis=reply.hypothesis, rationale=rationale, edits=reply.edits, usage=total
            )

    @staticmethod
    def _burst(context: AgentContext, request: TuneRequest) -> Proposal:
        """The first trial of the burst the model asked for; a :class:`ReplyError` (retried
        like a malformed reply) when the parent has nothing to tune."""
        try:
            return tuning_proposal(context, burst=request.tune)
        except NothingToPropose as exc:
            raise ReplyError(
                f"a tuning burst cannot run on {context.parent.id}: {exc}; reply with a code "
                "change instead"
            ) from None

    @staticmethod
    def _check_edits(context: AgentContext, reply: AgentReply) -> None:
        """Raise :class:`EditError` when the edits would not make a child, as the loop builds it.

        Only edit failures are retried (a wrong anchor, a file outside the boundary, no
        change); a guard refusal is a result the loop records and the next context shows.
        """
        proposal = Proposal(hypothesis=reply.hypothesis, edits=reply.edits)
        child = build_child(context.parent_source, proposal, context.editable_files)
        if child.failure is not None and child.failure.stage == FailureStage.EDIT:
            raise EditError(child.failure.message)

    def _priced(self, completion: Completion) -> Usage:
        usage = completion.usage
        cost = self.prices.cost(
            self.config.model, usage, cache_write_tokens=completion.cache_write_tokens
        )
        log.debug(
            "%s call: %d input (%d cached), %d output tokens, $%.6f",
            self.agent_name,
            usage.input_tokens,
            usage.cached_tokens,
            usage.output_tokens,
            cost,
        )
        return usage.model_copy(update={"cost_usd": cost})

    # ------------------------------------------------------------------ transport errors

    def _complete(self, system: str, turns: list[Turn]) -> Completion:
        """One call, with SDK errors turned into :class:`AgentError` / :class:`AgentAuthError`."""
        try:
            return self._call(system, turns)
        except self._sdk.APIError as exc:
            raise self._map_error(exc) from None

    def _endpoint(self) -> str:
        return self.config.base_url or f"the {self.provider} default endpoint"

    def _map_error(self, exc: Exception) -> Exception:
        sdk, options = self._sdk, self.config
        status = getattr(exc, "status_code", None)
        if isinstance(exc, (sdk.AuthenticationError, sdk.PermissionDeniedError)):
            if options.api_key_env:
                return AgentAuthError(
                    f"The {self.provider} API at {self._endpoint()} refused the key in "
                    f"{options.api_key_env} (HTTP {status}); set {options.api_key_env} to a "
                    "valid key with access to this model and run again."
                )
            return AgentAuthError(
                f"The {self.provider} API at {self._endpoint()} refused the request without a "
                f"key (HTTP {status}); set agent.api_key_env to the variable that holds one."
            )
        detail = self._scrub(str(getattr(exc, "message", None) or exc))[:400]
        if isinstance(exc, sdk.APITimeoutError):
            return AgentError(
                f"The {self.provider} API at {self._endpoint()} did not answer within "
                f"{options.timeout_s:g}s ({options.max_retries} retries); raise agent.timeout_s "
                "or try later."
            )
        if isinstance(exc, sdk.APIConnectionError):
            return AgentError(
                f"Cannot reach the {self.provider} API at {self._endpoint()} "
                f"({options.max_retries} retries): {detail}"
            )
        if isinstance(exc, sdk.RateLimitError):
            return AgentError(
                f"The {self.provider} API is still rate limiting after {options.max_retries} "
                f"retries with backoff (HTTP 429): {detail}"
            )
        if status is not None:
            return AgentError(f"The {self.provider} API answered HTTP {status}: {detail}")
        return AgentError(f"The {self.provider} API call failed: {detail}")

    def _scrub(self, text: str) -> str:
        """``text`` with the API key masked, should a server or SDK echo it."""
        if self._key and self._key != NO_KEY and len(self._key) >= 4:
            text = text.replace(self._key, "***")
        return text


def _joined(*parts: str) -> str:
    """The non-empty ``parts`` as paragraphs."""
    return "\n\n".join(part for part in parts if part)
