"""Small study definitions and problems on the test environments, shared by the tests
of the participant flow, the assignment and the dashboard."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from consent.definition import StudyDefinition, parse_definition
from tasks import registry
from tasks.worldtest.problem import Problem
from tests.envs import register_test_envs


def walker_problem(problem_id: str, goal: tuple[int, int] = (2, 0), horizon: int = 40) -> Problem:
    """A planning problem on the 5x5 Walker: bring the gold walker to ``goal``."""
    return Problem(
        id=problem_id, env_id="test/walker", challenge="planning", seed=0,
        params={"goal_cells": [list(goal)], "goal_colours": ["gold"], "horizon": horizon},
    )


def register_walker_problems(ids: list[str]) -> None:
    """Register the test environments and one Walker planning problem per id."""
    register_test_envs()
    for k, problem_id in enumerate(ids):
        registry.add_problem(walker_problem(problem_id, goal=(1 + k % 3, 0)), replace=True)


def study_refusal(folder: Path, problem_id: str) -> str:
    """What ``gridstudy study create`` says as it refuses a study of ``problem_id`` (with
    the Walker's practice problem), in a database in ``folder``; fails when it stores it."""
    import pytest
    import yaml

    from consent.definition import DefinitionError
    from study_server.commands.study import create_study

    register_walker_problems(["test/tutorial"])
    study = folder / "study.yaml"
    study.write_text(yaml.safe_dump(definition_data(problems=[problem_id],
                                                    problems_per_participant=1)))
    with pytest.raises(DefinitionError) as refused:
        create_study(f"sqlite:///{folder / 's.db'}", str(study))
    return str(refused.value)


def definition_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "id": "pilot",
        "title": "Grid worlds",
        "problems": ["test/p0", "test/p1", "test/p2"],
        "problems_per_participant": 2,
        "attempts_per_problem": 5,
        "completion_code": "DONE1234",
        "screenout_code": "SCREEN99",
        "consent": {"version": "v1", "text": "You are invited to play grid games."},
        "tutorials": {"planning": "test/tutorial"},
        "payment": "GBP 2.50",
        "expected_minutes": 10,
    }
    data.update(overrides)
    return data


def make_definition(**overrides: Any) -> StudyDefinition:
    return parse_definition(definition_data(**overrides))


FLOW_PROBLEMS = ["test/p0", "test/p1", "test/p2", "test/tutorial"]
"""The study's three problems and its tutorial (see :func:`definition_data`)."""


def study_app(db_path: Any, **overrides: Any) -> Any:
    """A real app on a SQLite file holding the pilot study (``overrides`` change its
    definition); the caller shuts it down (``study_server.app.shutdown``)."""
    from records.models import Study
    from study_server.app import create_app

    register_walker_problems(FLOW_PROBLEMS)
    app = create_app({"DATABASE_URL": str(db_path), "TESTING": True})
    definition = make_definition(**overrides)
    with app.extensions["gridstudy.store"].session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    return app


@contextlib.contextmanager
def serving_demo_study(tmp_path: Path, **changes: Any) -> Iterator[tuple[str, Path]]:
    """``gridstudy serve`` on a new database holding the demo study
    (``examples/demo-study.yaml``, with ``changes`` to its fields): ``(url, database)``;
    stopped after."""
    import yaml

    from records.models import Study
    from records.store import Store
    from tests.conftest import start_serve

    db = tmp_path / "g.db"
    demo = Path(__file__).parents[2] / "examples" / "demo-study.yaml"
    definition = parse_definition({**yaml.safe_load(demo.read_text()), **changes})
    with Store(str(db)) as store, store.session() as session:
        session.add(Study(id=definition.id, title=definition.title,
                          definition=definition.to_dict()))
    process, url = start_serve(db)
    try:
        yield url, db
    finally:
        process.terminate()
        process.wait(60)


def at_once(count: int, do: Callable[[], Any]) -> list[Any]:
    """``do()`` run by ``count`` threads released together; what each returned."""
    together = threading.Barrier(count)
    done: list[Any] = []

    def run() -> None:
        together.wait()
        done.append(do())

    threads = [threading.Thread(target=run) for _ in range(count)]
    for each in threads:
        each.start()
    for each in threads:
        each.join()
    return done

