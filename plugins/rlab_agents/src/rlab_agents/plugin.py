"""Registers this package's agents."""

from __future__ import annotations

from rlab_core.api import AgentInfo, hookimpl


def _playbook():
    from rlab_agents.playbook import PlaybookAgent

    return PlaybookAgent


def _openai():
    from rlab_agents.openai_agent import OpenAIAgent

    return OpenAIAgent


def _anthropic():
    from rlab_agents.anthropic_agent import AnthropicAgent

    return AnthropicAgent


def _aider():
    from rlab_agents.cli_agents import AiderAgent

    return AiderAgent


def _claude_code():
    from rlab_agents.cli_agents import ClaudeCodeAgent

    return ClaudeCodeAgent


def _codex():
    from rlab_agents.cli_agents import CodexAgent

    return CodexAgent


@hookimpl
def rlab_register_agents():
    from rlab_agents.anthropic_agent import AnthropicConfig
    from rlab_agents.cli_agents import AiderConfig, ClaudeCodeConfig, CodexConfig
    from rlab_agents.openai_agent import OpenAIConfig
    from rlab_agents.playbook import PlaybookConfig

    return [
        AgentInfo(
            name="playbook",
            summary="Offline and deterministic: applies the task's prepared moves; no key, no network.",
            load=_playbook,
            config=PlaybookConfig,
            default_priority=100,
        ),
        AgentInfo(
            name="openai",
            summary="OpenAI models, or any OpenAI-compatible server via base_url (vLLM, Ollama, "
            "LiteLLM); key from $OPENAI_API_KEY.",
            load=_openai,
            config=OpenAIConfig,
            default_priority=10,
        ),
        AgentInfo(
            name="anthropic",
            summary="Claude models through the Anthropic Messages API; key from $ANTHROPIC_API_KEY.",
            load=_anthropic,
            config=AnthropicConfig,
            default_priority=10,
        ),
        AgentInfo(
            name="aider",
            summary="Runs the aider CLI in a scratch copy of the parent; needs `aider` and a "
            "model key (e.g. $OPENAI_API_KEY).",
            load=_aider,
            config=AiderConfig,
            default_priority=5,
        ),
        AgentInfo(
            name="claude-code",
            summary="Runs Claude Code (`claude -p`) in a scratch copy of the parent; needs "
            "`claude` and a login or $ANTHROPIC_API_KEY.",
            load=_claude_code,
            config=ClaudeCodeConfig,
            default_priority=5,
        ),
        AgentInfo(
            name="codex",
            summary="Runs the Codex CLI (`codex exec`) in a scratch copy of the parent; needs "
            "`codex` and a login or $OPENAI_API_KEY.",
            load=_codex,
            config=CodexConfig,
            default_priority=5,
        ),
    ]
