"""The record as pandas DataFrames, for analyses in a notebook.

``load(source)`` gives them as the dataset's attributes (built here, on first use), four
tables with typed columns, each column declared once in :mod:`records.schema` (so the
export's data dictionary documents them):

* ``episodes``: one row per attempt (the fields of ``episodes.csv``), plus ``agent`` (the
  report's name for who played it: ``human``, ``llm:M [settings]``) and ``counted``
  (whether it enters the report's tables);
* ``events``: one row per event (``events.jsonl``), plus ``agent``;
* ``turns``: the model turns alone (events whose ``source`` is ``agent``), with their
  replies, tokens, cost and latency;
* ``participants``: one row per participant of the selected studies
  (``participants.jsonl``).

Types: integers are pandas' nullable ``Int64``, numbers ``float64``, texts ``string``,
booleans the nullable ``boolean``, timestamps UTC ``datetime64``, JSON fields Python
objects. And ``table(function, dataset)`` is any report table (``analysis.tables``) as a
DataFrame::

    from analysis.load import load
    from analysis.dataframes import table
    from analysis import tables
    data = load("demo-data/gridstudy.db")
    counted = data.episodes[data.episodes["counted"]]  # no practice, no excluded attempt
    counted["score"].fillna(0.0).groupby([counted["challenge"], counted["agent"]]).mean()
    table(tables.task_type_scores, data)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.dataset import EVENT_FIELDS, Dataset, event_values
from analysis.readings import Row, agent_of
from records import schema

DTYPES = {schema.INT: "Int64", schema.FLOAT: "float64", schema.TEXT: "string",
          schema.BOOL: "boolean", schema.JSON: "object"}
"""The pandas type of each schema type (timestamps are parsed to UTC datetimes)."""


@dataclass
class DataFrames:
    """The four tables of a dataset."""

    episodes: pd.DataFrame
    events: pd.DataFrame
    turns: pd.DataFrame
    participants: pd.DataFrame


def typed(rows: Iterable[dict[str, Any]] | dict[str, list[Any]], fields: Iterable[schema.Field],
          extra: dict[str, str] | None = None) -> pd.DataFrame:
    """A DataFrame of ``rows`` (or of columns: name -> values) with one column per field,
    typed from the schema, then the ``extra`` columns (name -> pandas type)."""
    fields = list(fields)
    extra = extra or {}
    names = [f.name for f in fields] + list(extra)
    if isinstance(rows, dict):
        frame = pd.DataFrame({name: rows[name] for name in names}, columns=names)
    else:
        frame = pd.DataFrame.from_records(list(rows), columns=names)
    for f in fields:
        if f.type == schema.TIME:
            frame[f.name] = pd.to_datetime(frame[f.name], utc=True, format="mixed")
        elif f.type == schema.JSON:
            frame[f.name] = frame[f.name].astype("object")
        else:
            frame[f.name] = frame[f.name].astype(DTYPES[f.type])
    for name, kind in extra.items():
        frame[name] = frame[name].astype(kind)
    return frame


def dataframes(dataset: Dataset) -> DataFrames:
    """The dataset's episodes, events, model turns and participants as DataFrames."""
    episode_rows = []
    event_columns: dict[str, list[Any]] = {f.name: [] for f in EVENT_FIELDS} | {"agent": []}
    for episode in dataset:
        agent = agent_of(episode)
        episode_rows.append({**{f.name: getattr(episode, f.name) for f in schema.EPISODE_VIEW.fields},
                             "counted": episode.is_included})
        for f in EVENT_FIELDS:
            event_columns[f.name].extend(event_values(episode, f.name))
        event_columns["agent"].extend([agent] * len(episode.events))
    episodes = typed(episode_rows, schema.EPISODE_VIEW.fields,
                     {"counted": "boolean"})
    events = typed(event_columns, EVENT_FIELDS, {"agent": "string"})
    turns = events[events["source"] == "agent"].reset_index(drop=True)
    return DataFrames(episodes, events, turns, dataset.participants)


def participants(source: str) -> pd.DataFrame:
    """The participants of the database or export directory ``source``."""
    fields = schema.PARTICIPANT.fields
    path = Path(source)
    if path.is_dir():
        file = path / "participants.jsonl"
        rows = [json.loads(line) for line in file.open()] if file.exists() else []
        return typed(rows, fields)
    from sqlalchemy import MetaData, Table, select

    from records.database import open_existing

    engine = open_existing(source)
    try:
        with engine.connect() as connection:
            table_ = Table("participant", MetaData(), autoload_with=connection)
            rows = [dict(r) for r in connection.execute(select(table_)).mappings()]
    finally:
        engine.dispose()
    return typed(rows, fields)


def table(function: Callable[..., list[Row]], dataset: Dataset, **options: Any) -> pd.DataFrame:
    """A report table (a function of :mod:`analysis.tables`) as a DataFrame."""
    return pd.DataFrame(function(dataset, **options))
