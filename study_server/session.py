"""A participant's live game: the tick engine, bound to a connection and a clock offset.

A :class:`GameSession` is overcooked-demo's game object: ``enqueue_action`` (called by
whoever receives input), ``tick`` (called by the scheduler) and ``get_state`` (what a
client draws). The rules of real-time play (one input per tick, otherwise ``noop``;
the queue, the rate limit, every refusal) are :class:`tasks.worldtest.tick.TickEngine`'s,
the same the local pygame loop keeps; what is written is
:class:`records.recorder.EpisodeRecorder`'s. The session adds only what the server
knows: the token a client joins with, the connection bound to it, how long it has been
without one, and the participant's clock offset. It knows nothing about sockets, so it
is tested alone.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import deque
from typing import Any

from records.rebuild import rebuild
from records.recorder import EpisodeRecorder
from study_server.clock import ClockOffset, steady_time
from tasks import registry
from tasks.worldtest.changes import ViewStream, idle_every
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem
from tasks.worldtest.tick import QUEUE_SIZE, QUEUED, RATE_LIMIT, Tick, TickEngine

STOPPED_BEFORE_TICK = "the server stopped before this input's tick"
"""Why an acknowledged input that no tick applied is stored as dropped (a restart)."""
SAVING = "Saving your progress, one moment..."
"""What a participant reads while the game stands still for the store."""
HOLD_AFTER = 1.0
"""Seconds the oldest unwritten row may wait before recorded games stand still (the
writer flushes every quarter second: this is four flushes behind)."""
LATENESS_WINDOW = 40
"""Ticks whose lateness the monitor summarises (5 to 13 seconds at 3 to 8 FPS)."""


def limits(config: Any) -> dict[str, int]:
    """The input limits of a new session from an app's configuration (``QUEUE_SIZE``,
    ``RATE_LIMIT``)."""
    return {"queue_size": int(config["QUEUE_SIZE"]), "rate_limit": int(config["RATE_LIMIT"])}


def label(token: str) -> str:
    """What the logs call a session: a short hash of its token, never the token, which
    is the key to the session (``docs/guarantees.md``)."""
    return "s-" + hashlib.sha256(token.encode()).hexdigest()[:8]


def holding(store: Any) -> str | None:
    """Why recorded games should stand still now (:data:`SAVING`), or None: the store's
    oldest unwritten row has waited more than :data:`HOLD_AFTER` seconds."""
    return SAVING if store.status()["age"] > HOLD_AFTER else None


class GameSession:
    """One live episode, ticked by the scheduler; recorded when it has a recorder (a
    preview has none)."""

    def __init__(
        self,
        episode: Episode,
        recorder: EpisodeRecorder | None = None,
        *,
        study_id: str | None = None,
        participant_id: int | None = None,
        token: str | None = None,
        owner: str | None = None,
        queue_size: int = QUEUE_SIZE,
        rate_limit: int = RATE_LIMIT,
    ) -> None:
        self.token = token or secrets.token_urlsafe(16)
        self.owner = owner
        """The researcher who opened a preview (only they may join it), or None."""
        self.recorder = recorder
        self.engine = TickEngine(episode, recorder, queue_size=queue_size,
                                 rate_limit=rate_limit)
        self.study_id = study_id
        self.participant_id = participant_id
        self.clock = ClockOffset()
        self.sid: str | None = None
        """The connection bound to this session (only it may send input)."""
        self.idle_since: float | None = steady_time()
        """Server time since when no connection is bound (None while one is)."""
        self.joined = False
        """Whether a client has ever joined."""
        self.unsent_from: str | None = None
        """The connection whose keys pressed while it was lost are kept (it sends them
        once, ``sockets.on_unsent``)."""
        self.last_input_at: float | None = None
        """Server time of the last input the session accepted (the monitor's idle flag)."""
        self.lateness: deque[float] = deque(maxlen=LATENESS_WINDOW)
        """How late the last ticks were, in seconds (the monitor's health)."""
        self.paused: str | None = None
        """Why the session stands still (the store is behind), in the participant's words;
        None while it plays."""
        self.stream = ViewStream(idle_every=idle_every(self.engine.episode.frame_rate))
        """The states sent to whoever watches: what changed, tick by tick."""

    @classmethod
    def create(
        cls,
        problem: Problem,
        store: Any = None,
        *,
        study_id: str | None = None,
        participant_id: int | None = None,
        **options: Any,
    ) -> GameSession:
        """A fresh episode of ``problem``, with its episode row when ``store`` is given
        (made only once the environment has loaded)."""
        episode = Episode(problem)
        recorder = None
        if store is not None:
            recorder = EpisodeRecorder(store, problem, study_id=study_id,
                                       participant_id=participant_id, wait_for_end=False)
        return cls(episode, recorder, study_id=study_id, participant_id=participant_id,
                   **options)

    @classmethod
    def resume(cls, store: Any, row: Any, events: list[Any], *, token: str | None = None,
               **options: Any) -> GameSession:
        """The attempt of episode ``row`` rebuilt by replaying its stored ``events``, its
        rows continuing at the next ``seq`` (a restart, a failover, a handover)."""
        problem = registry.get_problem(row.problem_id)
        store.drop_waiting_inputs(STOPPED_BEFORE_TICK, episode_id=row.id)
        rebuilt = rebuild(problem, events)
        recorder = EpisodeRecorder(store, problem, episode_id=row.id, next_seq=rebuilt.next_seq,
                                   study_id=row.study_id, participant_id=row.participant_id,
                                   wait_for_end=False)
        session = cls(rebuilt.episode, recorder, study_id=row.study_id,
                      participant_id=row.participant_id, token=token, **options)
        inputs = [e.server_time for e in events if e.source == "input"]
        session.last_input_at = max(inputs, default=None)  # the monitor's idle flag
        return session

    @property
    def episode(self) -> Episode:
        return self.engine.episode

    @property
    def episode_id(self) -> int | None:
        return self.recorder.episode_id if self.recorder is not None else None

    @property
    def period(self) -> float:
        """Seconds between ticks."""
        return 1.0 / self.episode.frame_rate

    @property
    def problem_id(self) -> str:
        return self.episode.problem.id

    def enqueue_action(self, text: Any, client_time: float | None = None,
                       now: float | None = None, **sender: Any) -> str:
        """Queue one input for the next tick (its time on the participant's clock,
        corrected by the estimated offset); ``queued`` or why it was refused. ``sender``:
        the engine's ``source`` and ``fields`` (a model on the clock)."""
        status = self.engine.admit(text, self.clock.to_server(client_time), now, **sender)
        if status == QUEUED:
            self.last_input_at = time.time() if now is None else now
        return status

    def tick(self, lateness: float = 0.0, now: float | None = None) -> Tick:
        """One tick of the engine; the event keeps how late the tick was."""
        self.lateness.append(lateness)
        return self.engine.tick(now, latency=lateness)

    def abandon(self, reason: str = "the session was abandoned") -> None:
        """Nobody came back: queued inputs are dropped and the attempt ends abandoned."""
        self.engine.abandon(reason)

    def state_message(self, idle: bool = False) -> dict[str, Any] | None:
        """The next state for every connection watching: what changed since the last one
        (``tasks.worldtest.changes``), or now and then the whole view; None when an
        ``idle`` tick (no input applied) changed nothing to send now."""
        return self.stream.next(self.get_state(), idle)

    def whole_state(self) -> dict[str, Any]:
        """The whole view, numbered in the stream (a client joining or asking again): the
        last one sent, unless the view changed since (then it is the next version)."""
        return self.stream.whole(self.get_state())

    def get_state(self) -> dict[str, Any]:
        """Everything a client draws now (the episode's view, plus the session token and,
        while it stands still, ``paused``: why)."""
        state = {**self.engine.view(), "token": self.token}
        if self.paused is not None:
            state["paused"] = self.paused
        return state
