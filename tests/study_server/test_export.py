"""``gridstudy export``: the files, their columns against the data dictionary, scoping."""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from records.store import Store
from study_server.cli import main
from study_server.export import ExportSummary, export
from study_server.export_dictionary import COLUMNS, FILES
from tasks import registry
from tests.sample_study import PLAN, fill


@pytest.fixture
def stored(tmp_path):
    path = tmp_path / "gridstudy.db"
    with Store(f"sqlite:///{path}") as store:
        sample = fill(store)
    return path, sample


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def read_csv(path):
    with path.open(newline="") as rows:
        return list(csv.DictReader(rows))


def test_export_writes_every_file_and_counts_what_it_wrote(stored, tmp_path):
    path, sample = stored
    out = tmp_path / "out"
    summary = export(f"sqlite:///{path}", out)
    assert summary == ExportSummary(out=out, episodes=5, events=17, frames=len(sample.frames),
                                    raw_inputs=1, participants=2)
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    frames = {row["hash"]: row["frame"] for row in read_jsonl(out / "frames.jsonl")}
    assert frames == sample.frames


@pytest.mark.parametrize("study", [None, "pilot"])
def test_an_export_tells_how_far_it_is_in_rows_of_the_files_it_writes(stored, tmp_path, monkeypatch,
                                                                    study):
    """``progress`` is told the rows to write first, then how many are written, every
    :data:`CHUNK` rows and at each file's end; the last it hears is every row written,
    the sum of the lines of the files (a chunk of 2 rows here)."""
    from study_server import export as exporting

    monkeypatch.setattr(exporting, "CHUNK", 2)
    path, _ = stored
    out = tmp_path / "out"
    told: list[tuple[int, int]] = []
    export(str(path), out, study=study, progress=lambda done, total: told.append((done, total)))
    written = sum(len(read_jsonl(out / name)) for name in COLUMNS if name.endswith(".jsonl")) \
        + len(read_csv(out / "episodes.csv"))
    total = told[0][1]
    assert told[0] == (0, total) and told[-1] == (written, written) and total == written
    assert [done for done, _ in told] == sorted(done for done, _ in told)
    assert len(told) > written // 2  # told as it went, not only at the end


def test_every_column_of_every_file_is_in_the_data_dictionary(stored, tmp_path):
    path, _ = stored
    out = tmp_path / "out"
    export(str(path), out)
    found = {name: list(read_jsonl(out / name)[0]) for name in COLUMNS if name.endswith(".jsonl")}
    found["episodes.csv"] = next(csv.reader((out / "episodes.csv").open()))
    found["events.parquet"] = pq.read_schema(out / "events.parquet").names
    assert found == COLUMNS
    dictionary = json.loads((out / "data_dictionary.json").read_text())
    assert {name: list(d["columns"]) for name, d in dictionary.items()} == COLUMNS
    markdown = (out / "data_dictionary.md").read_text()
    assert all(f"## {name}" in markdown for name in COLUMNS)
    assert "| `frame_hash` | text |" in markdown


def test_parquet_and_jsonl_hold_the_same_event_rows(stored, tmp_path):
    path, sample = stored
    out = tmp_path / "out"
    export(str(path), out)
    rows = read_jsonl(out / "events.jsonl")
    assert pq.read_table(out / "events.parquet").to_pylist() == rows
    assert [(r["episode_id"], r["seq"]) for r in rows][:6] == [
        (sample.human, 0), (sample.human, 1), (sample.human, 2), (sample.human, 3),
        (sample.excluded_participant, 0), (sample.excluded_participant, 1)]
    refused = [r for r in rows if not r["applied"]]
    assert [(r["episode_id"], r["raw_reply"], r["parse_valid"], r["tick"]) for r in refused] == [
        (sample.llm, "I jump!", False, None)]


def test_episode_summary_rows(stored, tmp_path):
    path, sample = stored
    out = tmp_path / "out"
    export(str(path), out)
    rows = {int(r["episode_id"]): r for r in read_csv(out / "episodes.csv")}
    human = rows[sample.human]
    assert {k: human[k] for k in ("agent_kind", "participant_id", "agent_run_id", "status",
                                  "score", "included", "n_events", "info")} == {
        "agent_kind": "human", "participant_id": "1", "agent_run_id": "", "status": "done",
        "score": "1.0", "included": "true", "n_events": "4",
        "info": json.dumps({"environment_version": registry.problem_version(PLAN), "resets": 0},
                           separators=(",", ":"))}
    assert (rows[sample.llm]["agent_kind"], rows[sample.llm]["model"]) == ("llm", "m-1")
    assert rows[sample.excluded_participant]["participant_exclusion_reason"] == (
        "failed 2 attention checks")
    assert (rows[sample.excluded_attempt]["included"],
            rows[sample.excluded_attempt]["exclusion_reason"]) == ("false", "idle for 130 s")
    assert (rows[sample.abandoned]["status"], rows[sample.abandoned]["ended_at"] != "") == (
        "abandoned", True)
    assert human["started_at"].endswith("+00:00")


def test_participants_are_exported_with_their_prolific_ids(stored, tmp_path):
    """The lab's own export carries the ids it pays with; --pseudonymize (test_payments)
    hides them before sharing."""
    path, _ = stored
    out = tmp_path / "out"
    export(str(path), out)
    participants = read_jsonl(out / "participants.jsonl")
    assert [(p["id"], p["status"], p["external_id"]) for p in participants] == [
        (1, "complete", "P1"), (2, "excluded", "P2")]
    runs = read_jsonl(out / "agent_runs.jsonl")
    assert [(r["id"], r["agent_kind"], r["config"]) for r in runs] == [
        (1, "llm", {"temperature": 0}), (2, "random", {})]


def test_study_option_exports_one_study_only(stored, tmp_path):
    path, sample = stored
    out = tmp_path / "other"
    summary = export(str(path), out, study="other")
    frames_used = {r["frame_hash"] for r in read_jsonl(out / "events.jsonl")}
    assert (summary.episodes, summary.events, summary.raw_inputs) == (1, 2, 0)
    assert [int(r["episode_id"]) for r in read_csv(out / "episodes.csv")] == [sample.abandoned]
    assert {r["hash"] for r in read_jsonl(out / "frames.jsonl")} == frames_used
    assert [r["id"] for r in read_jsonl(out / "agent_runs.jsonl")] == [2]
    assert read_jsonl(out / "participants.jsonl") == []


def test_an_empty_database_exports_empty_typed_files(tmp_path):
    path = tmp_path / "empty.db"
    Store(str(path)).close()
    out = tmp_path / "out"
    assert export(str(path), out).events == 0
    assert pq.read_table(out / "events.parquet").num_rows == 0
    assert (out / "events.jsonl").read_text() == ""
    assert (out / "episodes.csv").read_text().splitlines() == [",".join(COLUMNS["episodes.csv"])]


def test_command_line(stored, tmp_path):
    path, _ = stored
    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(main, ["export", "--db", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"wrote 5 episodes, 17 events, {len(list((out / 'frames.jsonl').open()))} frames, "
        f"1 raw inputs and 2 participants to {out}\n")
    assert "export with --pseudonymize before sharing" in result.stderr
    missing = runner.invoke(main, ["export", "--db", str(tmp_path / "nope.db"), "--out", str(out)])
    assert (missing.exit_code, "no database at" in missing.output) == (1, True)
    assert not (tmp_path / "nope.db").exists()
    result = runner.invoke(main, ["export", "--out", str(out)], env={"DATABASE_URL": str(path)})
    assert result.exit_code == 0, result.output


def test_an_export_stopped_by_a_full_disk_leaves_the_earlier_export_whole(stored, tmp_path):
    """A real full filesystem under a second, larger export into the same folder (a study
    exported again as it grows): it says so in one line, removes what it wrote, and the
    folder still holds the first export, whole and loadable. Before, it rewrote the
    folder's files in place, stopped at the first that grew, and left that one cut
    beside the first export's others: the report read the mix without a word."""
    from analysis.load import load
    from tests.study_server.conftest import own_filesystem

    path, _ = stored
    runner = CliRunner()
    with own_filesystem(tmp_path / "disk", "1m") as disk:
        out = disk / "export"
        first = runner.invoke(main, ["export", "--db", str(path), "--out", str(out),
                                     "--study", "other"])
        assert first.exit_code == 0, first.output
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        records = load(out).records
        with (disk / "ballast").open("wb", buffering=0) as ballast, pytest.raises(OSError):
            while True:  # the disk full to its last block
                ballast.write(b"\0" * 4096)
        second = runner.invoke(main, ["export", "--db", str(path), "--out", str(out)])
        assert second.exit_code == 1
        assert second.stderr.splitlines()[-1] == (
            f"Error: the export stopped: No space left on device; what it had written is "
            f"removed and {out} is as it was")
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging left
        assert load(out).records == records


def test_a_folder_whose_export_stopped_as_it_moved_its_files_in_is_not_loaded(stored, tmp_path):
    """The new files replace the earlier export's one by one, under a note saying so; a
    process killed among the moves leaves the note, and the report refuses the folder."""
    from analysis.cli import report
    from records.schema import EXPORT_UNFINISHED

    path, _ = stored
    out = tmp_path / "export"
    export(f"sqlite:///{path}", out)
    (out / EXPORT_UNFINISHED).write_text("stopped")
    result = CliRunner().invoke(report, ["--db", str(out), "--out", str(tmp_path / "report"),
                                         "--all-studies"])
    assert result.exit_code == 1
    assert "holds an export that did not finish" in result.output
    assert "run gridstudy export again" in result.output
    export(f"sqlite:///{path}", out)  # the next export, whole, takes the note away
    assert not (out / EXPORT_UNFINISHED).exists()
    again = CliRunner().invoke(report, ["--db", str(out), "--out", str(tmp_path / "r"), "--all-studies"])
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_an_export_of_a_live_study_is_of_one_moment(tmp_path, database):
    """The server goes on writing while a study is exported (a researcher's interim
    look): rows written after the export began are not in it, so each attempt's
    n_events is the events exported for it. Before, every file was read as of when its
    own query ran: a game's next tick, written once episodes.csv was read, was in
    events.jsonl and not counted in episodes.csv."""
    from sqlalchemy import create_engine, text

    from study_server import services

    postgres = None
    if database == "sqlite":
        url = f"sqlite:///{tmp_path / 'gridstudy.db'}"
    else:
        base = Path(tempfile.mkdtemp(prefix="gridstudy-live-export-"))
        base.chmod(0o711)  # PostgreSQL runs as its own user when the tests run as root
        postgres = services.start_postgres(base / "postgres", durable=False)
        url = services.create_database(postgres.port, "live")
    try:
        with Store(url) as store:
            fill(store)
        other, out, written = create_engine(url), tmp_path / "out", []

        def meanwhile(done: int, total: int) -> None:
            if done and not written:  # episodes.csv is read: a tick comes, from elsewhere
                with other.begin() as connection:
                    connection.execute(text(
                        "INSERT INTO event (episode_id, seq, study_id, participant_id,"
                        " agent_run_id, problem_id, phase, tick, action, source, applied,"
                        " server_time, frame_hash) SELECT episode_id, seq + 1, study_id,"
                        " participant_id, agent_run_id, problem_id, phase, tick + 1, 'noop',"
                        " 'auto', true, server_time + 0.1, frame_hash FROM event"
                        " ORDER BY episode_id, seq DESC LIMIT 1"))
                written.append(done)

        export(url, out, progress=meanwhile)
        other.dispose()
    finally:
        if postgres is not None:
            postgres.stop()
            shutil.rmtree(base, ignore_errors=True)
    assert written
    events = read_jsonl(out / "events.jsonl")
    for episode in read_csv(out / "episodes.csv"):
        assert int(episode["n_events"]) == sum(
            e["episode_id"] == int(episode["episode_id"]) for e in events), episode
    assert len(events) == 17


def test_the_folder_of_an_export_killed_as_it_wrote_is_removed_by_the_next(stored, tmp_path):
    """An export stopped by SIGTERM or ``kill -9`` while it writes leaves its hidden
    folder inside the export's, with participants' Prolific ids in it; the next export
    there removes it, and leaves one whose process still runs (another export under
    way). A folder whose process number was given again to a process that started
    later is removed too: before, it stayed as long as that other process ran."""
    import os
    import subprocess

    from study_server.export import owner_mark

    path, _ = stored
    out = tmp_path / "out"
    dead = subprocess.Popen(["true"])  # a process that has ended
    dead.wait()
    left = out / f".export-{owner_mark(dead.pid)}-k1ll3d"
    running = out / f".export-{owner_mark()}-und3rway"
    reused = out / f".export-{os.getpid()}.1-n0wsomeone3lse"  # this number, started at boot
    older = out / f".export-{os.getpid()}-b3foremarks"  # named by an earlier version
    assert owner_mark() != f"{os.getpid()}.1"
    for folder in (left, running, reused, older):
        folder.mkdir(parents=True)
        (folder / "participants.jsonl").write_text('{"external_id": "P1"}\n')
    export(f"sqlite:///{path}", out)
    assert not left.exists() and running.exists() and older.exists()
    assert not reused.exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(FILES)


def test_an_export_that_cannot_move_a_file_in_says_the_folder_mixes_two(stored, tmp_path):
    """A move into the folder that fails (here a folder sits where a file goes) leaves
    files of two exports: the command says so, not that the folder is as it was, and the
    report refuses the folder until an export finishes."""
    from analysis.load import load
    from records.schema import EXPORT_UNFINISHED

    path, _ = stored
    out = tmp_path / "out"
    (out / "participants.jsonl").mkdir(parents=True)
    (out / "participants.jsonl" / "notes.txt").write_text("a researcher's folder")
    result = CliRunner().invoke(main, ["export", "--db", str(path), "--out", str(out)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith(
        f"Error: the export stopped as it moved its files into {out}: ")
    assert result.stderr.endswith(
        f"the folder holds files of two exports (its {EXPORT_UNFINISHED} says so): run the "
        "export again\n")
    with pytest.raises(ValueError, match="did not finish"):
        load(out)


def test_an_export_of_a_study_that_is_not_there_names_those_that_are(stored, tmp_path):
    """A mistyped --study: one line naming the studies, and no folder. Before, it wrote
    an empty export and said "wrote 0 episodes"."""
    path, _ = stored
    out = tmp_path / "export"
    result = CliRunner().invoke(main, ["export", "--db", str(path), "--out", str(out),
                                       "--study", "pilto"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == ("Error: no study 'pilto' in the database (did "
                                              "you mean 'pilot'?); it holds: other, pilot")
    assert not out.exists()
