"""analysis.load: the database and an export give the same records."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from datetime import UTC

import pytest

from analysis.dataset import EventRecord
from analysis.load import load
from records import schema
from records.store import Store
from study_server.export import export
from tasks import registry
from tests.sample_study import PLAN, fill


@pytest.fixture
def stored(tmp_path):
    path = tmp_path / "gridstudy.db"
    with Store(f"sqlite:///{path}") as store:
        sample = fill(store)
    out = tmp_path / "export"
    export(str(path), out)
    return f"sqlite:///{path}", out, sample


def test_database_and_export_load_equal_records(stored):
    url, out, sample = stored
    from_db, from_files = load(url), load(out)
    assert from_db.records == from_files.records
    assert [e.episode_id for e in from_db] == [
        sample.human, sample.excluded_participant, sample.llm, sample.abandoned,
        sample.excluded_attempt]
    hashes = {ev.frame_hash for e in from_db for ev in e.events if ev.frame_hash}
    assert {h: from_db.frame(h) for h in hashes} == {h: from_files.frame(h) for h in hashes}
    assert {h: from_db.frame(h) for h in hashes} == sample.frames


def test_an_attempts_frames_are_fetched_from_the_database_together(stored):
    """Progress rate reads every frame of every test phase: fetched one query per frame,
    83,000 queries took a third of a Q-learner's report; now one per 500 frames."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    url, out, _ = stored
    from_db, from_files = load(url), load(out)
    record = max(from_db, key=lambda e: len(e.events))
    keys = [ev.frame_hash for ev in record.events if ev.frame_hash]
    assert len(set(keys)) > 2 and len(keys) > len(set(keys))  # repeats are asked for too
    statements = []

    def count(connection, cursor, statement, *args):
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        frames = record.frames(keys)
        again = record.frames(keys)
    finally:
        event.remove(Engine, "before_cursor_execute", count)
    assert frames == again == [from_files.frame(key) for key in keys]
    assert len([s for s in statements if "FROM frame" in s]) == 1
    with pytest.raises(KeyError, match="not in the database"):
        record.frames([keys[0], "0" * 16])


def test_a_live_database_is_loaded_as_of_one_moment(stored):
    """The analysis of a study as it runs reads every table as of its first read: a tick
    written once the attempts are read is not among their events (before, it was, beside
    the attempt's row as it was before that tick)."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    url, _, _ = stored
    before = {e.episode_id: len(e.events) for e in load(url)}
    written = []

    def meanwhile(connection, cursor, statement, *args):
        if "FROM episode" in statement and not written:
            with sqlite3.connect(url.removeprefix("sqlite:///")) as other:
                other.execute(
                    "INSERT INTO event (episode_id, seq, problem_id, phase, tick, action, source,"
                    " applied, server_time) SELECT episode_id, seq + 1, problem_id, phase,"
                    " tick + 1, 'noop', 'auto', 1, server_time + 0.1 FROM event"
                    " ORDER BY episode_id, seq DESC LIMIT 1")
            written.append(statement)

    event.listen(Engine, "after_cursor_execute", meanwhile)
    try:
        during = {e.episode_id: len(e.events) for e in load(url)}
    finally:
        event.remove(Engine, "after_cursor_execute", meanwhile)
    assert written and during == before
    assert sum(len(e.events) for e in load(url)) == sum(before.values()) + 1


def test_a_sqlite_file_path_loads_like_its_url(stored):
    url, _, _ = stored
    assert load(url.removeprefix("sqlite:///")).records == load(url).records


def test_jsonl_events_load_like_parquet(stored):
    _, out, _ = stored
    with_parquet = load(out).records
    (out / "events.parquet").unlink()
    assert load(out).records == with_parquet


def test_records_are_typed_and_say_who_acted(stored):
    url, _, sample = stored
    episodes = {e.episode_id: e for e in load(url)}
    human = episodes[sample.human]
    assert (human.agent_kind, human.is_human, human.score, human.info) == (
        "human", True, 1.0, {"resets": 0, schema.VERSION_KEY: registry.problem_version(PLAN)})
    assert human.actions == ["right", "go-to-test", "right", "right"]
    assert human.started_at.tzinfo == UTC and human.ended_at >= human.started_at
    assert human.events[0] == EventRecord(
        episode_id=sample.human, seq=0, study_id="pilot", participant_id=1, agent_run_id=None,
        problem_id=PLAN.id, phase="interaction", tick=0, action="right", source="input",
        applied=True, server_time=1000.0, client_time=999.5,
        frame_hash=human.events[0].frame_hash, next_phase="interaction", score=None,
        prompt_tokens=None, completion_tokens=None, cost=None, raw_reply=None,
        parse_valid=None, latency=None, error=None, prompt=None, system_prompt=None,
        reasoning=None, finish_reason=None, retries=None, trimmed=None)
    assert human.frame(human.events[0]) == [
        ["black", "gold", "black", "black", "black"], *[["black"] * 5] * 4]
    llm = episodes[sample.llm]
    assert (llm.agent_kind, llm.model, llm.actions) == ("llm", "m-1", ["go-to-test", "right",
                                                                     "right"])
    assert (llm.agent_config, human.agent_config) == ({"temperature": 0}, {})
    refused = llm.events[2]
    assert (refused.applied, refused.action, refused.parse_valid, refused.raw_reply,
            refused.cost) == (False, None, False, "I jump!", 0.0003)
    assert llm.frame(refused) is None


def test_exclusion_reasons_are_kept(stored):
    """People are excluded by rules; a model's abandoned attempt is not excluded: it
    counts, scoring 0."""
    url, _, sample = stored
    dataset = load(url)
    assert dataset.excluded() == {
        sample.excluded_participant: ("participant excluded: failed 2 attention checks",),
        sample.excluded_attempt: ("idle for 130 s",),
    }
    assert [e.episode_id for e in dataset.included()] == [sample.human, sample.llm,
                                                          sample.abandoned]


@pytest.mark.parametrize("options, roles", [
    ({"study": "other"}, ["abandoned"]),
    ({"study": ["pilot", "other"], "included_only": True}, ["human", "llm", "abandoned"]),
    ({"problems": ["test/walker-plan-far"]}, ["abandoned"]),
    ({"agent_kind": "human"}, ["human", "excluded_participant", "excluded_attempt"]),
    ({"agent_kind": ["llm", "random"]}, ["llm", "abandoned"]),
    ({"agent_kind": "human", "included_only": True}, ["human"]),
    ({"study": "nobody"}, []),
])
def test_selection_is_the_same_from_both_sources(stored, options, roles):
    url, out, sample = stored
    expected = [getattr(sample, role) for role in roles]
    assert [e.episode_id for e in load(url, **options)] == expected
    assert [e.episode_id for e in load(out, **options)] == expected
    assert load(url, **options).records == load(out, **options).records


def test_by_problem_groups_episodes(stored):
    url, _, sample = stored
    groups = load(url).by_problem()
    assert {k: [e.episode_id for e in v] for k, v in groups.items()} == {
        PLAN.id: [sample.human, sample.excluded_participant, sample.llm, sample.excluded_attempt],
        "test/walker-plan-far": [sample.abandoned],
    }


def test_sources_that_are_neither_say_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a database URL"):
        load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="missing episodes.csv, frames.jsonl"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError, match="no database at"):
        load(f"sqlite:///{tmp_path / 'missing.db'}")
    sqlite3.connect(tmp_path / "other.db").execute("create table t (x)").connection.close()
    with pytest.raises(ValueError, match="not a gridstudy database: no table"):
        load(f"sqlite:///{tmp_path / 'other.db'}")


def test_loading_never_imports_the_server(stored):
    url, out, _ = stored
    code = (
        "import sys\nfrom analysis.load import load\n"
        f"load({url!r}); load({str(out)!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'study_server'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout == "[]\n"


@pytest.mark.parametrize("which", ["database", "export"])
def test_events_are_held_as_arrays_and_codes(stored, which):
    """Ten million events must fit in a laptop's memory: no column is a list of Python
    objects, and a frame hash seen in several episodes is one object."""
    from analysis.columns import Coded, Numbers, Same

    url, out, _ = stored
    data = load(url if which == "database" else out)
    kinds = {type(column) for e in data for column in e.events.columns.values()}
    assert kinds <= {Same, Numbers, Coded} and Coded in kinds and Numbers in kinds
    seen: dict[str, list[int]] = {}
    for episode in data:
        for key in set(episode.events.column("frame_hash")) - {None}:
            seen.setdefault(key, []).append(id(next(k for k in episode.events.column("frame_hash")
                                                    if k == key)))
    shared = [ids for ids in seen.values() if len(ids) > 1]
    assert shared and all(len(set(ids)) == 1 for ids in shared)
