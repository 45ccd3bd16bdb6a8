"""The docs stay in step with the code: the hook reference and the commands they mention."""

from __future__ import annotations

import inspect
import re
import shlex
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
