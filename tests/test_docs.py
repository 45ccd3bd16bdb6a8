"""The docs stay in step with the code: the hook reference and the commands they mention."""

from __future__ import annotations

import inspect
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from rlab_core import hookspecs
from rlab_core.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_GUIDE = ROOT / "docs" / "plugin-authors.md"
USER_GUIDE = ROOT / "docs" / "user-guide.md"

#: A reference bullet: "- `rlab_x(a, b) -> T`" (docs) or "- ``rlab_x(a, b) -> T``" (docstring).
BULLET = re.compile(r"^- `{1,2}(rlab_\w+)\(([^)]*)\)\s*->\s*([^`]+?)`{1,2}\s*$", re.MULTILINE)


def spec_hooks() -> dict[str, tuple[list[str], str]]:
    """Every hook of ``RlabHookSpecs``: name -> (parameter names, return annotation)."""
    hooks = {}
    for name, function in inspect.getmembers(hookspecs.RlabHookSpecs, inspect.isfunction):
        if not name.startswith("rlab_"):
            continue
        signature = inspect.signature(function)
        params = [p for p in signature.parameters if p != "self"]
        hooks[name] = (params, str(signature.return_annotation))
    return hooks


def listed_hooks(text: str) -> dict[str, tuple[list[str], str]]:
    hooks: dict[str, tuple[list[str], str]] = {}
    for match in BULLET.finditer(text):
        name, raw_params, returns = match.groups()
        assert name not in hooks, f"hook {name} is listed twice"
        params = [p.split(":")[0].strip() for p in raw_params.split(",") if p.strip()]
        hooks[name] = (params, returns.strip())
    return hooks


def hook_reference_section() -> str:
    text = PLUGIN_GUIDE.read_text()
    match = re.search(r"^## Hook reference\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert match, f"{PLUGIN_GUIDE} has no '## Hook reference' section"
    return match.group(1)


def test_there_are_hooks_to_check() -> None:
    assert "rlab_register_benchmarks" in spec_hooks()
    assert len(spec_hooks()) >= 4


def test_plugin_guide_lists_exactly_the_hooks() -> None:
    documented = listed_hooks(hook_reference_section())
    actual = spec_hooks()
    assert set(documented) - set(actual) == set(), "the guide lists hooks that do not exist"
    assert set(actual) - set(documented) == set(), "hooks missing from the guide"
    for name, (params, returns) in actual.items():
        assert documented[name][0] == params, (
            f"{name}: guide has {documented[name][0]}, code {params}"
        )
        assert documented[name][1] == returns, f"{name}: guide returns {documented[name][1]}"


def test_hookspecs_docstring_lists_exactly_the_hooks() -> None:
    documented = listed_hooks(hookspecs.__doc__ or "")
    actual = spec_hooks()
    assert set(documented) == set(actual)
    for name, (params, returns) in actual.items():
        assert documented[name] == (params, returns), name


def test_bullet_parser_reads_both_forms() -> None:
    text = "- `rlab_a(x, y: int) -> None`\n- ``rlab_b() -> Iterable[AgentInfo]``\n"
    assert listed_hooks(text) == {
        "rlab_a": (["x", "y"], "None"),
        "rlab_b": ([], "Iterable[AgentInfo]"),
    }


# --------------------------------------------------------------------------- commands

#: Inline code such as `rlab show RUN` or `uv run rlab list agents`.
INLINE = re.compile(r"`(?:uv run )?(rlab(?: [^`]*)?)`")
#: A command line inside a fenced block, optionally after VAR=value assignments.
FENCED_LINE = re.compile(r"^\s*(?:\$ )?(?:[A-Z_]+=\S* )*(?:uv run )?(rlab\b.*)$")


def mentioned_commands(text: str) -> set[tuple[str, ...]]:
    """Every ``rlab ...`` command line the text mentions, as its words after ``rlab``."""
    lines: list[str] = []
    prose = []
    in_fence = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            match = FENCED_LINE.match(line)
            if match:
                lines.append(match.group(1).split("#")[0])
        else:
            prose.append(line)
    lines += INLINE.findall("\n".join(prose))
    commands = set()
    for line in lines:
        words = shlex.split(line.replace("…", "x"), comments=False)
        commands.add(tuple(words[1:]))
    return commands


def command_path(words: tuple[str, ...]) -> list[str]:
    """The subcommand words of a command line; an unknown subcommand fails the test."""
    command = typer.main.get_command(app)
    path: list[str] = []
    for word in words:
        if word.startswith("-") or not hasattr(command, "commands"):
            break
        assert word in command.commands, (
            f"`rlab {' '.join(words)}`: '{word}' is not a subcommand of "
            f"`rlab {' '.join(path)}`".rstrip()
            + f" (it has: {', '.join(sorted(command.commands))})"
        )
        command = command.commands[word]
        path.append(word)
    return path


def test_user_guide_mentions_commands() -> None:
    paths = {tuple(command_path(words)) for words in mentioned_commands(USER_GUIDE.read_text())}
    for expected in [("run",), ("resume",), ("show",), ("final",), ("plugins",), ("list", "modes")]:
        assert expected in paths


@pytest.mark.parametrize("guide", [USER_GUIDE, PLUGIN_GUIDE], ids=lambda p: p.name)
def test_every_mentioned_command_exists(guide: Path) -> None:
    runner = CliRunner()
    paths = {tuple(command_path(words)) for words in mentioned_commands(guide.read_text())}
    for path in sorted(paths):
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, f"`rlab {' '.join(path)} --help` failed: {result.output}"


def test_unknown_subcommands_are_caught() -> None:
    assert mentioned_commands("see `rlab list agentz` and\n```\nuv run rlab shw latest\n```\n") == {
        ("list", "agentz"),
        ("shw", "latest"),
    }
    with pytest.raises(AssertionError, match="agentz"):
        command_path(("list", "agentz"))
    with pytest.raises(AssertionError, match="shw"):
        command_path(("shw", "latest"))
    assert command_path(("show", "latest")) == ["show"]
    assert command_path(("run", "-i", "3")) == ["run"]


# --------------------------------------------------------------------------- options


def test_user_guide_documents_every_run_option() -> None:
    text = USER_GUIDE.read_text()
    run = typer.main.get_command(app).commands["run"]
    flags = {opt for param in run.params for opt in param.opts if opt.startswith("-")}
    documented = set(re.findall(r"`(--?[a-z][a-z-]*)`", text))
    assert flags - {"--help"} <= documented, f"undocumented: {sorted(flags - documented)}"
    table_flags = set(re.findall(r"^\| `(--[a-z-]+)`", text, re.MULTILINE))
    assert table_flags <= flags, f"documented but not options of rlab run: {table_flags - flags}"


def test_user_guide_documents_every_config_key() -> None:
    from rlab_core.config import RunConfig

    text = USER_GUIDE.read_text()
    missing = [key for key in RunConfig.model_fields if f"`{key}`" not in text]
    assert not missing, f"config keys missing from the user guide: {missing}"


# --------------------------------------------------------------------------- commands as written

README = ROOT / "README.md"
#: A command line in a fenced block: an optional ``$ ``, ``VAR=value`` assignments, an
#: optional ``uv run``, then ``rlab`` and its words (a trailing ``# comment`` is dropped).
COMMAND_LINE = re.compile(r"^\s*(?:\$ )?((?:[A-Z_]+=\S* )*)(?:uv run )?rlab(?= |$)(.*)$")
#: What stands for a synopsis line's placeholders (``rlab resume RUN [-i N]``).
PLACEHOLDERS = {"RUN": "latest", "N": "2", "PATH": "dashboard.html", "TASK": "toy:line"}
PLACEHOLDERS["BENCHMARK"] = "toy"
#: Commands that read a run: run for real on a copy of a toy run that `latest` finds.
READS_A_RUN = {"resume", "show", "final", "report"}
#: Commands checked by parsing alone, and why they cannot run here.
PARSE_ONLY = {
    "RLAB_PLUGIN_MODULES=my_plugin": "it loads the reader's own plugin module, which is not here",
}


@dataclass(frozen=True)
class GuideCommand:
    """One ``rlab`` command line a guide shows, ready to check."""

    where: str
    text: str
    env: dict[str, str]
    args: list[str]
    #: The ``error: ...`` line the guide shows the command printing, if any.
    error: str | None = None


def _synopsis(words: list[str]) -> list[str]:
    """``rlab show [RUN] --tree`` as a command that runs: brackets gone, placeholders filled."""
    filled = []
    for word in words:
        bare = word.strip("[]")
        if bare != "OPTIONS":
            filled.append(PLACEHOLDERS.get(bare, bare))
    return filled


def guide_commands(path: Path, text: str | None = None) -> list[GuideCommand]:
    """Every ``rlab`` command line in the fenced code blocks of ``path`` (or of ``text``)."""
    lines = (path.read_text() if text is None else text).splitlines()
    found: list[GuideCommand] = []
    in_fence = False
    for number, line in enumerate(lines, start=1):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        match = COMMAND_LINE.match(line) if in_fence else None
        if not match:
            continue
        words = shlex.split(match.group(2), comments=True)
        if "[" in line.split(" #")[0]:
            words = _synopsis(words)
        shown = lines[number] if number < len(lines) else ""
        found.append(
            GuideCommand(
                where=f"{path.name}:{number}",
                text=line.split(" #")[0].strip(),
                env=dict(item.split("=", 1) for item in match.group(1).split()),
                args=words,
                error=shown.removeprefix("error: ") if shown.startswith("error: ") else None,
            )
        )
    return found


def example_files(path: Path) -> dict[str, str]:
    """The files a guide shows in full: a fenced block whose first line is ``# <file name>``."""
    files = {}
    for block in re.findall(r"^```\w*\n(.*?)^```", path.read_text(), re.MULTILINE | re.DOTALL):
        first, _, rest = block.partition("\n")
        name = first.removeprefix("# ").strip()
        if first.startswith("# ") and name.endswith((".yaml", ".yml")):
            files[name] = rest
    return files


ALL_COMMANDS = guide_commands(README) + guide_commands(USER_GUIDE)


def test_the_guides_show_commands_to_check() -> None:
    texts = [command.text for command in ALL_COMMANDS]
    assert "uv run rlab run" in texts  # the README's main job
    assert any(c.args[:1] == ["final"] for c in ALL_COMMANDS)
    assert any(c.error for c in ALL_COMMANDS)  # the guide's example of a user error
    assert sum(c.args[:1] == ["run"] for c in ALL_COMMANDS) >= 15
    assert {"study.yaml", "~/.config/rlab/modes/OVERNIGHT.yaml"} <= set(example_files(USER_GUIDE))


def test_command_lines_are_read_as_a_reader_types_them() -> None:
    text = (
        "Not a command: rlab run\n"
        "```\n"
        "$ RLAB_X=1 uv run rlab run -o agent.explore=1   # a comment\n"
        "error: Invalid options.\n"
        "rlab show [RUN] --tree\n"
        "rlab resume RUN [-i N]\n"
        "rlab run [OPTIONS] [TASK]\n"
        "```\n"
    )
    first, show, resume, run = guide_commands(Path("guide.md"), text)
    assert first == GuideCommand(
        where="guide.md:3",
        text="$ RLAB_X=1 uv run rlab run -o agent.explore=1",
        env={"RLAB_X": "1"},
        args=["run", "-o", "agent.explore=1"],
        error="Invalid options.",
    )
    assert show.args == ["show", "latest", "--tree"] and show.error is None
    assert resume.args == ["resume", "latest", "-i", "2"]
    assert run.args == ["run", "toy:line"]


@pytest.fixture
def reader_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A reader's working folder: the guide's example files, their program, no RLAB_ variables."""
    for name in list(os.environ):
        if name.startswith("RLAB_") or name == "XDG_CONFIG_HOME":
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RLAB_PLUGIN_MODULES", "rlab_core.testing.toy.plugin")
    monkeypatch.setenv("RLAB_CACHE_HOME", str(tmp_path / "rlab-cache"))
    monkeypatch.chdir(work)
    for name, text in example_files(USER_GUIDE).items():
        target = Path(name).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (work / "my_program").mkdir()  # `--seed-candidate ./my_program`: the reader's program
    (work / "my_program" / "main.py").write_text("print('my program')\n")
    return work


def _plan(command: GuideCommand) -> None:
    """Everything `rlab run` does before its first piece of work: parse, merge, validate."""
    from rlab_core.cli.common import make_host
    from rlab_core.cli.run_cmd import CONFIG_KEY_OF, NOT_CONFIG
    from rlab_core.config import build_run_config, parse_overrides
    from rlab_core.run_plan import plan_run

    run = typer.main.get_command(app).commands["run"]
    params = run.make_context("run", list(command.args[1:])).params
    given = {
        CONFIG_KEY_OF.get(name, name): value
        for name, value in params.items()
        if value is not None and name not in NOT_CONFIG
    }
    host = make_host()
    config = build_run_config(
        host,
        cli={**given, **parse_overrides(params["option"] or [])},
        config_file=params["config_file"],
        mode=params["mode"],
    )
    plan_run(host, config)


def _parse(command: GuideCommand) -> None:
    """The command line parses: its subcommands exist, its options and arguments are valid."""
    words = tuple(command.args)
    path = command_path(words)
    leaf = typer.main.get_command(app)
    for word in path:
        leaf = leaf.commands[word]  # type: ignore[attr-defined]
    leaf.make_context(" ".join(["rlab", *path]), list(words[len(path) :]))


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: f"{c.where} {c.text}")
def test_every_command_in_the_guides_runs_as_written(
    command: GuideCommand, reader_folder: Path, run_toy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command the README and the user guide show, checked against the real CLI.

    ``rlab run`` is planned (options parsed, layers merged, every plugin's options validated,
    the task and agent resolved) but never started: runs take minutes and real data. The
    commands that read a run run for real on a toy run; listings and ``--help`` run for real.
    """
    for name, value in command.env.items():
        monkeypatch.setenv(name, value)
    skip = next((why for key, why in PARSE_ONLY.items() if key in command.text), None)
    if skip:
        _parse(command)
        return
    if command.args[:1] == ["run"]:
        from rlab_core.errors import RlabUserError

        if command.error is None:
            _plan(command)
        else:
            with pytest.raises(RlabUserError) as raised:
                _plan(command)
            assert str(raised.value) == command.error
        return
    args = list(command.args)
    if args[:1] and args[0] in READS_A_RUN:
        run = run_toy([])  # a real, finished toy run, the newest under ./runs
        (reader_folder / "runs").mkdir(exist_ok=True)
        target = reader_folder / "runs" / run.run.run_id
        shutil.copytree(run.run.root, target)
        # a run folder path the guide shows stands for this run
        args = [str(target) if arg.startswith("runs/") else arg for arg in args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, f"`{command.text}` ({command.where}) failed: {result.output}"
