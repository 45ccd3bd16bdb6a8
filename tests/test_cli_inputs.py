"""The real `rlab` executable and what users type: config files, modes, paths, numbers, help,
shell completion and ``--verbose``."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import RLAB, cli_env, edit


def _rlab(
    args: list[str], tmp_path: Path, *, cwd: Path | None = None, **extra_env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RLAB, *args],
        env=cli_env(tmp_path, **extra_env),
        cwd=cwd or tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _toy_config(tmp_path: Path, script: list[dict] | None = None, **values) -> Path:
    path = tmp_path / "toy.yaml"
    settings = {
        "task": "toy:line",
        "agent": "scripted",
        "agent_options": {"script": script or []},
        "finalists": 0,
        "noise_seeds": 0,
        **values,
    }
    path.write_text(yaml.safe_dump(settings))
    return path


def _one_sentence(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("error:") == 1, done.stderr
    return " ".join(done.stderr.split())


def test_a_config_file_that_is_not_utf8(tmp_path):
    config = tmp_path / "latin1.yaml"
    config.write_bytes("task: toy:line\nsummary: caf\xe9\n".encode("latin-1"))
    text = _one_sentence(_rlab(["run", "--config", str(config)], tmp_path))
    assert f"Config file {config} is not UTF-8 text (byte 27); save it as UTF-8." in text


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        ("task: toy:line\niterations: 3\nwindow: 2\niterations: 5\n", "iterations", (2, 4)),
        ("agent_options:\n  script: []\n  script: [1]\n", "script", (2, 3)),
    ],
)
def test_a_key_given_twice_in_a_config_file(tmp_path, text, key, lines):
    config = tmp_path / "twice.yaml"
    config.write_text(text)
    message = _one_sentence(_rlab(["run", "--config", str(config)], tmp_path))
    assert (
        f"Config file {config} is not valid YAML at line {lines[1]} (the key '{key}' is given "
        f"twice); keep one of lines {lines[0]} and {lines[1]}." in message
    )


def test_user_modes_one_broken_file_spoils_only_its_own_mode(tmp_path):
    modes = tmp_path / "modes"
    modes.mkdir()
    (modes / "twice.yaml").write_text("iterations: 1\niterations: 2\n")
    (modes / "torn.yaml").write_text("iterations: [1\n")
    (modes / "quick.yaml").write_text("summary: no search\niterations: 0\n")
    config = _toy_config(tmp_path)
    env = {"RLAB_MODES_DIR": str(modes)}

    builtin = _rlab(["run", "--config", str(config), "-m", "MINIMAL", "-i", "0"], tmp_path, **env)
    assert builtin.returncode == 0, builtin.stderr
    assert "iteration budget reached (0/0)" in builtin.stdout
    user = _rlab(["run", "--config", str(config), "-m", "quick"], tmp_path, **env)
    assert user.returncode == 0, user.stderr
    assert "iteration budget reached (0/0)" in user.stdout

    twice = _one_sentence(_rlab(["run", "--config", str(config), "-m", "twice"], tmp_path, **env))
    assert (
        f"Mode 'twice' cannot be used: Config file {modes / 'twice.yaml'} is not valid YAML at "
        "line 2 (the key 'iterations' is given twice)" in twice
    )
    torn = _one_sentence(_rlab(["run", "--config", str(config), "-m", "torn"], tmp_path, **env))
    assert f"Mode 'torn' cannot be used: Config file {modes / 'torn.yaml'} is not valid" in torn


def test_a_home_folder_in_paths_is_the_home_folder(tmp_path):
    """`~` from a config file, a quoted option or RLAB_OUT is the home folder, never a `~` folder."""
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    config = _toy_config(tmp_path, iterations=0)
    config_in_home = home / "toy.yaml"
    shutil.copy(config, config_in_home)
    env = {"HOME": str(home)}

    by_option = _rlab(["run", "--config", "~/toy.yaml", "--out", "~/a"], tmp_path, cwd=work, **env)
    assert by_option.returncode == 0, by_option.stderr
    by_env = _rlab(["run", "--config", str(config)], tmp_path, cwd=work, RLAB_OUT="~/b", **env)
    assert by_env.returncode == 0, by_env.stderr
    (home / "toy.yaml").write_text(config.read_text() + "out: ~/c\n")
    by_file = _rlab(["run", "--config", "~/toy.yaml"], tmp_path, cwd=work, **env)
    assert by_file.returncode == 0, by_file.stderr
    for name in ("a", "b", "c"):
        assert len(list((home / name).glob("*/journal.jsonl"))) == 1, name
    assert not any(work.iterdir()), list(work.iterdir())  # no folder literally named `~`

    run_id = next((home / "a").iterdir()).name
    shown = _rlab(["show", "--out", "~/a"], tmp_path, cwd=work, **env)
    assert shown.returncode == 0 and run_id in shown.stdout, shown.stderr
    by_path = _rlab(["show", f"~/a/{run_id}"], tmp_path, cwd=work, **env)
    assert by_path.returncode == 0 and run_id in by_path.stdout, by_path.stderr
    by_env_show = _rlab(["show"], tmp_path, cwd=work, RLAB_OUT="~/b", **env)
    assert by_env_show.returncode == 0, by_env_show.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time-budget", "inf"], "time_budget_s: Input should be a finite number of seconds"),
        (["--time-budget", "nan"], "time_budget_s: Input should be a finite number of seconds"),
        (["--time-budget", "-5"], "time_budget_s: Input should be a finite number of seconds"),
        (["--max-cost", "nan"], "max_cost: Input should be a finite amount in USD greater than 0"),
        (["--target-val", "nan"], "target_val: Input should be a finite number."),
    ],
)
def test_numbers_that_are_no_budget(tmp_path, args, message):
    text = _one_sentence(_rlab(["run", "toy:line", "-d", "scripted", *args], tmp_path))
    assert message in text


def test_resume_refuses_a_negative_iteration_budget(tmp_path):
    done = _rlab(["resume", "latest", "-i", "-1"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Invalid value for '--iterations' / '-i'" in done.stderr
    assert "greater than or equal to 0" in done.stderr


HELP_OF = [
    [],
    ["run"],
    ["resume"],
    ["show"],
    ["final"],
    ["report"],
    ["plugins"],
    ["list"],
    ["list", "tasks"],
    ["list", "modes"],
    ["list", "agents"],
]


@pytest.mark.parametrize("command", HELP_OF, ids=lambda c: " ".join(c) or "rlab")
def test_help_has_no_type_labels_and_flags_take_no_value(tmp_path, command):
    done = _rlab([*command, "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    labels = re.findall(r"<(?:bool|str|int|float|path|list\[\w+\])>", done.stdout)
    assert not labels, done.stdout
    rows = {
        match.group(1): match.group(2).strip()
        for match in re.finditer(r"│ (--[\w-]+)\s+(?:-\w\s+)?(\S*)", done.stdout)
    }
    assert rows["--help"] == "Show", rows  # a flag: nothing between it and its help
    if command == ["show"]:
        assert rows["--tree"] == "Draw" and rows["--out"] == "FOLDER", rows
        assert "[RUN]" in done.stdout
    if command == ["run"]:
        assert rows["--time-budget"] == "SECONDS" and rows["--iterations"] == "N", rows
        assert rows["--config"] == "PATH" and rows["--rebuild-cache"] == "Rebuild", rows
    if command == []:
        assert {"--install-completion", "--show-completion"} <= set(rows)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_shell_completion_script_and_answers(tmp_path):
    # `; true` keeps bash as rlab's parent: the completion is shown for the shell that asks
    shown = subprocess.run(
        ["bash", "-c", f"{shlex.quote(RLAB)} --show-completion; true"],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "_RLAB_COMPLETE=complete_bash" in shown.stdout
    assert "complete -o default -F _rlab_completion rlab" in shown.stdout

    def complete(words: str) -> list[str]:
        done = _rlab(
            [],
            tmp_path,
            _RLAB_COMPLETE="complete_bash",
            COMP_WORDS=words,
            COMP_CWORD=str(len(words.split()) - 1),
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("rlab li") == ["list"]
    assert complete("rlab list ta") == ["tasks"]
    assert complete("rlab show --tr") == ["--tree"]
    assert complete("rlab list tasks to") == ["toy"]  # installed benchmarks


def _normalized(stdout: str) -> list[str]:
    text = re.sub(r"\d{8}-\d{6}-toy-line\S*", "RUN", stdout)
    text = re.sub(r"\d+(\.\d+)?s\b", "Ts", text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def test_verbose_logs_plugins_preparation_and_sandbox_commands_on_stderr(tmp_path):
    step = {"hypothesis": "steeper", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")]}
    config = _toy_config(tmp_path, [step], iterations=1, min_iterations=5)
    secret = {"OPENAI_API_KEY": "sk-never-in-a-log"}

    plain = _rlab(["run", "--config", str(config)], tmp_path, **secret)
    assert plain.returncode == 0, plain.stderr
    assert "debug" not in plain.stderr

    verbose = _rlab(["-v", "run", "--config", str(config)], tmp_path, **secret)
    assert verbose.returncode == 0, verbose.stderr
    assert _normalized(verbose.stdout) == _normalized(plain.stdout)  # stdout: the same facts
    assert "debug" not in verbose.stdout

    log = verbose.stderr
    assert "debug rlab_core.plugins: entry points in group 'rlab':" in log
    assert "plugin rlab_core.testing.toy.plugin registered benchmarks: toy; agents: scripted" in log
    assert "sandbox 'local' of plugin builtin: loaded rlab_core.builtin.local_sandbox" in log
    cache = tmp_path / "rlab-cache" / "toy" / "line"
    assert f"prepared data: finished folder at {cache}" in log  # the plain run built it
    assert re.search(r"isolation (bubblewrap|netns|none) \(asked for auto\)", log)
    commands = re.findall(r"candidate command \((\w+)\) in (\S+), environment (\S+): (.*)", log)
    assert len(commands) == 2, log  # the seed and the one child
    for _level, workdir, names, command in commands:
        argv = shlex.split(command)  # shell-quoted: copy, paste, run
        assert argv[-1] == "main.py" and "python" in Path(argv[-2]).name, argv
        assert Path(workdir).name == "work" and "RLAB_SEED" in names.split(",")
    assert "sk-never-in-a-log" not in log and "OPENAI_API_KEY" not in log
    assert "RLAB_DATA_DIR=" not in log and "RLAB_SEED=" not in log  # names, never values

    rebuilt = _rlab(["-v", "run", "--config", str(config), "--rebuild-cache"], tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert re.search(
        rf"prepared data: built {re.escape(str(cache))} in \d+\.\d\d s", rebuilt.stderr
    )


def _docker_problem() -> str | None:
    try:
        import docker
    except ImportError:
        return "the Docker SDK is not installed"
    try:
        docker.from_env(timeout=5).ping()
    except Exception as exc:
        return f"no Docker daemon answers ({type(exc).__name__}); .ci/run starts one"
    return None


@pytest.mark.skipif(_docker_problem() is not None, reason=_docker_problem() or "")
def test_verbose_shows_the_docker_run_line_without_values(tmp_path):
    config = _toy_config(tmp_path, iterations=0, sandbox="docker")
    done = _rlab(["-v", "run", "--config", str(config)], tmp_path, OPENAI_API_KEY="sk-no")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "the container is the one of" in line]
    assert len(lines) == 1, done.stderr  # the seed
    argv = shlex.split(lines[0].partition("the container is the one of ")[2])
    assert argv[:6] == ["docker", "run", "--rm", "--network", "none", "--read-only"]
    assert argv[-1] == "main.py" and argv[argv.index("--memory") + 1].endswith("m")
    names = [argv[i + 1] for i, word in enumerate(argv) if word == "-e"]
    assert "RLAB_SEED" in names and all("=" not in name for name in names)
    assert "sk-no" not in done.stderr and "OPENAI_API_KEY" not in done.stderr
