"""The observer's options: how the command line spells them, where they lead, what is hidden."""

from __future__ import annotations

import json

import pytest
from rlab_mlflow.options import OptionsProblem, read_options, redact, tracking_uri

from rlab_core.config import RunConfig, merge_layers, parse_overrides
from rlab_core.errors import ConfigError


def test_observer_overrides_name_the_observer_and_merge_key_by_key():
    cli = parse_overrides(["observer.mlflow.enabled=true", "observer.mlflow.uri=http://h:5000"])
    assert cli == {"observer_options": {"mlflow": {"enabled": True, "uri": "http://h:5000"}}}
    mode = {"observer_options": {"mlflow": {"experiment": "study", "enabled": False}}}
    config = RunConfig(**merge_layers(mode, cli))
    assert config.observer_options == {
        "mlflow": {"experiment": "study", "enabled": True, "uri": "http://h:5000"}
    }
    for bad in ("observer.mlflow=1", "observer.enabled", "observer..x=1", "observer.mlflow.=1"):
        with pytest.raises(ConfigError, match=r"observer\.NAME\.OPTION=VALUE"):
            parse_overrides([bad])


def _run_dir(tmp_path, options):
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    config = RunConfig(observer_options={"mlflow": options}).model_dump(mode="json")
    (run_dir / "run.json").write_text(json.dumps({"task": "t", "config": config}))
    return run_dir


def test_the_uri_is_the_option_else_the_variable_else_mlruns(tmp_path, monkeypatch):
    run_dir = _run_dir(tmp_path, {"enabled": True})
    options = read_options(run_dir)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri(options, run_dir) == (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://env:5000")
    assert tracking_uri(options, run_dir) == "http://env:5000"
    options.uri = "http://option:5000"
    assert tracking_uri(options, run_dir) == "http://option:5000"


def test_wrong_options_say_which_and_list_the_valid_ones(tmp_path):
    with pytest.raises(OptionsProblem, match=r"enable: Extra inputs.*its options are: enabled"):
        read_options(_run_dir(tmp_path, {"enable": True}))


def test_credentials_never_show():
    assert redact("at https://bob:pw@host:5000/x ok") == "at https://***@host:5000/x ok"
    assert redact("http://h/x?token=abc&a=1") == "http://h/x?token=***&a=1"
    assert redact("http://host:5000") == "http://host:5000"
