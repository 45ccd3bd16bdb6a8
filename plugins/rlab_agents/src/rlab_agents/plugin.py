"""Registers this package's agents."""

from __future__ import annotations

from rlab_core.hookspecs import AgentInfo, hookimpl


def _playbook():
    from rlab_agents.playbook import PlaybookAgent

    return PlaybookAgent


@hookimpl
def rlab_register_agents():
    from rlab_agents.playbook import PlaybookConfig

    return [
        AgentInfo(
            name="playbook",
            summary="Offline and deterministic: applies the task's prepared moves; no key, no network.",
            load=_playbook,
            config=PlaybookConfig,
            default_priority=100,
        )
    ]
