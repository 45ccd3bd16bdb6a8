"""The agent context a node was proposed with, kept as ``nodes/<id>/context.json``.

What is kept is what explains the proposal without repeating the run folder: the parent,
the step and stage, the budget used, the playbook's moves in the order offered, the ids of
the nodes the agent saw, a repair's error, and the knowledge digest with its rendered
"What worked before" section. The parent's source and the whole tree are left out (the
run folder and the journal hold them). ``rlab show RUN --context NODE`` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlab_core.agent_context import AgentContext, RepairContext
from rlab_core.recorder import write_atomically

#: The file, in a node's folder, that holds the context the node was proposed with.
CONTEXT_NAME = "context.json"
_LEFT_OUT = {"parent_source", "tree", "problem", "playbook", "knowledge"}


def context_record(context: AgentContext) -> dict[str, Any]:
    """The kept part of ``context``, JSON-ready."""
    record = context.model_dump(mode="json", exclude=_LEFT_OUT)
    record["call"] = "repair" if isinstance(context, RepairContext) else "propose"
    record["parent_files"] = sorted(context.parent_source)
    record["tree_ids"] = [n.id for n in context.tree]
    record["playbook"] = [m.id for m in context.playbook]
    digest = context.knowledge
    record["knowledge"] = None if digest is None else digest.model_dump(mode="json")
    record["knowledge_text"] = None if digest is None else digest.render()
    return record


def write_context(node_dir: Path, record: dict[str, Any]) -> None:
    """Write a :func:`context_record` as ``context.json`` into ``node_dir`` (which exists)."""
    text = json.dumps(record, indent=1, sort_keys=True)
    write_atomically(node_dir / CONTEXT_NAME, text + "\n")


def read_context(node_dir: Path) -> dict[str, Any] | None:
    """The kept context of a node, or None when it has none (a seed, an older run)."""
    path = node_dir / CONTEXT_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # torn by a crash mid-write: as good as absent
    return data if isinstance(data, dict) else None


def render_context(record: dict[str, Any]) -> str:
    """The kept context as text: the facts, then the knowledge section as the agent saw it."""
    parent = record.get("parent") or {}
    progress = record.get("progress") or {}
    lines = [
        f"{record.get('call', 'propose')} call on {record.get('task')} "
        f"(step {record.get('step')}, stage {record.get('stage')}, seed {record.get('seed')})",
        f"parent: {parent.get('id')} — {parent.get('hypothesis', '')}",
        f"parent score: {parent.get('primary')} ({parent.get('verdict') or 'no verdict'})",
        f"budget used: {progress.get('iterations_used')} of "
        f"{progress.get('iterations_max') or 'unlimited'} iterations",
        f"nodes seen: {', '.join(record.get('tree_ids') or []) or 'none'}",
    ]
    if record.get("playbook"):
        lines.append(f"playbook moves: {', '.join(record['playbook'])}")
    if record.get("call") == "repair":
        lines.append(f"repairing (attempt {record.get('attempt')}): {record.get('error', '')}")
    if record.get("knowledge") is None:
        lines += ["", "knowledge: switched off for this run (--no-kg)"]
    else:
        text = record.get("knowledge_text") or "knowledge: nothing relevant from earlier runs yet"
        lines += ["", text]
    return "\n".join(lines)
