"""The data dictionary of an export: every file, every column, its type and meaning.

One table here is both the documentation an export ships (``data_dictionary.json`` and
``data_dictionary.md``) and the column order the exporter writes, so the two cannot
drift apart; a test checks every file's columns against it.
"""

from __future__ import annotations

import json
from pathlib import Path

INT, FLOAT, TEXT, BOOL, TIME, JSON = (
    "integer", "float", "text", "boolean", "timestamp (ISO 8601, UTC)", "JSON")

_EPISODE = "the attempt (episodes.csv episode_id)"
_WHO = {
    "study_id": (TEXT, "Study slug; empty for runs outside a study."),
    "participant_id": (INT, "Participant (participants.jsonl id); empty for agents."),
    "agent_run_id": (INT, "Agent run (agent_runs.jsonl id); empty for people."),
}

EVENT_COLUMNS = {
    "episode_id": (INT, f"Episode: {_EPISODE}."),
    "seq": (INT, "Order of the row within its episode (applied actions and refused turns)."),
    **_WHO,
    "problem_id": (TEXT, "Registered problem id."),
    "phase": (TEXT, "Phase the action was applied in: interaction, test, select."),
    "tick": (INT, "The episode's action index; empty for a turn that was not applied."),
    "action": (TEXT, "Canonical action text (noop, up, click X Y, go-to-test ...); empty "
                     "when a model reply did not parse."),
    "source": (TEXT, "input (a person pressed it), auto (the clock's noop), agent."),
    "applied": (BOOL, "Whether the environment applied the action."),
    "server_time": (FLOAT, "Unix seconds when the server applied or refused it."),
    "client_time": (FLOAT, "Unix seconds of the key press on the participant's clock, "
                           "corrected by the estimated offset; empty for agents."),
    "frame_hash": (TEXT, "Key into frames.jsonl: the frame after the action."),
    "next_phase": (TEXT, "Phase after the action (done on the row that ended the episode)."),
    "score": (FLOAT, "The episode's score, on the row that ended it."),
    "prompt_tokens": (INT, "Model turns: prompt tokens."),
    "completion_tokens": (INT, "Model turns: completion tokens."),
    "cost": (FLOAT, "Model turns: cost in US dollars from the run's price table."),
    "raw_reply": (TEXT, "Model turns: the reply as received."),
    "parse_valid": (BOOL, "Model turns: whether the reply parsed to an allowed action."),
    "latency": (FLOAT, "Seconds the model took to answer, or the tick's lateness for people."),
    "error": (TEXT, "Why an environment step failed (the action was then not applied)."),
}

EPISODE_COLUMNS = {
    "episode_id": (INT, "Episode id, unique in the database."),
    **_WHO,
    "agent_kind": (TEXT, "human for a participant's attempt, else the agent run's kind "
                         "(llm, random, scripted, planner); unknown when neither is recorded."),
    "model": (TEXT, "The language model of an llm agent run."),
    "agent_config": (JSON, "The agent run's configuration (provider, history mode, prompt "
                           "variant ...); empty for people."),
    "problem_id": (TEXT, "Registered problem id."),
    "challenge": (TEXT, "mfp, planning, cd or explore."),
    "env_id": (TEXT, "Registered environment id."),
    "seed": (INT, "Seed the environment was reset with."),
    "status": (TEXT, "active (not finished), done, abandoned, error."),
    "phase": (TEXT, "Last phase reached."),
    "score": (FLOAT, "Challenge score in [0, 1]; empty when the attempt has none."),
    "included": (BOOL, "False when the attempt is excluded from aggregation."),
    "exclusion_reason": (TEXT, "Why the attempt is excluded."),
    "participant_status": (TEXT, "The participant's status (complete, excluded, "
                                 "screened-out ...); empty for agents."),
    "participant_exclusion_reason": (TEXT, "Why the participant is excluded as a whole."),
    "started_at": (TIME, "When the attempt began."),
    "ended_at": (TIME, "When it ended; empty while active."),
    "n_events": (INT, "Rows in events for this episode."),
    "info": (JSON, "Challenge outcome details (t*, chosen option, resets, ticks ...)."),
}

DICTIONARY = {
    "events.jsonl": ("One JSON object per event, ordered by episode_id then seq.",
                     EVENT_COLUMNS),
    "events.parquet": ("The same rows as events.jsonl, typed, for dataframes.", EVENT_COLUMNS),
    "episodes.csv": ("One row per attempt at a problem; booleans are true/false, empty "
                     "cells are nulls, info is JSON.", EPISODE_COLUMNS),
    "frames.jsonl": ("Every frame the events refer to, once each.", {
        "hash": (TEXT, "The frame's hash (tasks.core.frame_hash), as in frame_hash."),
        "frame": (JSON, "Rows of colour names: frame[y][x], y from the top, x from the left."),
    }),
    "raw_inputs.jsonl": ("Inputs that arrived but were not applied.", {
        "episode_id": (INT, f"Episode: {_EPISODE}; empty if none was running."),
        "participant_id": (INT, "Participant who sent it."),
        "received_at": (FLOAT, "Unix seconds when the server received it."),
        "client_time": (FLOAT, "Unix seconds on the participant's corrected clock."),
        "text": (TEXT, "The input as sent (at most 200 characters)."),
        "status": (TEXT, "dropped, rejected, rate-limited or malformed."),
        "reason": (TEXT, "Why, in words."),
    }),
    "agent_runs.jsonl": ("One object per agent run.", {
        "id": (INT, "Agent run id (agent_run_id elsewhere)."),
        "study_id": (TEXT, "Study slug, if the run belongs to one."),
        "agent_kind": (TEXT, "llm, random, scripted, planner."),
        "model": (TEXT, "The language model, for llm runs."),
        "config": (JSON, "Provider, prompt variant, history mode, temperature, prices ..."),
        "created_at": (TIME, "When the run was created."),
    }),
    "participants.jsonl": ("One object per participant; external ids are left out.", {
        "id": (INT, "Participant id (participant_id elsewhere)."),
        "study_id": (TEXT, "Study slug."),
        "stage": (TEXT, "Last stage of the flow reached (consent ... complete)."),
        "status": (TEXT, "active, complete, screened-out, declined, timed-out, excluded."),
        "exclusion_reason": (TEXT, "Why the participant is excluded."),
        "consent_version": (TEXT, "Version of the consent form agreed to."),
        "data": (JSON, "One record per finished stage of the flow."),
        "created_at": (TIME, "When the participant arrived."),
        "updated_at": (TIME, "Last change."),
    }),
}
"""File name -> (what it holds, column -> (type, meaning))."""

COLUMNS = {name: list(columns) for name, (_, columns) in DICTIONARY.items()}
"""File name -> its columns, in the order written."""

FILES = (*DICTIONARY, "data_dictionary.json", "data_dictionary.md")
"""Every file of an export directory."""


def write_dictionary(out: Path) -> None:
    """Write data_dictionary.json and data_dictionary.md into ``out``."""
    data = {
        name: {"description": about,
               "columns": {col: {"type": t, "description": d} for col, (t, d) in cols.items()}}
        for name, (about, cols) in DICTIONARY.items()
    }
    (out / "data_dictionary.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / "data_dictionary.md").write_text(dictionary_markdown())


def dictionary_markdown() -> str:
    lines = ["# Data dictionary", "",
             "Every file of this gridstudy export and every column in it.", ""]
    for name, (about, columns) in DICTIONARY.items():
        lines += [f"## {name}", "", about, "", "| column | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{col}` | {kind} | {meaning} |" for col, (kind, meaning) in columns.items()]
        lines.append("")
    return "\n".join(lines)
