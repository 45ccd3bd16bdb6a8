"""The ``openai`` agent: the official OpenAI SDK, Chat Completions or Responses API.

With ``base_url`` it talks to any OpenAI-compatible server (vLLM, Ollama, LiteLLM, ...).
The SDK is imported when the agent is constructed, never at plugin registration.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

from pydantic import Field

from rlab_agents.llm_base import Completion, LLMAgent, LLMOptions, Turn
from rlab_core.api import Usage


class OpenAIConfig(LLMOptions):
    """Options of the ``openai`` agent."""

    model: str = Field(default="gpt-5-mini", description="Model name as the server knows it.")
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY",
        description="Environment variable that holds the API key (keys are never options); "
        "null for a server that needs no key.",
    )
    api: Literal["chat", "responses"] = Field(
        default="chat",
        description="chat: Chat Completions (what compatible servers speak); responses: the "
        "Responses API.",
    )
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = Field(
        default=None, description="Reasoning effort for reasoning models; default: the model's own."
    )


def _text_of_response(response: Any) -> str:
    """The text of a Responses API answer (every ``output_text`` part of its messages)."""
    text = getattr(response, "output_text", None)
    if isinstance(text, str):
        return text
    parts = []
    for item in getattr(response, "output", None) or []:
        if getattr(item, "type", None) == "message":
            for content in getattr(item, "content", None) or []:
                if getattr(content, "type", None) == "output_text":
                    parts.append(content.text or "")
    return "".join(parts)


class OpenAIAgent(LLMAgent[OpenAIConfig]):
    """Proposes hypotheses and edits with an OpenAI (or OpenAI-compatible) model."""

    provider = "OpenAI"
    agent_name = "openai"
    client_class = "OpenAI"

    def _import_sdk(self) -> ModuleType:
        import openai

        return openai

    def _call(self, system: str, turns: list[Turn]) -> Completion:
        options = self.config
        messages = [{"role": role, "content": text} for role, text in turns]
        if options.api == "responses":
            return self._responses(system, messages)
        extra: dict[str, Any] = {}
        if options.temperature is not None:
            extra["temperature"] = options.temperature
        if options.reasoning_effort is not None:
            extra["reasoning_effort"] = options.reasoning_effort
        if options.max_output_tokens is not None:
            extra["max_completion_tokens"] = options.max_output_tokens
        response = self._client.chat.completions.create(
            model=options.model,
            messages=[{"role": "system", "content": system}, *messages],
            **extra,
        )
        text = ""
        if response.choices:
            text = response.choices[0].message.content or ""
        usage = response.usage
        cached = 0
        if usage is not None and usage.prompt_tokens_details is not None:
            cached = usage.prompt_tokens_details.cached_tokens or 0
        return Completion(
            text=text,
            usage=Usage(
                input_tokens=(usage.prompt_tokens or 0) if usage else 0,
                output_tokens=(usage.completion_tokens or 0) if usage else 0,
                cached_tokens=cached,
            ),
        )

    def _responses(self, system: str, messages: list[dict[str, str]]) -> Completion:
        options = self.config
        extra: dict[str, Any] = {}
        if options.temperature is not None:
            extra["temperature"] = options.temperature
        if options.reasoning_effort is not None:
            extra["reasoning"] = {"effort": options.reasoning_effort}
        if options.max_output_tokens is not None:
            extra["max_output_tokens"] = options.max_output_tokens
        response = self._client.responses.create(
            model=options.model, instructions=system, input=messages, store=False, **extra
        )
        usage = response.usage
        cached = 0
        details = getattr(usage, "input_tokens_details", None) if usage else None
        if details is not None:
            cached = getattr(details, "cached_tokens", 0) or 0
        return Completion(
            text=_text_of_response(response),
            usage=Usage(
                input_tokens=(usage.input_tokens or 0) if usage else 0,
                output_tokens=(usage.output_tokens or 0) if usage else 0,
                cached_tokens=cached,
            ),
        )
