"""Each package imports only the rooms below it (docs/architecture.md, "The rooms"): the
table there, checked over every ``import`` and ``from`` statement, those inside
functions too. A page of the participant flow once imported the server's arrivals module
and nothing said so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("tasks", "records", "consent", "study_server", "game_client", "analysis")
MAY_IMPORT = {
    "tasks": set(),
    "records": {"tasks"},
    "consent": {"tasks"},
    "study_server": {"tasks", "records", "consent"},
    "game_client": {"tasks", "records"},
    "analysis": {"tasks", "records"},
}
EXCEPTIONS = {("analysis/cli.py", "study_server")}
"""The report's command reads the study's payment rule at run time."""


def imported_rooms(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & set(ROOMS)
    return found


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_imports_only_the_rooms_beneath_it(room):
    wrong = []
    for path in sorted((ROOT / room).rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for other in imported_rooms(path) - {room} - MAY_IMPORT[room]:
            if (where, other) not in EXCEPTIONS:
                wrong.append(f"{where} imports {other}")
    assert not wrong, wrong
