"""The ``anthropic`` agent: the official Anthropic SDK and its Messages API.

``base_url`` points it at a proxy or gateway (LiteLLM, a corporate gateway) that speaks the
Messages API. The SDK is imported when the agent is constructed, never at registration.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

from pydantic import Field

from rlab_agents.llm_base import Completion, LLMAgent, LLMOptions, Turn
from rlab_core.api import Usage


class AnthropicConfig(LLMOptions):
    """Options of the ``anthropic`` agent."""

    model: str = Field(default="claude-sonnet-4-5", description="Model name as the API knows it.")
    base_url: str | None = Field(
        default=None,
        description="API base URL (a LiteLLM proxy or gateway speaking the Messages API); "
        "default: https://api.anthropic.com.",
    )
    api_key_env: str | None = Field(
        default="ANTHROPIC_API_KEY",
        description="Environment variable that holds the API key (keys are never options); "
        "null for a gateway that needs no key.",
    )
    max_output_tokens: int = Field(
        default=16_000, gt=0, description="Most tokens one reply may use (max_tokens)."
    )
    reasoning_effort: Literal["low", "medium", "high", "xhigh", "max"] | None = Field(
        default=None,
        description="Effort (output_config.effort) for models that support it; default: the "
        "model's own.",
    )
    prompt_caching: bool = Field(
        default=True,
        description="Mark the prompt cacheable, so retries within one proposal read it from "
        "the cache.",
    )


class AnthropicAgent(LLMAgent[AnthropicConfig]):
    """Proposes hypotheses and edits with a Claude model."""

    provider = "Anthropic"
    agent_name = "anthropic"
    client_class = "Anthropic"

    def _import_sdk(self) -> ModuleType:
        import anthropic

        return anthropic

    def _call(self, system: str, turns: list[Turn]) -> Completion:
        options = self.config
        messages: list[dict[str, Any]] = []
        for index, (role, text) in enumerate(turns):
            if index == 0 and options.prompt_caching:
                block = {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
                messages.append({"role": role, "content": [block]})
            else:
                messages.append({"role": role, "content": text})
        # sent as body fields so the request is the same whichever SDK version is installed
        body: dict[str, Any] = {}
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.reasoning_effort is not None:
            body["output_config"] = {"effort": options.reasoning_effort}
        message = self._client.messages.create(
            model=options.model,
            max_tokens=options.max_output_tokens,
            system=system,
            messages=messages,
            **({"extra_body": body} if body else {}),
        )
        text = "".join(
            getattr(block, "text", "") or ""
            for block in (message.content or [])
            if getattr(block, "type", None) == "text"
        )
        usage = message.usage
        cached = (getattr(usage, "cache_read_input_tokens", 0) or 0) if usage else 0
        written = (getattr(usage, "cache_creation_input_tokens", 0) or 0) if usage else 0
        uncached = (usage.input_tokens or 0) if usage else 0
        return Completion(
            text=text,
            # Anthropic counts cache reads and writes apart from input_tokens; rlab's input
            # tokens are all of them, cached ones included, as OpenAI counts them
            usage=Usage(
                input_tokens=uncached + cached + written,
                output_tokens=(usage.output_tokens or 0) if usage else 0,
                cached_tokens=cached,
            ),
            cache_write_tokens=written,
        )
