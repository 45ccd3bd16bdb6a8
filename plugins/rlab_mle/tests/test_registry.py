"""Where competitions come from, what `rlab list tasks mle` shows, the rlab-mle command line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import rlab_mle.plugin as plugin
import yaml
from rlab_mle import mlebench_source
from rlab_mle.benchmark import MleBenchmark
from rlab_mle.cli import app as mle_app
from rlab_mle.definitions import LITE_IDS, read_config
from rlab_mle.options import MleOptions
from rlab_mle.registry import Registry
from typer.testing import CliRunner

from rlab_core.api import ConfigError, DataUnavailableError, UnknownNameError
from rlab_core.cli.app import app as rlab_app

pytest_plugins = ["rlab_core.testing.fixtures"]


def test_registration_imports_nothing_heavy(plugin_host, register_plugin) -> None:
    register_plugin(plugin, name="mle")
    info = plugin_host.available("benchmarks")["mle"].info
    assert info.default_task == "mle:wdbc-breast-cancer"
    assert set(info.config.model_fields) >= {"data_dir", "competitions_dir", "lite"}


def test_mlebench_is_used_only_when_it_imports(user_folders) -> None:
    ok, why = mlebench_source.status()
    if ok:
        pytest.skip("mlebench is installed here; this test covers its absence")
    assert "mlebench is not importable" in why
    assert mlebench_source.competition_ids(user_folders["data"]) == []
    assert mlebench_source.load("spaceship-titanic", user_folders["data"]) is None
    # a user config that names mlebench's grade_fn is graded by its grader name instead
    assert mlebench_source.import_grade_fn("mlebench.competitions.x.grade:grade") is None


def test_lookup_order_and_unknown_names(user_benchmark, rlab_cache_home) -> None:
    found = user_benchmark.registry()
    ids = found.ids()
    assert ids[:4] == ["flights-dest", "flights-late", "flights-late-by-plane", "wine-cultivar"]
    assert {"wdbc-breast-cancer", "nyc-flights-air-time"} <= set(ids)
    assert found.get("flights-late").source == "folder"
    assert found.get("wdbc-breast-cancer").source == "builtin"
    with pytest.raises(
        UnknownNameError, match=r"Unknown mle competition 'nope'.*mle:wine-cultivar"
    ):
        found.get("nope")
    if not mlebench_source.available():
        with pytest.raises(
            DataUnavailableError,
            match=r"mlebench prepare -c spooky-author-identification --data-dir",
        ):
            found.get("spooky-author-identification")


def test_missing_data_names_the_exact_prepare_command(user_folders, tmp_path) -> None:
    options = MleOptions(data_dir=tmp_path / "empty", competitions_dir=user_folders["definitions"])
    found = Registry(options, tmp_path / "cache")
    competition = found.get("wine-cultivar")
    with pytest.raises(DataUnavailableError) as caught:
        found.ensure_data(competition)
    message = str(caught.value)
    assert f"`mlebench prepare -c wine-cultivar --data-dir {tmp_path / 'empty'}`" in message
    assert message.endswith(".") and "\n" not in message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.pop("grader"), r"lacks grader\.name"),
        (lambda c: c["dataset"].pop("answers"), r"lacks dataset\.answers"),
        (lambda c: (c.pop("name"), c.pop("competition_type")), r"lacks name, competition_type"),
        (lambda c: c.update(id="other"), r"has id 'other' but lies in a folder named"),
        (lambda c: c.update(rlab={"colour": "red"}), r"may only name train_file and group_column"),
    ],
)
def test_bad_configs_get_one_sentence(user_folders, tmp_path, change, message) -> None:
    folder = tmp_path / "wine-cultivar"
    shutil.copytree(user_folders["definitions"] / "wine-cultivar", folder)
    config = yaml.safe_load((folder / "config.yaml").read_text())
    change(config)
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=message):
        read_config(folder / "config.yaml")
    (folder / "config.yaml").write_text("id: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_config(folder / "config.yaml")


def test_rlab_list_tasks_shows_metric_and_data(user_folders, rlab_cache_home) -> None:
    runner = CliRunner()
    result = runner.invoke(
        rlab_app,
        [
            "list", "tasks", "mle",
            "-o", f"benchmark.competitions_dir={user_folders['definitions']}",
            "-o", f"benchmark.data_dir={user_folders['data']}",
        ],
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "mle:flights-late" in result.output and "auc-roc" in result.output
    assert "prepared in" in result.output and "built in" in result.output
    # the lite list's competitions have no data here: one summary line, all of them with --all
    lite = runner.invoke(
        rlab_app, ["list", "tasks", "mle", "-o", "benchmark.lite=true"], env={"COLUMNS": "250"}
    )
    assert lite.exit_code == 0, lite.output
    assert "mle: 22 more tasks not available here" in lite.output
    lite = runner.invoke(
        rlab_app,
        ["list", "tasks", "mle", "--all", "-o", "benchmark.lite=true"],
        env={"COLUMNS": "250"},
    )
    assert lite.exit_code == 0, lite.output
    listed = [line for line in lite.output.splitlines() if line.startswith("│ mle:")]
    assert len(listed) == len(LITE_IDS) == 22
    assert "mle:wdbc-breast-cancer" not in lite.output
    unnamed = runner.invoke(rlab_app, ["list", "tasks", "-o", "benchmark.lite=true"])
    assert unnamed.exit_code == 2 and "apply to one benchmark" in unnamed.output


def test_rlab_mle_command_line(user_folders, prepare, tmp_path) -> None:
    runner = CliRunner()
    folders = [
        "--competitions-dir", str(user_folders["definitions"]),
        "--data-dir", str(user_folders["data"]),
    ]  # fmt: skip
    listed = runner.invoke(mle_app, ["--list", *folders], env={"COLUMNS": "250"})
    assert listed.exit_code == 0 and "mle:wine-cultivar" in listed.output
    # the installed agents: here the testing kit's, whether or not rlab-agents is installed
    kit = {"COLUMNS": "250", "RLAB_PLUGIN_MODULES": "rlab_core.testing.playbook"}
    agents = runner.invoke(mle_app, ["--list-agents"], env=kit)
    assert agents.exit_code == 0 and "ranked-playbook" in agents.output
    nothing = runner.invoke(mle_app, [])
    assert nothing.exit_code == 2 and "Name a competition with -c ID" in nothing.output
    task = prepare("wine-cultivar")
    good = task.competition.sample_submission
    valid = runner.invoke(mle_app, ["-c", "wine-cultivar", "--validate", str(good), *folders])
    assert valid.exit_code == 0 and valid.output.strip() == "Submission is valid."
    bad = tmp_path / "submission.csv"
    bad.write_text(Path(good).read_text().replace("barolo", "", 1))
    invalid = runner.invoke(mle_app, ["-c", "wine-cultivar", "--validate", str(bad), *folders])
    assert invalid.exit_code == 1
    assert "Submission invalid! " in invalid.output and "missing (NaN)" in invalid.output


def test_listing_without_the_folder_still_lists_builtins(rlab_cache_home) -> None:
    listings = MleBenchmark(MleOptions()).list_tasks()
    names = {x.name for x in listings}
    assert {"mle:wdbc-breast-cancer", "mle:uci-handwritten-digits", "mle:diabetes-progression",
            "mle:nyc-flights-air-time"} <= names  # fmt: skip
    assert all(x.available for x in listings if x.name.startswith("mle:wdbc"))
