"""The benchmark table script end to end: a research run on a folder with the real file names."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from rlab_kuairand import sample
from rlab_kuairand.playbook import MOVES

from rlab_core.journal import replay

SCRIPT = Path(__file__).parents[1] / "bench" / "kuairand_table.py"


def _bench():
    spec = importlib.util.spec_from_file_location("kuairand_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_the_real_data_the_table_exits_2_with_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = _bench().main(["--task", "pure", "--data-dir", str(tmp_path), "--no-download"])
    assert code == 2
    message = capsys.readouterr().err
    assert "10439422" in message and "log_standard_4_08_to_4_21_pure.csv" in message


@pytest.mark.slow
def test_the_table_of_a_search_on_a_folder_with_the_real_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``--task pure --data-dir PATH`` does on real Pure data, on small generated files."""
    sample.generate(tmp_path / "KuaiRand-Pure" / "data", 80, 300, seed=5, variant="pure")
    monkeypatch.setenv("RLAB_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RLAB_KUAIRAND_DIR", raising=False)
    bench = _bench()
    command = [
        "--task",
        "pure",
        "--no-download",
        "--iterations",
        "2",
        "--threads",
        "1",
        "--agent",
        "ranked-playbook",  # the testing kit's: this plugin's tests need no agents plugin
        "--data-dir",
    ]
    args = bench.parser().parse_args([*command, str(tmp_path)])
    result = bench.figures(args, tmp_path)
    assert result["task"] == "kuairand:pure" and not result["synthetic"]
    rows = result["rows_table"]
    assert sorted(r["model"] for r in rows[:3]) == ["fm", "history_lgbm", "popularity"]
    for row in rows:
        for split in ("valid", "test"):
            assert 0.3 < row[split]["primary"] < 1.0, (row["model"], split)
            assert row[split]["primary"] == pytest.approx(
                (row[split]["GAUC"] + row[split]["nDCG@5"]) / 2, abs=1e-4
            )
        assert row["wall_s"] > 0
    assert rows[-1]["valid"]["primary"] >= max(r["valid"]["primary"] for r in rows[:3])
    run = result["run"]
    assert run["iterations"] == 2 and run["audit_clean"] and run["submission"]
    text = bench.table(result)
    assert "SYNTHETIC" not in text and text.count("\n| ") == 5  # header + 4 models
    # the moves are the playbook's; test predictions live only in the private folder
    (root,) = (tmp_path / "runs").iterdir()
    tree = replay(root / "journal.jsonl").tree
    made = [n.move_id for n in tree.nodes.values() if n.iteration > 0]
    assert len(made) == 2 and set(made) <= {m.id for m in MOVES}, made
    assert list((root / "private").rglob("test_predictions.npy"))
    assert not list((root / "nodes").rglob("test_predictions.npy"))
