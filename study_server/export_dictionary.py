"""The data dictionary of an export: every file, every column, its type and meaning.

The columns and their documentation come from :mod:`records.schema`, where every stored
field is declared once; this module only says which fields each file holds, in the
order the exporter writes them. ``data_dictionary.json`` and ``data_dictionary.md`` ship
with every export, and a test checks every file's columns against them.
"""

from __future__ import annotations

import json
from pathlib import Path

from records import schema

FRAME_FILE_FIELDS = (
    schema.FRAME.field("hash"),
    schema.Field("frame", schema.JSON, schema.FRAME.field("data").doc),
)
"""frames.jsonl holds each frame's data decoded, under the name ``frame``."""

FILES_HOLD: dict[str, tuple[str, tuple[schema.Field, ...]]] = {
    "events.jsonl": ("One JSON object per event, ordered by episode_id then seq.",
                     schema.EVENT.without("id")),
    "events.parquet": ("The same rows as events.jsonl, typed, for dataframes.",
                       schema.EVENT.without("id")),
    "episodes.csv": ("One row per attempt at a problem; booleans are true/false, empty "
                     "cells are nulls, info is JSON.", schema.EPISODE_VIEW.fields),
    "frames.jsonl": (schema.FRAME.doc, FRAME_FILE_FIELDS),
    "raw_inputs.jsonl": ("Inputs that arrived but were not applied.",
                         schema.RAW_INPUT.without("id")),
    "agent_runs.jsonl": ("One object per agent run.", schema.AGENT_RUN.fields),
    "signals.jsonl": ("The data-quality signals participants' browsers reported (tab hidden, "
                      "focus lost, idle, key-mashing, the device), in the order they "
                      "arrived. Each attempt's flags made of them are in episodes.csv "
                      "info.quality, each participant's in participants.jsonl data.quality.",
                      schema.SIGNAL.without("id")),
    "participants.jsonl": ("One object per participant, with its Prolific ids (external_id "
                           "is the PROLIFIC_PID), the code given and the visit's start and "
                           "end. An export made with --pseudonymize holds keyed hashes "
                           "(h-...) in place of every id.", schema.PARTICIPANT.fields),
}
"""File name -> (what it holds, its fields in the order written)."""

COLUMNS = {name: [f.name for f in fields] for name, (_, fields) in FILES_HOLD.items()}
"""File name -> its columns, in the order written."""

FILES = (*FILES_HOLD, "data_dictionary.json", "data_dictionary.md")
"""Every file of an export directory."""


def write_dictionary(out: Path) -> None:
    """Write data_dictionary.json and data_dictionary.md into ``out``."""
    data = {
        name: {"description": about,
               "columns": {f.name: {"type": f.type, "description": f.doc} for f in fields}}
        for name, (about, fields) in FILES_HOLD.items()
    }
    (out / "data_dictionary.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / "data_dictionary.md").write_text(dictionary_markdown())


def dictionary_markdown() -> str:
    lines = ["# Data dictionary", "",
             "Every file of this gridstudy export and every column in it.", ""]
    for name, (about, fields) in FILES_HOLD.items():
        lines += [f"## {name}", "", about, "", "| column | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{f.name}` | {f.type} | {f.doc} |" for f in fields]
        lines.append("")
    lines += ["## In Python", "",
              "`analysis.load.load(PATH)` gives episodes.csv, "
              "events.jsonl (and the model turns apart) and participants.jsonl as pandas "
              "DataFrames with the columns above, typed (integer: Int64, float: float64, "
              "text: string, boolean: boolean, timestamp: UTC datetime64, JSON: objects), "
              "plus `agent` (the report's name for who played) and `counted` (the attempt "
              "enters the report's tables). `examples/analysis.ipynb` shows them in use.", ""]
    return "\n".join(lines)
