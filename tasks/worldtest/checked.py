"""What ``gridstudy problems check`` found of each planning and change-detection problem,
kept beside its program (``checks.json`` in the environment's folder) under the
problem's version, so that ``gridstudy study create`` can say which problems of a study
were never shown to stay passable at the version it would serve (guarantee 4.5).

A record holds, per problem id, the version checked (:func:`tasks.registry.problem_version`),
what the check from anywhere sought and in how many of its runs it found it, and the
day. A problem is *known passable* when its record is of its current version and every
one of at least :data:`~tasks.worldtest.check.DEAD_END_SEEDS` runs passed. An
environment written in Python has no folder to keep a record in, and is not asked about.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from tasks import registry
from tasks.worldtest.check import DEAD_END_SEEDS, Solvability
from tasks.worldtest.problem import Problem

RECORD = "checks.json"
SOUGHT = ("planning", "cd")
"""The challenges whose check from anywhere can find a state a participant never passes
the test from (a goal out of reach, a change hidden for good)."""


def record_path(problem: Problem) -> Path | None:
    """Where ``problem``'s check is kept: ``checks.json`` beside its program; None for
    an environment written in Python."""
    program = registry.env_spec(problem.env_id).program
    return Path(program).parent / RECORD if program else None


def remember(problem: Problem, found: Solvability) -> str | None:
    """Keep ``found`` as ``problem``'s check at its current version; None, or what was
    done instead: the record of a longer check at this version kept (a quick check's runs
    are its first, and all passed: they add nothing), or why nothing could be kept (a
    folder that cannot be written, as an installed package's)."""
    path = record_path(problem)
    if path is None:
        return None
    entry = {"version": registry.problem_version(problem), "sought": found.what,
             "passed": found.solved, "runs": found.tried, "checked": date.today().isoformat()}
    try:
        with _locked(path.parent):  # two checks of one environment's problems at once
            entries = _read(path)
            kept = entries.get(problem.id)
            if _same(kept, entry):  # its day kept: a check again changes no file
                return (f"recorded as before: the same check on {kept['checked']} at this "
                        f"version ({kept['passed']} of {kept['runs']} passed)")
            if _covers(kept, entry):
                return (f"recorded as before: the check of {kept['runs']} runs on "
                        f"{kept['checked']} at this version ({kept['passed']} passed), whose "
                        f"first {entry['runs']} are these")
            entries[problem.id] = entry
            part = path.with_name(f".{RECORD}.{os.getpid()}")
            part.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n",
                            encoding="utf-8")
            os.replace(part, path)
    except OSError as error:
        return f"not recorded in {path}: {error.strerror or error}"
    return None


def doubts(problem_ids: Iterable[str]) -> dict[str, str]:
    """Each of ``problem_ids`` (planning and change detection, with a program) not known
    to stay passable at its current version, with why: never checked, checked at
    another version (its program or definition changed since), checked with fewer runs
    than :data:`DEAD_END_SEEDS`, or unverified in some runs."""
    found = {}
    for problem_id in dict.fromkeys(problem_ids):
        try:
            problem = registry.get_problem(problem_id)
            path = record_path(problem)
        except (KeyError, ValueError, OSError):  # not registered here, or not readable:
            continue  # said by what serves or stores the study, not asked here
        if problem.challenge not in SOUGHT or path is None:
            continue
        entry = _read(path).get(problem_id)
        if not isinstance(entry, dict):
            found[problem_id] = "never checked"
        elif entry.get("version") != registry.problem_version(problem):
            found[problem_id] = (f"checked on {entry.get('checked')} at another version "
                                 "(its program or definition changed since)")
        elif entry.get("passed") != entry.get("runs"):
            found[problem_id] = (f"unverified: {entry.get('sought')} in {entry.get('passed')} "
                                 f"of {entry.get('runs')} runs")
        elif entry.get("runs", 0) < DEAD_END_SEEDS:
            found[problem_id] = (f"checked with {entry.get('runs')} runs only (the check's "
                                 f"default is {DEAD_END_SEEDS})")
    return found


def _same(kept: Any, entry: dict[str, Any]) -> bool:
    """Whether the record ``kept`` found what ``entry``, a check just made, did (on another
    day, perhaps): a check of the library in a clone rewrote every record's day, and the
    clone had changes to commit that were none."""
    return isinstance(kept, dict) and {**kept, "checked": entry["checked"]} == entry


def _covers(kept: Any, entry: dict[str, Any]) -> bool:
    """Whether the record ``kept`` says all that ``entry``, a check just made, does: of the
    same version and search, with more runs (a check's runs are the same seeds in the
    same order, :func:`tasks.worldtest.check.from_anywhere`), where the new one found no
    failure (a failure is news, and is recorded)."""
    return (isinstance(kept, dict) and kept.get("version") == entry["version"]
            and kept.get("sought") == entry["sought"]
            and isinstance(kept.get("runs"), int) and kept["runs"] > entry["runs"]
            and entry["passed"] == entry["runs"])


def _read(path: Path) -> dict[str, Any]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):  # none yet, or one that cannot be read: no record (the
        return {}  # next check rewrites it)
    return entries if isinstance(entries, dict) else {}


@contextmanager
def _locked(folder: Path):
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)
