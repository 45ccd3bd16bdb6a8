"""The knowledge base: lessons harvested from real toy runs, full-text search, safe sharing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from conftest import edit, extra

from rlab_core.final import finalize
from rlab_core.knowledge import (
    KnowledgeBaseError,
    KnowledgePage,
    KnowledgeStore,
    Lesson,
    TaskFingerprint,
    knowledge_path,
)
from rlab_core.knowledge.harvest import lessons_from_run, record_run
from rlab_core.run_folder import open_run
from rlab_core.runner import resume_run

SLOPE_2 = {
    "hypothesis": "Slope 2 is closer to the data.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
}
SLOPE_3 = {
    "hypothesis": "Slope 3 fits the trend.",
    "edits": [edit("SLOPE = 2.0\n", "SLOPE = 3.0\n")],
}
CRASH = {
    "hypothesis": "A crashing change whose fix fails too.",
    "edits": [extra("raise RuntimeError('still broken')")],
    "fix": [edit("raise RuntimeError('still broken')\n", "raise ValueError('fix broke too')\n")],
}
TOY = TaskFingerprint(
    benchmark="toy", task="toy:line", family="toy", metric="rmse", higher_is_better=False
)


def _lesson(run_id: str, node_id: str, hypothesis: str, **fields) -> Lesson:
    return Lesson(
        run_id=run_id,
        node_id=node_id,
        recorded_at=1.0,
        fingerprint=TOY,
        hypothesis=hypothesis,
        status="evaluated",
        **fields,
    )


def test_a_finished_run_writes_its_lessons_back(run_toy, isolated_knowledge_base):
    outcome = run_toy([SLOPE_2, CRASH, SLOPE_3], debug_tries=1)
    store = KnowledgeStore(isolated_knowledge_base)
    lessons = {lesson.hypothesis: lesson for lesson in store.lessons(run_id=outcome.run.run_id)}
    # the seed, three agent nodes and the failed repair: one lesson per finished node
    assert len(lessons) == 5
    slope2 = lessons["Slope 2 is closer to the data."]
    assert slope2.fingerprint.task == "toy:line" and slope2.fingerprint.metric == "rmse"
    assert slope2.fingerprint.higher_is_better is False
    seed = next(lesson for lesson in lessons.values() if lesson.node_kind == "seed")
    # rmse falls by about 1.0: the gain is positive, in the metric's better direction
    assert slope2.verdict == "better" and slope2.parent_id == seed.node_id
    assert slope2.gain == pytest.approx(seed.val_score - slope2.val_score) and slope2.gain > 0.5
    lo, _high = slope2.interval
    assert lo is not None and 0 < lo <= slope2.gain
    assert "+SLOPE = 2.0" in slope2.diff
    crash = lessons["A crashing change whose fix fails too."]
    assert crash.status == "recovered_failure" and crash.val_score is None
    assert crash.failure_cause.startswith("run:") and crash.verdict is None
    repair = lessons["repair: A crashing change whose fix fails too."]
    assert repair.repair_of == crash.node_id and "fix broke too" in repair.failure_cause
    # the lessons can be found by what they say
    hits = store.search("slope trend")
    assert hits[0].kind == "lesson" and "Slope 3" in hits[0].title + hits[0].text
    assert {hit.lesson.node_id for hit in store.search("broken")} >= {crash.node_id}


def test_recording_again_and_resuming_never_duplicate(run_toy, toy_host, isolated_knowledge_base):
    outcome = run_toy([SLOPE_2, SLOPE_3], iterations=1)
    store = KnowledgeStore(isolated_knowledge_base)
    assert len(store.lessons()) == 2
    assert record_run(outcome.run.root, store) == 2
    assert len(store.lessons()) == 2  # an upsert
    resume_run(toy_host, open_run(outcome.run.root), iterations=2)
    assert [lesson.node_id for lesson in store.lessons()] == ["n0000", "n0001", "n0002"]
    assert store.stats()["lessons"] == 3 and store.stats()["runs"] == 1


def test_knowledge_record_false_writes_nothing(run_toy, isolated_knowledge_base):
    run_toy([SLOPE_2], knowledge={"record": False})
    assert KnowledgeStore(isolated_knowledge_base).lessons() == []


def test_final_adds_the_chosen_nodes_val_test_gap_only(run_toy, toy_host, isolated_knowledge_base):
    outcome = run_toy([SLOPE_2, SLOPE_3])
    store = KnowledgeStore(isolated_knowledge_base)
    assert all(lesson.val_test_gap is None for lesson in store.lessons())
    report = finalize(toy_host, outcome.run)
    gaps = {lesson.node_id: lesson.val_test_gap for lesson in store.lessons()}
    assert gaps[report["node"]] == pytest.approx(report["val_test_gap"])
    assert [node for node, gap in gaps.items() if gap is not None] == [report["node"]]
    # a later re-recording (a resume) keeps the gap
    record_run(outcome.run.root, store)
    assert {lesson.node_id: lesson.val_test_gap for lesson in store.lessons()} == gaps


def test_harvest_reads_no_test_number(run_toy, toy_host):
    outcome = run_toy([SLOPE_2])
    report = finalize(toy_host, outcome.run)
    dumped = json.dumps([lesson.model_dump() for lesson in lessons_from_run(outcome.run.root)])
    assert repr(report["test_primary"])[:10] not in dumped
    assert all(lesson.val_test_gap is None for lesson in lessons_from_run(outcome.run.root))


def test_search_ranks_filters_and_returns_pages(tmp_path):
    store = KnowledgeStore(tmp_path / "k.sqlite")
    store.add_lessons(
        [
            _lesson("r1", "n1", "Target encoding of categorical columns", move_id="target-enc"),
            _lesson("r1", "n2", "More trees in the forest"),
        ]
    )
    page = KnowledgePage(
        id="relbench/time-censoring",
        family="relbench",
        title="Time censoring",
        body="Aggregate only rows before the cutoff timestamp, or the features leak the label.",
        tags=["pitfall", "leakage"],
        sources=["https://relbench.stanford.edu"],
    )
    assert store.add_pages([page]) == 1
    assert store.add_pages([page]) == 1 and store.stats()["pages"] == 1  # upsert by id
    hits = store.search("categorical encoding")
    assert [hit.lesson.node_id for hit in hits] == ["n1"]
    assert hits[0].title == "Target encoding of categorical columns" and hits[0].score > 0
    assert [hit.lesson.node_id for hit in store.search("target-enc")] == ["n1"]  # the move too
    (found,) = store.search("leakage cutoff", kind="page")
    assert found.page == page and "cutoff" in found.text
    assert store.search("leakage", family="toy") == []
    # quotes, operators and brackets are plain words, never a query error
    assert [hit.page for hit in store.search('"cutoff* NEAR(x) -')] == [page]
    assert store.pages(family="relbench") == [page]


def test_forget_export_import(tmp_path):
    store = KnowledgeStore(tmp_path / "k.sqlite")
    store.add_lessons([_lesson("r1", "n1", "alpha"), _lesson("r2", "n1", "beta")])
    store.add_pages([KnowledgePage(id="toy/a", family="toy", title="A", body="gamma")])
    assert store.export_jsonl(tmp_path / "team.jsonl") == 3
    assert store.forget_run("r1") == 1
    assert store.search("alpha") == [] and len(store.lessons()) == 1
    other = KnowledgeStore(tmp_path / "other.sqlite")
    assert other.import_jsonl(tmp_path / "team.jsonl") == 3
    assert other.import_jsonl(tmp_path / "team.jsonl") == 3  # idempotent
    assert other.stats()["lessons"] == 2 and other.stats()["pages"] == 1
    assert [hit.lesson.run_id for hit in other.search("alpha")] == ["r1"]


def test_a_bad_import_line_names_the_line_and_writes_nothing(tmp_path):
    source = tmp_path / "bad.jsonl"
    good = {"kind": "page", "page": {"id": "toy/a", "family": "toy", "title": "A", "body": "b"}}
    source.write_text(json.dumps(good) + "\n{not json\n")
    store = KnowledgeStore(tmp_path / "k.sqlite")
    with pytest.raises(KnowledgeBaseError, match=r"Line 2 of .*bad\.jsonl is not a knowledge"):
        store.import_jsonl(source)
    assert store.stats()["pages"] == 0


def test_a_corrupt_file_is_one_clear_sentence(tmp_path):
    path = tmp_path / "k.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(KnowledgeBaseError, match=r"cannot be read .*move the file aside"):
        KnowledgeStore(path).search("anything")


def test_default_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RLAB_KNOWLEDGE", str(tmp_path / "mine.sqlite"))
    assert knowledge_path() == tmp_path / "mine.sqlite"
    monkeypatch.delenv("RLAB_KNOWLEDGE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert knowledge_path() == tmp_path / "data" / "rlab" / "knowledge.sqlite"


def test_similarity_prefers_the_same_task_then_the_same_family():
    sibling = TOY.model_copy(update={"task": "toy:other"})
    stranger = TaskFingerprint(benchmark="mle", task="mle:x", family="mle", metric="auc")
    assert TOY.similarity(TOY) == 1.0
    assert 0.5 < TOY.similarity(sibling) < 1.0
    assert TOY.similarity(stranger) < 0.2
    big = TOY.model_copy(update={"task": "toy:big", "rows": 1_000_000})
    small = TOY.model_copy(update={"task": "toy:small", "rows": 1_000})
    near = TOY.model_copy(update={"task": "toy:near", "rows": 2_000})
    assert small.similarity(near) > small.similarity(big)


WRITER = """
import sys
from rlab_core.knowledge import KnowledgeStore, Lesson, TaskFingerprint
path, run_id, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
fingerprint = TaskFingerprint(benchmark="toy", task="toy:line", family="toy")
store = KnowledgeStore(path)
for number in range(count):
    lesson = Lesson(run_id=run_id, node_id=f"n{number:04d}", recorded_at=number,
                    fingerprint=fingerprint, hypothesis=f"lesson {number}", status="evaluated")
    store.add_lessons([lesson])
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "k.sqlite")
    KnowledgeStore(path).stats()  # both writers then find the tables
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, path, run_id, "80"]) for run_id in "ab"
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    store = KnowledgeStore(path)
    assert store.stats()["lessons"] == 160 and store.stats()["runs"] == 2
    assert len(store.search("lesson", limit=500)) == 160
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_each_test_has_its_own_base(isolated_knowledge_base, tmp_path):
    assert knowledge_path() == isolated_knowledge_base and not isolated_knowledge_base.exists()
    assert isolated_knowledge_base.parent != tmp_path  # the test's own folder holds only its files


def test_a_broken_base_never_fails_a_run(run_toy, isolated_knowledge_base, monkeypatch, caplog):
    from rlab_core.knowledge import harvest

    monkeypatch.setattr(harvest, "_warned", False)
    isolated_knowledge_base.write_bytes(b"not a database" * 200)
    # retrieval off, so only the write-back at the run's end meets the broken file
    outcome = run_toy([SLOPE_2], knowledge={"enabled": False})
    assert outcome.best is not None and outcome.best.hypothesis == SLOPE_2["hypothesis"]
    warnings = [r.getMessage() for r in caplog.records if r.name == harvest.__name__]
    assert len(warnings) == 1 and "lessons were not written" in warnings[0]
    assert (
        str(isolated_knowledge_base) in warnings[0]
        and "the run itself is unaffected" in warnings[0]
    )
    run_toy([SLOPE_2], knowledge={"enabled": False})  # warned once per process
    assert len([r for r in caplog.records if r.name == harvest.__name__]) == 1
