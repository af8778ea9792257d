"""Balanced assignment: slots fill to the wanted number of included attempts, least-filled
first, abandoned slots come back, and concurrent arrivals never oversubscribe."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from sqlmodel import select

from records.models import EpisodeRow, Participant, Study, utcnow
from records.store import Store
from study_server import assignment
from tests.consent.helpers import make_definition, register_walker_problems

PROBLEMS = ["test/p0", "test/p1", "test/p2"]


@pytest.fixture
def store(tmp_path):
    register_walker_problems(PROBLEMS)
    with Store(str(tmp_path / "study.db")) as store:
        yield store


def create_study(store: Store, **overrides) -> None:
    definition = make_definition(**overrides)
    with store.session() as session:
        session.add(Study(id=definition.id, title=definition.title, definition=definition.to_dict()))


def add_participants(store: Store, count: int) -> list[int]:
    with store.session() as session:
        rows = [Participant(study_id="pilot", external_id=f"pid-{i}") for i in range(count)]
        session.add_all(rows)
        session.flush()
        return [row.id for row in rows]


def included_done(store: Store) -> dict[str, int]:
    with store.session() as session:
        rows = session.exec(select(EpisodeRow).where(EpisodeRow.status == "done", EpisodeRow.included)).all()
    return {p: sum(1 for r in rows if r.problem_id == p) for p in PROBLEMS}


def test_participant_gets_least_filled_unseen_problems(store):
    create_study(store, problems_per_participant=2, attempts_per_problem=2)
    first, second, third = add_participants(store, 3)
    ids_first = assignment.assign(store.engine, "pilot", first)
    ids_second = assignment.assign(store.engine, "pilot", second)
    with store.session() as session:
        got_first = [session.get(EpisodeRow, i).problem_id for i in ids_first]
        got_second = [session.get(EpisodeRow, i).problem_id for i in ids_second]
    leftover = (set(PROBLEMS) - set(got_first)).pop()
    assert len(set(got_first)) == 2
    assert got_second[0] == leftover  # the only problem with no slot taken comes first
    assert assignment.assign(store.engine, "pilot", first) == ids_first  # idempotent
    with store.session() as session:
        fill = assignment.fill_counts(session, "pilot", PROBLEMS)
    assert sorted(fill.values()) == [1, 1, 2]


def test_study_full_raises_and_abandoned_slot_comes_back(store):
    create_study(store, problems=["test/p0"], problems_per_participant=1, attempts_per_problem=1,
                 abandon_timeout_minutes=1)
    first, second = add_participants(store, 2)
    (held,) = assignment.assign(store.engine, "pilot", first)
    with pytest.raises(assignment.StudyFull, match="no free slot for participant"):
        assignment.assign(store.engine, "pilot", second)
    later = utcnow() + timedelta(minutes=2)
    (taken,) = assignment.assign(store.engine, "pilot", second, now=later)
    with store.session() as session:
        old = session.get(EpisodeRow, held)
    assert (old.status, old.included) == ("abandoned", False)
    assert old.exclusion_reason.startswith("abandoned")
    assert taken != held


def test_excluded_attempt_frees_its_slot(store):
    create_study(store, problems=["test/p0"], problems_per_participant=1, attempts_per_problem=1)
    first, second = add_participants(store, 2)
    (held,) = assignment.assign(store.engine, "pilot", first)
    store.finish_episode(held, status="done", phase="done", score=1.0)
    with store.session() as session:
        session.get(EpisodeRow, held).included = False
    assert len(assignment.assign(store.engine, "pilot", second)) == 1


def test_concurrent_arrivals_fill_each_problem_exactly(store):
    """40 participants, a quarter of whom abandon, arrive at once for 3 x 5 slots.

    The abandon timeout must be long beside one finisher's turn: a finisher queued behind
    the others' writes on a busy machine for longer than it would be reclaimed, and with
    30 finishers for 15 slots enough such losses leave a slot with nobody to fill it."""
    create_study(store, problems_per_participant=1, attempts_per_problem=5,
                 abandon_timeout_minutes=2 / 60)
    people = add_participants(store, 40)
    barrier = threading.Barrier(len(people))
    deadline = time.monotonic() + 60
    errors: list[BaseException] = []

    def arrive(index: int, participant_id: int) -> None:
        rng = random.Random(index)
        barrier.wait()
        try:
            while time.monotonic() < deadline:
                try:
                    (episode_id,) = assignment.assign(store.engine, "pilot", participant_id)
                except assignment.StudyFull:
                    if sum(included_done(store).values()) == 15:
                        return
                    time.sleep(0.2)
                    continue
                if index % 4 == 0:
                    return  # abandons: never comes back
                time.sleep(rng.uniform(0, 0.02))
                store.finish_episode(episode_id, status="done", phase="done", score=1.0)
                return
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=arrive, args=(i, p)) for i, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert included_done(store) == {p: 5 for p in PROBLEMS}
    with store.session() as session:
        abandoned = session.exec(select(EpisodeRow).where(EpisodeRow.status == "abandoned")).all()
    assert all(not row.included for row in abandoned)
