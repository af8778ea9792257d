"""The record as pandas DataFrames: typed columns from the schema, the same numbers as
the report's tables, read from a database and from an export; and the example notebook,
executed cell by cell."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from analysis import tables
from analysis.dataframes import participants, table
from analysis.load import load
from analysis.readings import agent_of
from records.store import Store
from study_server.export import export
from tests.sample_study import fill

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "analysis.ipynb"


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    path = tmp_path_factory.mktemp("frames") / "g.db"
    with Store(f"sqlite:///{path}") as store:
        fill(store)
    return path


def test_load_gives_tables_and_records(database):
    data = load(database)
    assert all(isinstance(getattr(data, name), pd.DataFrame)
               for name in ("episodes", "events", "turns", "participants"))
    assert list(data.episodes["episode_id"]) == [e.episode_id for e in data.records]
    assert len(data.events) == sum(len(e.events) for e in data)
    assert not hasattr(data, "frames")  # grid frames are data.grid_frames: one meaning


def test_columns_are_typed_from_the_schema(database):
    f = load(str(database))  # the dataset's own DataFrames
    assert str(f.episodes["episode_id"].dtype) == "Int64"
    assert str(f.episodes["score"].dtype) == "float64"
    assert str(f.episodes["included"].dtype) == "boolean"
    assert str(f.events["action"].dtype) == "string"
    assert isinstance(f.episodes["started_at"].dtype, pd.DatetimeTZDtype)
    assert set(f.turns["source"]) == {"agent"} and len(f.turns) < len(f.events)
    assert f.events["agent"].isna().sum() == 0


def test_the_frames_give_the_report_s_numbers(database):
    data = f = load(str(database))
    counted = f.episodes[f.episodes["counted"]].groupby("agent").size().to_dict()
    assert counted == Counter(agent_of(e) for e in data.included())
    reported = table(tables.attempt_outcomes, data).set_index("agent")["attempts"].to_dict()
    assert f.episodes.groupby("agent").size().to_dict() == reported
    by_task = table(tables.task_type_scores, data).set_index(["challenge", "agent"])["score"]
    models = f.episodes[f.episodes["counted"] & (f.episodes["agent"] != "human")]
    mine = models.assign(score=models["score"].fillna(0.0)).groupby(
        ["challenge", "agent", "problem_id"])["score"].mean().groupby(["challenge", "agent"]).mean()
    assert mine.to_dict() == {k: v for k, v in by_task.to_dict().items() if k[1] != "human"}


def test_participants_read_the_same_from_a_database_and_an_export(database, tmp_path):
    export(f"sqlite:///{database}", tmp_path / "export")
    from_db, from_export = participants(f"sqlite:///{database}"), participants(str(tmp_path / "export"))
    assert list(from_db["external_id"]) == list(from_export["external_id"]) == ["P1", "P2"]
    assert list(from_db["status"]) == ["complete", "excluded"]
    assert load(str(tmp_path / "export")).episodes.shape[0] == len(load(str(database)))
    assert list(load(str(tmp_path / "export")).participants["status"]) == ["complete", "excluded"]


def test_the_example_notebook_runs(database, tmp_path, monkeypatch):
    monkeypatch.setenv("GRIDSTUDY_DATA", str(database))
    monkeypatch.setenv("GRIDSTUDY_FIGURES", str(tmp_path / "figures"))
    notebook = json.loads(NOTEBOOK.read_text())
    namespace: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [
        "score-by-task-type.pdf", "score-by-task-type.png", "score-by-task-type.svg"]
    assert namespace["models"]  # the comparison ran on the models' rows
