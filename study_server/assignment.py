"""Balanced assignment of problems to participants, safe under concurrent arrivals.

Each problem of a study should end with ``attempts_per_problem`` *included* attempts
(002 Sec. 4.1.1: every problem repeated 20 times, spread uniformly). A problem's *fill*
counts the attempts that hold one of its slots:

* finished attempts that are included (``status == "done"`` and ``included``);
* attempts still in progress (``active``) and slots reserved for a participant who has
  not reached that problem yet (``assigned``).

A new participant gets the least-filled problems they have not seen. A reservation or
attempt with no sign of life for ``abandon_timeout`` is marked ``abandoned`` (excluded),
which frees its slot. Reservations are ``episode`` rows with status ``assigned``; the
real-time session plays that same row when the participant gets there.

Two participants arriving at the same moment must not both take the last slot of a
problem, so the read-count-reserve sequence runs under a lock on the study: ``BEGIN
IMMEDIATE`` on SQLite (one writer at a time, the others wait on the busy timeout), and
``SELECT ... FOR UPDATE`` on the study's row elsewhere.
"""

from __future__ import annotations

import random
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, func, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from consent.definition import StudyDefinition, from_stored
from records.flow import LEFT_OUT
from records.models import EpisodeRow, Event, Participant, Study, utcnow
from records.schema import as_utc
from records.store import locked
from tasks import registry

ASSIGNED, ACTIVE, DONE, ABANDONED = "assigned", "active", "done", "abandoned"
HOLDING = (ASSIGNED, ACTIVE)
"""Statuses of an attempt that holds a slot until it finishes or is abandoned."""
ERROR = "error"
"""The environment could not go on (a step over its limit): the attempt is over."""
OVER = (DONE, ERROR)
"""Statuses after which a participant moves on: nothing more can be played."""
ENDED = (*OVER, ABANDONED)
"""An attempt its participant can no longer play: over, or abandoned with no unseen
problem to replace it (its page says it was ended, and Continue goes on)."""


class StudyFull(RuntimeError):
    """No problem this participant has not seen still needs attempts."""


def locked_study(engine: Engine, study_id: str) -> AbstractContextManager[Session]:
    """A session holding the study's write lock until it commits (or rolls back)."""
    return locked(engine, Study, study_id)


def load_study(session: Session, study_id: str) -> tuple[Study, StudyDefinition]:
    study = session.get(Study, study_id)
    if study is None:
        raise LookupError(f"no study {study_id!r}; create it with 'gridstudy study create FILE'")
    return study, from_stored(study.definition)


def counted_people() -> ColumnElement[bool]:
    """A condition on an attempt: its participant's data counts (neither excluded, by hand
    or by a failed attention check, nor left out by how the visit ended:
    :data:`records.flow.LEFT_OUT`), as the analysis counts it. Before, a participant
    excluded by hand kept their slots: the study stopped taking people short of the
    included attempts it wanted."""
    counted = select(Participant.id).where(Participant.exclusion_reason.is_(None),
                                           Participant.status.not_in(LEFT_OUT))
    return EpisodeRow.participant_id.in_(counted)


def counted_done() -> ColumnElement[bool]:
    """A condition on an attempt: it counts toward its study's wanted attempts (finished,
    included, by a participant whose data counts: :func:`counted_people`)."""
    return (EpisodeRow.status == DONE) & EpisodeRow.included & counted_people()


def fill_counts(session: Session, study_id: str, problems: list[str]) -> dict[str, int]:
    """Slots taken per problem: the attempts that count (:func:`counted_done`) and those
    holding one for a participant whose data counts (model attempts in a study never
    take a person's slot)."""
    holding = (EpisodeRow.status.in_(HOLDING) & counted_people()) | counted_done()
    rows = session.exec(
        select(EpisodeRow.problem_id, func.count())
        .where(EpisodeRow.study_id == study_id, holding)
        .group_by(EpisodeRow.problem_id)
    ).all()
    counts = dict.fromkeys(problems, 0)
    counts.update({problem: n for problem, n in rows if problem in counts})
    return counts


def included_done(session: Session, study_id: str) -> dict[str, int]:
    """The attempts that count (:func:`counted_done`) per problem of the study: what its
    wanted count is counted against."""
    return dict(session.exec(
        select(EpisodeRow.problem_id, func.count())
        .where(EpisodeRow.study_id == study_id, counted_done())
        .group_by(EpisodeRow.problem_id)).all())


def choose_problems(
    fill: dict[str, int], wanted: int, seen: set[str], count: int, rng: random.Random
) -> list[str]:
    """Up to ``count`` unseen problems with free slots, least filled first (ties at random).

    >>> choose_problems({"a": 2, "b": 0, "c": 1}, 3, {"b"}, 2, random.Random(0))
    ['c', 'a']
    """
    open_ = [p for p, n in fill.items() if n < wanted and p not in seen]
    rng.shuffle(open_)
    return sorted(open_, key=lambda p: fill[p])[:count]


def assign(engine: Engine, study_id: str, participant_id: int, now: datetime | None = None) -> list[int]:
    """Reserve this participant's problems; return the reserved episode ids in play order.

    Idempotent: a participant who already holds reservations gets them back. Raises
    :class:`StudyFull` when no problem has a free slot for them.
    """
    now = now or utcnow()
    with locked_study(engine, study_id) as session:
        _, definition = load_study(session, study_id)
        existing = participant_episodes(session, participant_id)
        if existing:
            return [row.id for row in existing if row.status in (*HOLDING, DONE)]
        release_stale(session, study_id, definition, now)
        fill = fill_counts(session, study_id, list(definition.problems))
        chosen = choose_problems(
            fill, definition.attempts_per_problem, set(), definition.problems_per_participant,
            random.Random(participant_id),
        )
        if not chosen:
            raise StudyFull(f"study {study_id!r} has no free slot for participant {participant_id}")
        rows = [_reservation(study_id, participant_id, problem, k, now) for k, problem in enumerate(chosen)]
        session.add_all(rows)
        session.flush()
        return [row.id for row in rows]


def replace_abandoned(engine: Engine, study_id: str, participant_id: int, position: int) -> int | None:
    """Give a returning participant whose reservation at ``position`` was released a
    new unseen problem for it; ``None`` when none has a free slot."""
    with locked_study(engine, study_id) as session:
        _, definition = load_study(session, study_id)
        seen = {row.problem_id for row in participant_episodes(session, participant_id, every=True)}
        fill = fill_counts(session, study_id, list(definition.problems))
        chosen = choose_problems(fill, definition.attempts_per_problem, seen, 1, random.Random(participant_id))
        if not chosen:
            return None
        row = _reservation(study_id, participant_id, chosen[0], position, utcnow())
        session.add(row)
        session.flush()
        return row.id


def _reservation(study_id: str, participant_id: int, problem_id: str, position: int, now: datetime) -> EpisodeRow:
    problem = registry.get_problem(problem_id)
    return EpisodeRow(
        study_id=study_id, participant_id=participant_id, problem_id=problem.id,
        challenge=problem.challenge, env_id=problem.env_id, seed=problem.seed,
        status=ASSIGNED, started_at=now, info={"position": position},
    )


def participant_episodes(session: Session, participant_id: int, every: bool = False) -> list[EpisodeRow]:
    """The participant's study attempts in play order (current ones unless ``every``)."""
    rows = session.exec(
        select(EpisodeRow).where(EpisodeRow.participant_id == participant_id).order_by(EpisodeRow.id)
    ).all()
    rows = [r for r in rows if (r.info or {}).get("position") is not None]
    if not every:
        latest = {r.info["position"]: r for r in rows}  # a replacement supersedes
        rows = [latest[k] for k in sorted(latest)]
    return rows


def last_activity(session: Session, row: EpisodeRow) -> datetime:
    """The latest sign of life of an attempt: its participant's last page or its last event."""
    participant = session.get(Participant, row.participant_id)
    stamps = [as_utc(row.started_at)]
    if participant is not None:
        stamps.append(as_utc(participant.updated_at))
    last_event = session.exec(select(func.max(Event.server_time)).where(Event.episode_id == row.id)).one()
    if last_event is not None:
        stamps.append(datetime.fromtimestamp(last_event, UTC))
    return max(stamps)


def release_stale(session: Session, study_id: str, definition: StudyDefinition, now: datetime) -> list[int]:
    """Mark attempts silent for longer than the abandon timeout ``abandoned``; their ids."""
    limit = timedelta(seconds=definition.abandon_timeout_seconds)
    rows = session.exec(
        select(EpisodeRow).where(EpisodeRow.study_id == study_id, EpisodeRow.status.in_(HOLDING))
    ).all()
    stale = [row.id for row in rows if now - last_activity(session, row) > limit]
    mark_abandoned(session, stale, "abandoned: no activity within the abandon timeout")
    return stale


def mark_abandoned(session: Session, episode_ids: list[int], reason: str) -> None:
    """Free the slots of these attempts (not counted, kept for the record)."""
    if episode_ids:
        session.execute(
            update(EpisodeRow).where(EpisodeRow.id.in_(episode_ids), EpisodeRow.status.in_(HOLDING))
            .values(status=ABANDONED, included=False, exclusion_reason=reason, ended_at=utcnow())
        )
