"""Run configuration: precedence, modes, config files and overrides."""

from __future__ import annotations

import pytest

from rlab_core.config import RunConfig, build_run_config, parse_overrides
from rlab_core.errors import ConfigError, UnknownNameError


def test_precedence_command_line_over_file_over_mode_over_defaults(plugin_host, tmp_path):
    config_file = tmp_path / "run.yaml"
    config_file.write_text(
        "mode: THOROUGH\niterations: 7\nwindow: 2\nagent_options: {temperature: 0.5, model: a}\n"
    )
    config = build_run_config(
        plugin_host, cli={"iterations": 3, "agent_options": {"model": "b"}}, config_file=config_file
    )
    assert config.iterations == 3  # command line
    assert config.window == 2  # file over mode (THOROUGH says 5)
    assert config.strategy == "tree" and config.min_iterations == 10  # mode
    assert config.epsilon == 0.002  # default
    assert config.agent_options == {"temperature": 0.5, "model": "b"}  # merged key by key


def test_mode_from_the_command_line_and_user_modes(plugin_host, tmp_path, monkeypatch):
    assert build_run_config(plugin_host, cli={}, mode="minimal").iterations == 3
    modes = tmp_path / "modes"
    modes.mkdir()
    (modes / "overnight.yaml").write_text("summary: long\niterations: null\ntime_budget_s: 28800\n")
    monkeypatch.setenv("RLAB_MODES_DIR", str(modes))
    config = build_run_config(plugin_host, cli={}, mode="overnight")
    assert config.iterations is None and config.time_budget_s == 28800
    with pytest.raises(
        UnknownNameError, match=r"Unknown mode 'fast'; available: .*MINIMAL.*overnight"
    ):
        build_run_config(plugin_host, cli={}, mode="fast")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("iterations: lots\n", "iterations: Input should be a valid integer"),
        ("iteratons: 3\n", "iteratons: Extra inputs are not permitted"),
        ("- 1\n- 2\n", "must hold a mapping"),
        ("a: [1\n", "is not valid YAML"),
        (
            "iterations: 3\nwindow: 2\niterations: 5\n",
            r"at line 3 \(the key 'iterations' is given twice\)",
        ),
        ("time_budget_s: .inf\n", "time_budget_s: Input should be a finite number"),
        ("target_val: .nan\n", "target_val: Input should be a finite number"),
    ],
)
def test_bad_config_files_are_one_sentence(plugin_host, tmp_path, text, message):
    config_file = tmp_path / "bad.yaml"
    config_file.write_text(text)
    with pytest.raises(ConfigError, match=message):
        build_run_config(plugin_host, cli={}, config_file=config_file)


def test_missing_config_file(plugin_host, tmp_path):
    with pytest.raises(ConfigError, match="Cannot read config file"):
        build_run_config(plugin_host, cli={}, config_file=tmp_path / "nope.yaml")


def test_overrides_parse_yaml_values_into_sections():
    assert parse_overrides(
        ["agent.temperature=0.2", "sandbox.isolation=none", "strategy.num_drafts=4"]
    ) == {
        "agent_options": {"temperature": 0.2},
        "sandbox_options": {"isolation": "none"},
        "strategy_options": {"num_drafts": 4},
    }
    for bad in ("temperature=0.2", "model.x=1", "agent.=3", "agent.x"):
        with pytest.raises(ConfigError, match=r"SECTION\.OPTION=VALUE"):
            parse_overrides([bad])


def test_every_run_option_is_a_config_key() -> None:
    """`rlab run` passes its options to the config by name: a renamed key must not go astray."""
    import inspect

    from rlab_core.cli import run_cmd

    names = [p for p in inspect.signature(run_cmd.run).parameters if p != "ctx"]
    keys = {run_cmd.CONFIG_KEY_OF.get(n, n) for n in names if n not in run_cmd.NOT_CONFIG}
    assert keys <= set(RunConfig.model_fields), keys - set(RunConfig.model_fields)
    assert {"task", "iterations", "time_budget_s", "out", "seed_candidate"} <= keys


def test_a_config_file_that_is_not_utf8_is_one_sentence(plugin_host, tmp_path):
    config_file = tmp_path / "latin1.yaml"
    config_file.write_bytes("summary: caf\xe9\niterations: 2\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 12\); save it as UTF-8"):
        build_run_config(plugin_host, cli={}, config_file=config_file)


def test_home_folder_in_paths_is_expanded(plugin_host, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    config_file = tmp_path / "run.yaml"
    config_file.write_text("out: ~/runs\n")
    config = build_run_config(plugin_host, cli={}, config_file=config_file)
    assert config.out == tmp_path / "runs"


def test_a_broken_user_mode_spoils_only_itself(plugin_host, tmp_path, monkeypatch):
    modes = tmp_path / "modes"
    modes.mkdir()
    (modes / "broken.yaml").write_text("iterations: [1\n")
    (modes / "fine.yaml").write_text("iterations: 4\n")
    monkeypatch.setenv("RLAB_MODES_DIR", str(modes))
    assert build_run_config(plugin_host, cli={}, mode="minimal").iterations == 3
    assert build_run_config(plugin_host, cli={}, mode="fine").iterations == 4
    with pytest.raises(ConfigError, match=r"Mode 'broken' cannot be used: Config file .*broken"):
        build_run_config(plugin_host, cli={}, mode="broken")
