"""The base of the CLI coding agents: running an external tool on a copy of the parent.

Each call copies the parent's source into a fresh scratch folder, writes the instructions
(:func:`rlab_agents.prompt.build_instructions`) to ``RLAB_TASK.md`` and runs the tool there
non-interactively: standard input closed, an environment built from an allow-list, and its
own timeout that kills the tool's whole process group. Then the folder is read back. The
changed files become a :class:`~rlab_core.records.Proposal` of whole-file rewrites, so the
core computes the diff and refuses any change outside the task's editable files; a file the
tool wrote beside the scratch folder is handed on as ``../NAME`` and refused the same way.
The first paragraph of ``HYPOTHESIS.md`` is the hypothesis, the rest the rationale; without
it the tool's closing summary stands in.

A proposal cannot delete a file, so a file the tool deleted is kept and the rationale says
so. The tool runs with the user's rights: rlab sees what it changes in and beside the
scratch folder, not what it might write elsewhere.

The three agents (``aider``, ``claude-code``, ``codex``) live in :mod:`rlab_agents.cli_agents`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import signal
import subprocess
import tempfile
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rlab_agents.prompt import HYPOTHESIS_FILE, TASK_FILE, build_instructions
from rlab_core.api import (
    BASE_ENV_ALLOW,
    MAX_SOURCE_FILE_BYTES,
    Agent,
    AgentContext,
    AgentError,
    Proposal,
    RepairContext,
    RlabUserError,
    Usage,
    read_source,
    write_source,
)

#: Variables every tool gets when set: the candidates' base list plus the user's identity,
#: so a tool finds its own login and settings under HOME. No secret is among them.
TOOL_ENV_BASE = (
    *BASE_ENV_ALLOW,
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
#: How much of the tool's output an error message or a rationale keeps.
OUTPUT_TAIL_CHARS = 3000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_TITLE = re.compile(r"^#+\s*(hypothesis(\.md)?)?\s*:?\s*$", re.IGNORECASE)
_PREFIX = re.compile(r"^(#+\s*|[-*]\s+|\*\*)?(hypothesis\s*:\s*\**\s*)?", re.IGNORECASE)

#: The one-line request for tools that take their instruction as an argument.
TOOL_REQUEST = (
    f"Read {TASK_FILE} in the current folder and do what it asks: make one focused change "
    f"to the program in this folder and write its hypothesis to {HYPOTHESIS_FILE}."
)


class CLIAgentConfig(BaseModel):
    """Options shared by the CLI coding agents; each adapter sets its own defaults."""

    model_config = ConfigDict(extra="forbid")

    executable: str = Field(default="", description="Command name or path of the tool.")
    model: str | None = Field(
        default=None, description="Model the tool should use; the tool's own default when unset."
    )
    timeout_s: float = Field(
        default=1200.0,
        gt=0,
        description="Wall-clock limit of one call, seconds; past it the tool and its children are killed.",
    )
    extra_args: list[str] = Field(
        default=[], description="More command-line arguments, passed to the tool as they are."
    )
    env_allow: list[str] = Field(
        default=[],
        description="Environment variables (names or globs such as AIDER_*) the tool gets "
        "besides PATH, HOME and the locale; list its API key variable here.",
    )
    env: dict[str, str] = Field(
        default={},
        description="Variables set for the tool, e.g. a base URL; never a key: it would be "
        "stored with the run's config, so allow-list the key's variable instead.",
    )


@dataclass
class ToolOutput:
    """What one call of a tool printed, already cut to the tail."""

    exit_code: int
    stdout: str
    stderr: str

    def tail(self, limit: int = OUTPUT_TAIL_CHARS) -> str:
        """The end of stdout and stderr together, for an error message."""
        parts = [text.strip() for text in (self.stdout, self.stderr) if text.strip()]
        return "\n".join(parts)[-limit:] or "(no output)"


def tool_environment(
    parent: Mapping[str, str], allow: Sequence[str], fixed: Mapping[str, str]
) -> dict[str, str]:
    """The tool's environment: the base list, the allow-listed names, then ``fixed``."""
    env = {name: parent[name] for name in TOOL_ENV_BASE if name in parent}
    for name, value in parent.items():
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in allow):
            env[name] = value
    env.update(fixed)
    env.setdefault("PATH", os.defpath)
    return env


def find_executable(executable: str, agent: str, install: str) -> str:
    """The absolute path of ``executable``; a user error that says how to install it if absent."""
    found = shutil.which(executable) if executable else None
    if found is None:
        raise RlabUserError(
            f"The {agent} agent needs the `{executable}` executable, which is not found; "
            f"install it with `{install}` or point `-o agent.executable=PATH` at it."
        )
    return str(Path(found).resolve())


def split_hypothesis(text: str) -> tuple[str, str]:
    """The hypothesis (first paragraph, title and ``Hypothesis:`` label removed) and the rest."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    while lines and (not lines[0].strip() or _TITLE.match(lines[0].strip())):
        lines.pop(0)
    first: list[str] = []
    while lines and lines[0].strip():
        first.append(_PREFIX.sub("", lines.pop(0).strip(), count=1).rstrip("*").strip())
    hypothesis = " ".join(part for part in first if part)
    rest = "\n".join(lines).strip()
    end = re.search(r"(?<=[.!?])\s+", hypothesis)
    if len(hypothesis) > 400 and end:  # a paragraph, not a sentence: keep its first sentence
        hypothesis, rest = hypothesis[: end.start()], f"{hypothesis[end.end() :]}\n\n{rest}".strip()
    return hypothesis, rest


def _read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` characters of a log file, ANSI colour codes removed."""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - 4 * limit))
        text = handle.read().decode(errors="replace")
    return _ANSI.sub("", text)[-limit:]


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the tool and everything it started; reap the tool."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        process.wait()


def _outside_files(root: Path, inside: Sequence[Path]) -> dict[str, str]:
    """Files under ``root`` but not under ``inside``, as ``../relative`` paths of the work folder."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(path.is_relative_to(folder) for folder in inside):
            continue
        try:  # the content only matters as evidence: the core refuses the path itself
            text = path.read_text(errors="replace")[:MAX_SOURCE_FILE_BYTES]
        except OSError as exc:
            text = f"(unreadable: {exc})"
        found["../" + path.relative_to(root).as_posix()] = text
    return found


#: The options model of a CLI agent.
CLIConfigT = TypeVar("CLIConfigT", bound=CLIAgentConfig)


class CLIAgent(Agent[CLIConfigT]):
    """An agent that runs an external coding tool in a scratch copy of the parent.

    Subclasses name the tool (:attr:`agent_name`, :attr:`install`), build its command line
    (:meth:`command`) and may read usage and a summary from its output (:meth:`read_output`).
    """

    agent_name: ClassVar[str] = "cli"
    #: The one command that installs the tool, for the missing-executable message.
    install: ClassVar[str] = ""
    #: Glob patterns of the tool's own state files, dropped from what it changed.
    byproducts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: CLIConfigT) -> None:
        super().__init__(config)
        self.executable = find_executable(config.executable, self.agent_name, self.install)

    @abstractmethod
    def command(self, context: AgentContext, workdir: Path, state_dir: Path) -> list[str]:
        """The tool's command line; ``state_dir`` (outside the work folder) takes its histories."""

    def has_rlab_tools(self, context: AgentContext) -> bool:
        """True when the tool is given rlab's MCP server (``rlab mcp``) for this call."""
        return False

    def read_output(self, output: ToolOutput) -> tuple[str, Usage]:
        """The tool's closing summary and what the call cost (unknown: zero)."""
        return output.stdout.strip() or output.stderr.strip(), Usage()

    def propose(self, context: AgentContext) -> Proposal:
        """Run the tool once on a copy of the parent and return what it changed."""
        return self._call(context)

    def repair(self, context: RepairContext) -> Proposal | None:
        """Run the tool with the failure in its instructions and return its fix."""
        return self._call(context)

    # ------------------------------------------------------------------ one call

    def _call(self, context: AgentContext) -> Proposal:
        before = {
            k: v for k, v in context.parent_source.items() if k not in (TASK_FILE, HYPOTHESIS_FILE)
        }
        with tempfile.TemporaryDirectory(prefix=f"rlab-{self.agent_name}-") as tmp:
            root = Path(tmp)
            work, state = root / "work", root / "state"
            work.mkdir()
            state.mkdir()
            write_source(work, before, before)
            tools = self.has_rlab_tools(context)
            (work / TASK_FILE).write_text(build_instructions(context, tools=tools))
            output = self._execute(self.command(context, work, state), work, state)
            summary, usage = self.read_output(output)
            after = read_source(work)
            note = after.pop(HYPOTHESIS_FILE, "")
            after.pop(TASK_FILE, None)
            outside = _outside_files(root, (work, state))
        return self._proposal(context, before, after, outside, note, summary, usage, output)

    def _execute(self, argv: list[str], work: Path, state: Path) -> ToolOutput:
        env = tool_environment(os.environ, self.config.env_allow, self.config.env)
        out_path, err_path = state / "stdout.log", state / "stderr.log"
        timed_out = False
        with out_path.open("wb") as out, err_path.open("wb") as err:
            try:
                process = subprocess.Popen(
                    argv,
                    cwd=work,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,  # its own process group, killed as one
                )
            except OSError as exc:
                raise AgentError(f"{self.agent_name} could not start ({argv[0]}): {exc}.") from None
            try:
                process.wait(timeout=self.config.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(process)  # leftovers of a finished tool, or all of a stuck one
        output = ToolOutput(
            exit_code=process.returncode,
            stdout=_read_tail(out_path, OUTPUT_TAIL_CHARS),
            stderr=_read_tail(err_path, OUTPUT_TAIL_CHARS),
        )
        if timed_out:
            raise AgentError(
                f"{self.agent_name} did not finish within {self.config.timeout_s:g}s and was "
                f"stopped (raise agent.timeout_s); its output ended with:\n{output.tail()}"
            )
        if output.exit_code != 0:
            raise AgentError(
                f"{self.agent_name} exited with code {output.exit_code}; its output ended "
                f"with:\n{output.tail()}"
            )
        return output

    def _proposal(
        self,
        context: AgentContext,
        before: dict[str, str],
        after: dict[str, str],
        outside: dict[str, str],
        note: str,
        summary: str,
        usage: Usage,
        output: ToolOutput,
    ) -> Proposal:
        def own(path: str) -> bool:
            return any(fnmatch.fnmatch(path, pattern) for pattern in self.byproducts)

        changed = {p: text for p, text in after.items() if before.get(p) != text and not own(p)}
        changed.update(outside)
        deleted = sorted(p for p in before if p not in after)
        kept = f"Deleting files is not supported; kept: {', '.join(deleted)}." if deleted else ""
        if not changed:
            said = f"Its output ended with:\n{output.tail(1500)}"
            raise AgentError(
                " ".join(
                    p
                    for p in (f"{self.agent_name} made no change to the program.", kept, said)
                    if p
                )
            )
        hypothesis, rationale = split_hypothesis(note)
        if not hypothesis:
            hypothesis = self._fallback_hypothesis(context, summary, sorted(changed))
            rationale = summary[-1500:]
        return Proposal(
            hypothesis=hypothesis,
            rationale="\n\n".join(part for part in (rationale, kept) if part),
            files=changed,
            usage=usage,
        )

    def _fallback_hypothesis(self, context: AgentContext, summary: str, changed: list[str]) -> str:
        if isinstance(context, RepairContext):
            return f"Repair: {context.original_hypothesis}"
        first, _ = split_hypothesis(summary)
        if first:
            return first[:300]
        return f"{self.agent_name} changed {', '.join(changed)} (it wrote no {HYPOTHESIS_FILE})."
