"""The CLI coding agents: ``aider``, ``claude-code`` and ``codex``.

Each one only knows its tool's non-interactive command line, the variables it needs, how
to install it, and how to read a summary and the cost from what it prints; the scratch
copy, the timeout and turning the folder into a proposal are their base's,
:mod:`rlab_agents.cli_agent_base`.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field

from rlab_agents.cli_agent_base import TOOL_REQUEST, CLIAgent, CLIAgentConfig, ToolOutput
from rlab_agents.prompt import HYPOTHESIS_FILE, TASK_FILE
from rlab_core.api import AgentContext, Usage

# --------------------------------------------------------------------------- aider


class AiderConfig(CLIAgentConfig):
    """Options of the ``aider`` agent."""

    executable: str = Field(default="aider", description="Command name or path of aider.")
    env_allow: list[str] = Field(
        default=[
            "OPENAI_API_KEY",
            "OPENAI_API_BASE",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "DEEPSEEK_API_KEY",
            "OPENROUTER_API_KEY",
            "AIDER_*",
        ],
        description="Environment variables (names or globs) aider gets besides PATH, HOME "
        "and the locale: the key of the model's provider and aider's own settings.",
    )
    edit_format: str | None = Field(
        default=None,
        description="aider's --edit-format (diff, whole, udiff, ...); its default for the model when unset.",
    )


_TOKENS = re.compile(
    r"Tokens:\s*(?P<sent>[\d.]+)(?P<sk>[km]?)\s+sent.*?(?P<recv>[\d.]+)(?P<rk>[km]?)\s+received"
)
_CACHED = re.compile(r"(?P<n>[\d.]+)(?P<k>[km]?)\s+cache hit")
_COST = re.compile(r"Cost:\s*\$(?P<cost>[\d.]+)\s+message")


def _count(number: str, suffix: str) -> int:
    return round(float(number) * {"": 1, "k": 1_000, "m": 1_000_000}[suffix])


class AiderAgent(CLIAgent[AiderConfig]):
    """Runs ``aider --message-file RLAB_TASK.md`` on the editable files, without git."""

    agent_name = "aider"
    install = "uv tool install aider-chat"
    byproducts = (".aider*",)

    def command(self, context: AgentContext, workdir: Path, state_dir: Path) -> list[str]:
        options = self.config
        editable = sorted(
            path
            for path in context.parent_source
            if path not in (TASK_FILE, HYPOTHESIS_FILE)
            and any(fnmatch.fnmatch(path, pattern) for pattern in context.editable_files)
        )
        argv = [
            self.executable,
            "--message-file",
            TASK_FILE,
            "--yes-always",
            "--no-git",
            "--no-auto-commits",
            "--no-gitignore",
            "--no-pretty",
            "--no-stream",
            "--no-fancy-input",
            "--no-check-update",
            "--no-show-release-notes",
            "--no-show-model-warnings",
            "--no-analytics",
            "--no-restore-chat-history",
            "--no-detect-urls",
            "--no-suggest-shell-commands",
            "--chat-history-file",
            str(state_dir / "chat.md"),
            "--input-history-file",
            str(state_dir / "input.txt"),
        ]
        if options.model:
            argv += ["--model", options.model]
        if options.edit_format:
            argv += ["--edit-format", options.edit_format]
        return [*argv, *options.extra_args, *editable]

    def read_output(self, output: ToolOutput) -> tuple[str, Usage]:
        """aider's reply, and its ``Tokens: ... Cost: $x message`` lines summed."""
        usage = Usage()
        for line in output.stdout.splitlines():
            tokens = _TOKENS.search(line)
            if tokens:
                cached = _CACHED.search(line)
                cost = _COST.search(line)
                usage = usage + Usage(
                    input_tokens=_count(tokens["sent"], tokens["sk"]),
                    output_tokens=_count(tokens["recv"], tokens["rk"]),
                    cached_tokens=_count(cached["n"], cached["k"]) if cached else 0,
                    cost_usd=float(cost["cost"]) if cost else 0.0,
                )
        return output.stdout.strip(), usage


# --------------------------------------------------------------------------- claude code


class ClaudeCodeConfig(CLIAgentConfig):
    """Options of the ``claude-code`` agent."""

    executable: str = Field(default="claude", description="Command name or path of Claude Code.")
    env_allow: list[str] = Field(
        default=[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "CLAUDE_CODE_*",
            "CLAUDE_CONFIG_DIR",
        ],
        description="Environment variables (names or globs) Claude Code gets besides PATH, "
        "HOME and the locale; a login under HOME works without a key.",
    )
    permission_mode: Literal["acceptEdits", "bypassPermissions"] = Field(
        default="acceptEdits",
        description="--permission-mode: acceptEdits lets it edit files and asks (so refuses) "
        "anything else; bypassPermissions also lets it run commands.",
    )
    mcp: bool = Field(
        default=True,
        description="Give Claude Code rlab's MCP server (`rlab mcp`: knowledge search and this "
        "run's history) as a tool, when the run has knowledge on.",
    )


#: The MCP server's name in Claude Code's config; its tools are ``mcp__rlab__*``.
MCP_SERVER = "rlab"
#: The file, in the call's state folder, that holds the ``--mcp-config``.
MCP_CONFIG = "mcp.json"


def rlab_executable() -> str | None:
    """The ``rlab`` command of this environment (beside its Python, else on PATH)."""
    beside = Path(sys.executable).parent / "rlab"
    return str(beside) if beside.is_file() else shutil.which("rlab")


def mcp_config(context: AgentContext, rlab: str) -> dict:
    """Claude Code's ``--mcp-config``: one server, ``rlab mcp``, on the run's knowledge base.

    The server reads the same knowledge base file as the run and, with ``--run``, the run's
    own history (validation side only, as everywhere an agent looks).
    """
    digest = context.knowledge
    args = ["mcp"]
    env: dict[str, str] = {}
    if digest is not None and digest.run_folder:
        args += ["--run", digest.run_folder]
    if digest is not None and digest.store_path:
        env["RLAB_KNOWLEDGE"] = digest.store_path
    return {
        "mcpServers": {MCP_SERVER: {"type": "stdio", "command": rlab, "args": args, "env": env}}
    }


class ClaudeCodeAgent(CLIAgent[ClaudeCodeConfig]):
    """Runs ``claude -p`` in acceptEdits mode and reads its JSON result (text, tokens, cost)."""

    agent_name = "claude-code"
    install = "npm install -g @anthropic-ai/claude-code"
    byproducts = (".claude/*",)

    def has_rlab_tools(self, context: AgentContext) -> bool:
        """With knowledge on (no ``--no-kg``), ``mcp`` set and an ``rlab`` command to start."""
        return self.config.mcp and context.knowledge is not None and rlab_executable() is not None

    def command(self, context: AgentContext, workdir: Path, state_dir: Path) -> list[str]:
        options = self.config
        argv = [
            self.executable,
            "-p",
            TOOL_REQUEST,
            "--permission-mode",
            options.permission_mode,
            "--output-format",
            "json",
        ]
        rlab = rlab_executable()
        if self.has_rlab_tools(context) and rlab is not None:
            # outside the work folder, so the config never becomes part of the candidate
            path = state_dir / MCP_CONFIG
            path.write_text(json.dumps(mcp_config(context, rlab), indent=1))
            # acceptEdits asks before any other tool: rlab's read-only tools are allowed by name
            argv += ["--mcp-config", str(path), "--allowedTools", f"mcp__{MCP_SERVER}"]
        if options.model:
            argv += ["--model", options.model]
        return [*argv, *options.extra_args]

    def read_output(self, output: ToolOutput) -> tuple[str, Usage]:
        """The ``result`` text and usage of ``--output-format json`` (plain text if not JSON)."""
        try:
            data = json.loads(output.stdout)
        except ValueError:
            return output.stdout.strip(), Usage()
        if not isinstance(data, dict):
            return output.stdout.strip(), Usage()
        counts = data.get("usage") or {}
        cached = int(counts.get("cache_read_input_tokens") or 0)
        usage = Usage(
            input_tokens=int(counts.get("input_tokens") or 0)
            + int(counts.get("cache_creation_input_tokens") or 0)
            + cached,
            output_tokens=int(counts.get("output_tokens") or 0),
            cached_tokens=cached,
            cost_usd=float(data.get("total_cost_usd") or 0.0),
        )
        return str(data.get("result") or ""), usage


# --------------------------------------------------------------------------- codex


class CodexConfig(CLIAgentConfig):
    """Options of the ``codex`` agent."""

    executable: str = Field(default="codex", description="Command name or path of the Codex CLI.")
    env_allow: list[str] = Field(
        default=["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_*"],
        description="Environment variables (names or globs) Codex gets besides PATH, HOME "
        "and the locale; a login under HOME (or CODEX_HOME) works without a key.",
    )


class CodexAgent(CLIAgent[CodexConfig]):
    """Runs ``codex exec`` with a workspace-write sandbox outside git; stdout is its summary."""

    agent_name = "codex"
    install = "npm install -g @openai/codex"

    def command(self, context: AgentContext, workdir: Path, state_dir: Path) -> list[str]:
        argv = [self.executable, "exec", "--sandbox", "workspace-write", "--skip-git-repo-check"]
        if self.config.model:
            argv += ["--model", self.config.model]
        return [*argv, *self.config.extra_args, TOOL_REQUEST]
