"""Writing one attempt to the store: the sink every driver's engine reports to.

The real-time server's sessions, the local pygame loop, the in-process agent runner and
the agent API all play through :class:`tasks.worldtest.tick.TickEngine` or
:class:`tasks.worldtest.turn.AgentTurns`, and those report to an
:class:`EpisodeRecorder`. So every attempt, a person's or a model's, played here or on
the server, is written by the same rows (:mod:`records.rows`) with the same columns.
"""

from __future__ import annotations

import time
from typing import Any

from records.rows import failed_step_row, invalid_turn_row, raw_input_row, step_row
from records.schema import as_utc


def merge_info(store: Any, episode_id: int, info: dict[str, Any]) -> None:
    """Merge ``info`` into the episode's info as it is now (who plays a resumed attempt
    now), whatever else is written in it meanwhile."""
    from sqlalchemy import update

    from records.models import EpisodeRow
    from records.store import locked

    with locked(store.engine, EpisodeRow, episode_id) as session:
        row = session.get(EpisodeRow, episode_id)
        if row is None:
            raise LookupError(f"no episode {episode_id} in {store!r}")
        session.execute(update(EpisodeRow).where(EpisodeRow.id == episode_id)
                        .values(info={**(row.info or {}), **info}))


def run_spending(store: Any, agent_run_id: int) -> tuple[float | None, int, int]:
    """What an agent run's recorded model turns cost in dollars (None: tokens were spent
    and none had a price) and in tokens, over every invocation that played it, and how
    many of them spent what nobody counted (a model was asked, and its reply gave no
    token counts)."""
    from sqlalchemy import func, or_
    from sqlmodel import select

    from records.models import Event
    from tasks.worldtest.turn import AGENT

    store.wait()
    turns = (Event.agent_run_id == agent_run_id, Event.source == AGENT)
    with store.session() as session:
        cost, prompt, completion = session.exec(
            select(func.sum(Event.cost), func.sum(Event.prompt_tokens),
                   func.sum(Event.completion_tokens)).where(*turns)).one()
        uncounted = session.exec(
            select(func.count()).where(*turns, Event.latency.is_not(None),
                                       or_(Event.prompt_tokens.is_(None),
                                           Event.completion_tokens.is_(None)))).one()
    tokens = int(prompt or 0) + int(completion or 0)
    return (None if cost is None and tokens else float(cost or 0.0)), tokens, int(uncounted)


def last_seen(store: Any, rows: list[Any]) -> dict[int, float]:
    """Unix seconds of the last record of each episode row: its last event, else its
    start (how long an attempt has been silent)."""
    from sqlalchemy import func
    from sqlmodel import select

    from records.models import Event

    if not rows:
        return {}
    with store.session() as session:
        last = dict(session.exec(select(Event.episode_id, func.max(Event.server_time))
                                 .where(Event.episode_id.in_([r.id for r in rows]))
                                 .group_by(Event.episode_id)).all())
    started = {r.id: r.started_at for r in rows}
    return {r.id: last.get(r.id) or as_utc(started[r.id]).timestamp() for r in rows}


class EpisodeRecorder:
    """The rows of one attempt, numbered by ``seq`` in the order they happen.

    Opens the attempt's episode row unless ``episode_id`` names one already started (a
    reserved slot, or an attempt rebuilt after a restart, whose rows continue at
    ``next_seq``).
    """

    def __init__(
        self,
        store: Any,
        problem: Any,
        *,
        episode_id: int | None = None,
        next_seq: int = 0,
        study_id: str | None = None,
        participant_id: int | None = None,
        agent_run_id: int | None = None,
        info: dict[str, Any] | None = None,
        wait_for_end: bool = True,
        claim_run: bool = False,
    ) -> None:
        self.store = store
        self.wait_for_end = wait_for_end
        """Whether :meth:`finished` waits until the end is stored (a real-time session's
        tick must not: it passes False)."""
        self.problem_id = problem.id
        self.ids = {"study_id": study_id, "participant_id": participant_id,
                    "agent_run_id": agent_run_id}
        if episode_id is None:
            episode_id = store.start_episode(problem=problem, info=info, claim_run=claim_run,
                                             **self.ids)
        self.episode_id = episode_id
        self.seq = next_seq
        self.done = False

    def _next(self) -> dict[str, Any]:
        """The fields every event row of this attempt shares, with the next ``seq``."""
        self.seq += 1
        return {"episode_id": self.episode_id, "seq": self.seq - 1,
                "problem_id": self.problem_id, **self.ids}

    def acknowledged(self, text: str, *, input_seq: int, received_at: float,
                     client_time: float | None = None) -> None:
        """An input queued for a coming tick is written now, as ``queued``: a crash before
        its tick then leaves it in the record (a restart stores it as dropped)."""
        self.store.write_raw_input(raw_input_row(
            episode_id=self.episode_id, participant_id=self.ids["participant_id"],
            received_at=received_at, client_time=client_time, text=text[:200],
            status="queued", reason="waiting for its tick", input_seq=input_seq))

    def applied(self, step: Any, *, source: str, input_seq: int | None = None,
                **fields: Any) -> str:
        """Record an applied step; the hash its frame is recorded under."""
        key = self.store.write_event(step_row(step, source=source, **self._next(), **fields),
                                     checked=True)
        self._resolved(input_seq)
        return key

    def failed(self, action: str, *, phase: str, source: str, error: str,
               input_seq: int | None = None, **fields: Any) -> None:
        self.store.write_event(failed_step_row(action, phase=phase, source=source, error=error,
                                               **self._next(), **fields), checked=True)
        self._resolved(input_seq)

    def _resolved(self, input_seq: int | None, status: str | None = None,
                  reason: str | None = None) -> None:
        if input_seq is not None:
            self.store.resolve_input(self.episode_id, input_seq, status, reason)

    def invalid(self, *, phase: str, raw_reply: str, error: str, **fields: Any) -> None:
        self.store.write_event(invalid_turn_row(phase=phase, raw_reply=raw_reply, error=error,
                                                source="agent", **self._next(), **fields),
                               checked=True)

    def refused(self, text: str, *, status: str, reason: str, received_at: float | None = None,
                client_time: float | None = None, input_seq: int | None = None) -> None:
        if input_seq is not None:  # acknowledged before: its row says what became of it
            self._resolved(input_seq, status, reason)
            return
        self.store.write_raw_input(raw_input_row(
            episode_id=self.episode_id, participant_id=self.ids["participant_id"],
            received_at=time.time() if received_at is None else received_at,
            client_time=client_time, text=text, status=status, reason=reason))

    def finished(self, episode: Any, *, status: str, info: dict[str, Any]) -> None:
        """How the attempt ended (written once): its status, last phase, score (0 when
        it did not finish) and outcome. The end is queued behind the attempt's events, so
        a process killed in between leaves it ``active`` with every turn it recorded (a
        rerun continues it), never ended without its last turns. A person's attempt that
        ends abandoned is excluded, with why (a model's counts: it gave up)."""
        if self.done:
            return
        self.done = True
        excluded = None
        if status == "abandoned" and self.ids["participant_id"] is not None:
            excluded = f"abandoned: {info.get('reason', 'nobody played on')}"
        self.store.finish_episode(self.episode_id, status=status, phase=episode.phase,
                                  score=episode.final_score, info={**episode.outcome(), **info},
                                  excluded=excluded, wait=self.wait_for_end)

    def reopened(self) -> None:
        """The attempt continues after it was ended (a resumed model attempt)."""
        self.done = False
        self.store.reopen_episode(self.episode_id)
