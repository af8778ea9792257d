"""Several server processes over one database: which process ticks which session.

A large study runs several ``gridstudy serve`` processes (*workers*) behind one load
balancer, over one PostgreSQL database and one Redis message queue (README, "Running a
large study"). A live session is a tick engine in one process's memory, so exactly one
worker may tick it, and when that worker dies another must carry it on. Both are kept
here, in two tables of the shared database (one process on SQLite keeps the same rows):

* ``worker``: every worker's row, refreshed every :data:`HEARTBEAT` seconds with what its
  monitor would show. A row older than :data:`STALE_AFTER` is a dead worker.
* ``livesession``: every recorded live session's token, episode and owner (its lease).

A client that joins a token its worker does not hold (it reconnected through the load
balancer after its worker died, or after a restart) is served by :func:`adopt`: the
lease of a dead owner is taken by compare-and-swap (two workers cannot both win it), and
the session is rebuilt by replaying its stored events under the same token, its rows
continuing at the next ``seq``. A live owner is asked to hand the session over instead:
at its next heartbeat it stops ticking it, writes out its queued rows and passes the
lease on, or declines while the session's own connection is still open (unless the join
takes it over, as a second tab's "continue here" does).

Each worker also checks its leases at every heartbeat: a session it ticks whose lease
another worker took (this worker was stalled past the timeout) stops at once, so that no
two workers ever write the same attempt; a lease whose session it no longer holds is
released; and a session whose attempt was abandoned meanwhile (a researcher ended it on
another worker's dashboard) stops. Unrecorded previews have no lease: there is nothing to rebuild them from.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine

from records.models import LiveSession, Worker
from records.offload import blocking
from records.writer import unavailable
from study_server.session import STOPPED_BEFORE_TICK, label

log = logging.getLogger(__name__)

HEARTBEAT = 1.0
"""Seconds between a worker's heartbeats."""
STALE_AFTER = 4.0
"""Seconds without a heartbeat after which a worker is taken for dead."""
SWEEP_EVERY = 60
"""Heartbeats between two sweeps of the leases of dead workers' finished attempts."""
ADOPT_WAIT = STALE_AFTER + 2 * HEARTBEAT
"""The longest a join waits for a session held elsewhere: its owner's handover, or its
dead owner's heartbeat going stale."""


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"


def _running(worker: str) -> bool:
    """Whether the process of a worker id of this host is still there."""
    try:
        os.kill(int(worker.split(":")[1]), 0)
    except ProcessLookupError:
        return False
    except (ValueError, IndexError, PermissionError):
        return True
    return True


@dataclass(frozen=True)
class Lease:
    """A ``livesession`` row as read, with whether its owner was alive then."""

    token: str
    episode_id: int
    worker: str
    wanted_by: str | None
    alive: bool


class Cluster:
    """This worker's view of the shared tables (every method is one short transaction)."""

    def __init__(self, engine: Engine, address: str | None = None, *,
                 worker_id: str | None = None, clock: Callable[[], float] = time.time,
                 stale_after: float = STALE_AFTER) -> None:
        self.engine = engine
        self.id = worker_id or new_worker_id()
        self.address = address
        self.clock = clock
        self.stale_after = stale_after
        self.started_at = clock()
        self.pending: set[str] = set()
        """Tokens being adopted or opened here: their leases are not released."""
        self.gone: set[str] = set()
        """Leases held here whose sessions were gone at the last heartbeat."""
        self.beats = 0
        self.running = True
        """False once the app shuts down: the heartbeat task ends."""

    # -- workers ----------------------------------------------------------------------------

    @blocking
    def beat(self, live: dict[str, Any] | None = None) -> None:
        """Refresh this worker's row (made at the first beat) with ``live``, what its
        monitor shows."""
        now = self.clock()
        with self.engine.begin() as db:
            changed = db.execute(update(Worker).where(Worker.id == self.id)
                                 .values(seen_at=now, live=live or {}, address=self.address))
            if changed.rowcount == 0:
                db.execute(Worker.__table__.insert().values(
                    id=self.id, address=self.address, started_at=self.started_at,
                    seen_at=now, live=live or {}))

    @blocking
    def peers(self) -> list[Any]:
        """The other workers alive now (their rows)."""
        with self.engine.connect() as db:
            return list(db.execute(select(Worker).where(Worker.seen_at >= self._fresh(),
                                                        Worker.id != self.id)
                                   .order_by(Worker.started_at)))

    @blocking
    def leave(self) -> None:
        """A clean stop: this worker's row goes, so that its sessions are taken up at once
        (after a restart too, by the clients that rejoin them) rather than after
        :data:`STALE_AFTER`. Their leases stay, naming a worker no longer alive."""
        with self.engine.begin() as db:
            db.execute(delete(Worker).where(Worker.id == self.id))

    @blocking
    def sweep(self) -> int:
        """Drop the leases of dead workers whose attempts are over (nobody will rejoin
        them); how many."""
        from records.models import EpisodeRow
        from study_server.assignment import HOLDING

        alive = select(Worker.id).where(Worker.seen_at >= self._fresh())
        over = select(EpisodeRow.id).where(EpisodeRow.status.not_in(HOLDING))
        with self.engine.begin() as db:
            return db.execute(delete(LiveSession).where(
                LiveSession.worker.not_in(alive), LiveSession.episode_id.in_(over))).rowcount

    @blocking
    def drop_orphaned_inputs(self, reason: str) -> int:
        """Store as dropped the acknowledged inputs still ``queued`` in attempts whose
        worker is dead (killed before their tick; a worker that adopts an attempt drops
        its own at once); how many."""
        from records.models import RawInput

        alive = select(Worker.id).where(Worker.seen_at >= self._fresh())
        orphaned = select(LiveSession.episode_id).where(LiveSession.worker.not_in(alive))
        with self.engine.begin() as db:
            return db.execute(update(RawInput).where(
                RawInput.status == "queued", RawInput.episode_id.in_(orphaned))
                .values(status="dropped", reason=reason)).rowcount

    @blocking
    def forget_dead_here(self) -> list[str]:
        """Forget the workers of this host whose processes are gone (a server killed and
        started again: its predecessor's heartbeat looks fresh for a few seconds more);
        their ids."""
        host = socket.gethostname()
        with self.engine.begin() as db:
            ids = db.execute(select(Worker.id).where(Worker.id.like(f"{host}:%"))).scalars()
            dead = [worker for worker in ids if worker != self.id and not _running(worker)]
            if dead:
                db.execute(delete(Worker).where(Worker.id.in_(dead)))
        return dead

    @blocking
    def forget(self, pid: int) -> None:
        """Forget the worker of process ``pid`` on this host, which has died (its
        supervisor saw it): its sessions are taken up at once, not after the timeout."""
        host = socket.gethostname()
        with self.engine.begin() as db:
            db.execute(delete(Worker).where(Worker.id.like(f"{host}:{pid}:%")))

    def _alive(self, db: Any, worker: str) -> bool:
        if worker == self.id:
            return True
        seen = db.execute(select(Worker.seen_at).where(Worker.id == worker)).scalar()
        return seen is not None and seen >= self._fresh()

    def _fresh(self) -> float:
        """The oldest heartbeat of a worker still alive."""
        return self.clock() - self.stale_after

    # -- leases -----------------------------------------------------------------------------

    @blocking
    def player_of(self, token: str) -> tuple[str | None, int | None, int] | None:
        """Whose recorded session ``token`` is: ``(study_id, participant_id,
        episode_id)`` of its attempt, or None when no lease has that token."""
        from records.models import EpisodeRow

        with self.engine.connect() as db:
            row = db.execute(select(EpisodeRow.study_id, EpisodeRow.participant_id,
                                    EpisodeRow.id).join(
                LiveSession, LiveSession.episode_id == EpisodeRow.id).where(
                LiveSession.token == token)).first()
        return None if row is None else tuple(row)

    @blocking
    def claim(self, token: str, episode_id: int) -> None:
        """Lease a session this worker has just made (its token is new)."""
        with self.engine.begin() as db:
            db.execute(LiveSession.__table__.insert().values(
                token=token, episode_id=episode_id, worker=self.id, takeover=False))

    @blocking
    def lease(self, token: str | None = None, *, episode_id: int | None = None) -> Lease | None:
        """The lease of a token, or of an episode's live session."""
        where = (LiveSession.token == token) if token is not None else (
            LiveSession.episode_id == episode_id)
        with self.engine.connect() as db:
            row = db.execute(select(LiveSession).where(where)).first()
            if row is None:
                return None
            return Lease(row.token, row.episode_id, row.worker, row.wanted_by,
                         self._alive(db, row.worker))

    @blocking
    def take(self, token: str, previous: str) -> bool:
        """Take the lease from ``previous`` (a dead worker): true for the one worker whose
        compare-and-swap found ``previous`` still there."""
        with self.engine.begin() as db:
            return db.execute(update(LiveSession).where(
                LiveSession.token == token, LiveSession.worker == previous)
                .values(worker=self.id, wanted_by=None, takeover=False)).rowcount == 1

    @blocking
    def want(self, token: str, owner: str, takeover: bool) -> None:
        """Ask ``owner`` to hand the session over at its next heartbeat."""
        with self.engine.begin() as db:
            db.execute(update(LiveSession).where(LiveSession.token == token,
                                                 LiveSession.worker == owner)
                       .values(wanted_by=self.id, takeover=takeover))

    @blocking
    def wanted(self) -> list[tuple[str, str, bool]]:
        """This worker's sessions another worker asked for: (token, by whom, takeover)."""
        with self.engine.connect() as db:
            return [tuple(row) for row in db.execute(
                select(LiveSession.token, LiveSession.wanted_by, LiveSession.takeover)
                .where(LiveSession.worker == self.id, LiveSession.wanted_by.is_not(None)))]

    @blocking
    def hand_over(self, token: str, to: str) -> bool:
        with self.engine.begin() as db:
            return db.execute(update(LiveSession).where(
                LiveSession.token == token, LiveSession.worker == self.id)
                .values(worker=to, wanted_by=None, takeover=False)).rowcount == 1

    @blocking
    def decline(self, token: str) -> None:
        with self.engine.begin() as db:
            db.execute(update(LiveSession).where(LiveSession.token == token,
                                                 LiveSession.worker == self.id)
                       .values(wanted_by=None, takeover=False))

    @blocking
    def held(self) -> set[str]:
        """The tokens this worker holds the lease of."""
        with self.engine.connect() as db:
            return set(db.execute(select(LiveSession.token)
                                  .where(LiveSession.worker == self.id)).scalars())

    @blocking
    def release(self, tokens: Iterable[str]) -> None:
        tokens = list(tokens)
        if tokens:
            with self.engine.begin() as db:
                db.execute(delete(LiveSession).where(LiveSession.token.in_(tokens),
                                                     LiveSession.worker == self.id))


# -- a worker in the app -------------------------------------------------------------------

DECLINED = "join: this session is open in another connection"
HELD_ELSEWHERE = "join: the session is held by another server that did not answer; try again"


def init_cluster(app: Any, socketio: Any) -> Cluster:
    """This process's worker row (``app.extensions["gridstudy.cluster"]``) and its
    heartbeat task."""
    store = app.extensions["gridstudy.store"]
    cluster = Cluster(store.engine, app.config.get("ADDRESS"))
    cluster.beat()
    cluster.forget_dead_here()
    cluster.drop_orphaned_inputs(STOPPED_BEFORE_TICK)
    app.extensions["gridstudy.cluster"] = cluster

    def heartbeat_forever() -> None:
        failing_since = None
        while cluster.running:
            socketio.sleep(HEARTBEAT)
            if not cluster.running:
                break
            try:
                heartbeat(app, socketio)
            except Exception as error:  # a database hiccup: the next beat tries again
                if not unavailable(error):
                    log.exception("worker %s: the heartbeat failed", cluster.id)
                elif failing_since is None or time.time() - failing_since > 30:
                    failing_since = time.time()
                    log.warning("worker %s: the heartbeat cannot reach the database (%s); "
                                "trying every second", cluster.id, str(error).splitlines()[0])
            else:
                failing_since = None

    socketio.start_background_task(heartbeat_forever)
    return cluster


def heartbeat(app: Any, socketio: Any) -> None:
    """Refresh this worker's row, hand over the sessions others asked for, stop the ones
    whose lease another worker took, and release the leases of sessions gone; end the
    games played in the browser that no page came to (``browser_play.sweep``)."""
    from study_server import browser_play, monitor

    cluster: Cluster = app.extensions["gridstudy.cluster"]
    scheduler = app.extensions["gridstudy.realtime"]
    browser_play.sweep(app)  # the games played in the browser that no page came to
    cluster.beat(monitor.local_view(app))
    for token, by, takeover in cluster.wanted():
        _hand_over(app, socketio, token, by, takeover)
    # The order of these reads matters: a session is leased before it is added, and stays
    # pending from before its lease is taken until after it is added.
    pending = set(cluster.pending)
    recorded = {token for token, s in list(scheduler.sessions.items()) if s.recorder is not None}
    recorded |= set(list(browser_play.sessions(app)))
    agents = app.extensions.get("gridstudy.agent_episodes", {})
    recorded |= {agent_token(episode_id) for episode_id in list(agents)}
    held = cluster.held()
    for token in recorded - held:
        log.warning("session %s: another worker holds it now; stopped here", label(token))
        _drop(app, socketio, token)
    _stop_abandoned(app, socketio)
    gone = held - recorded - pending
    cluster.release(gone & cluster.gone)  # gone at two heartbeats in a row
    cluster.gone = gone
    cluster.beats += 1
    if cluster.beats % SWEEP_EVERY == 0:
        cluster.drop_orphaned_inputs(STOPPED_BEFORE_TICK)
        cluster.sweep()


def _stop_abandoned(app: Any, socketio: Any) -> None:
    """Stop the sessions whose attempts were abandoned elsewhere, telling their pages: by
    a researcher on the dashboard of another worker, or by the assignment's abandon
    timeout (a participant away from an open tab for that long)."""
    from study_server import browser_play
    from study_server.sockets import game_ended

    scheduler = app.extensions["gridstudy.realtime"]
    live = {s.episode_id: s for s in list(scheduler.sessions.values()) if s.episode_id}
    played = {p.episode_id: p for p in browser_play.unfinished(app)}
    if not live and not played:
        return
    for episode_id in _abandoned(app.extensions["gridstudy.cluster"].engine, [*live, *played]):
        if episode_id in played:  # played in the browser: nothing more of its log is taken
            played[episode_id].attempt.stop()
            game_ended(socketio, played[episode_id])
            continue
        session = scheduler.remove(live[episode_id].token)
        if session is not None:
            session.engine.drain("the attempt was ended before this input's tick")
            game_ended(socketio, session)


@blocking
def _abandoned(engine: Engine, episode_ids: list[int]) -> list[int]:
    """Which of ``episode_ids`` were abandoned."""
    from records.models import EpisodeRow
    from study_server.assignment import ABANDONED

    with engine.connect() as db:
        return list(db.execute(select(EpisodeRow.id).where(
            EpisodeRow.id.in_(episode_ids), EpisodeRow.status == ABANDONED)).scalars())


def _hand_over(app: Any, socketio: Any, token: str, by: str, takeover: bool) -> None:
    from study_server import browser_play

    cluster: Cluster = app.extensions["gridstudy.cluster"]
    session = app.extensions["gridstudy.realtime"].get(token) or \
        browser_play.sessions(app).get(token)
    if session is not None and session.sid is not None and not takeover:
        cluster.decline(token)
        return
    if session is not None and session.sid is not None:
        socketio.emit("taken-over", {"token": token}, to=session.sid, ignore_queue=True)
    _drop(app, socketio, token, disconnect=False)
    app.extensions["gridstudy.store"].wait()  # the new owner replays every row
    cluster.hand_over(token, by)


def _drop(app: Any, socketio: Any, token: str, disconnect: bool = True) -> None:
    """Stop playing ``token`` here (its lease is, or is about to be, another worker's):
    a participant's session stops ticking, its queued inputs stored as dropped, and its
    connection is closed so that it reconnects to the owner; an agent's episode, or an
    attempt played in the browser, is forgotten (the owner rebuilds it from the store),
    once the batch of its log being taken, if any, is stored."""
    from study_server import browser_play

    played = browser_play.sessions(app).pop(token, None)
    if played is not None:
        played.attempt.move()
        if disconnect and played.sid is not None:
            socketio.server.disconnect(played.sid)
        return
    if token.startswith(AGENT):
        live = app.extensions.get("gridstudy.agent_episodes", {}).pop(int(token[len(AGENT):]), None)
        if live is not None:
            with live.lock:  # a turn in progress finishes first
                pass
        return
    session = app.extensions["gridstudy.realtime"].remove(token)
    if session is not None:
        session.engine.drain("the session moved to another server before this input's tick")
        if disconnect and session.sid is not None:
            socketio.server.disconnect(session.sid)


AGENT = "agent:"
"""The lease token of an agent API episode is this and its id."""


def agent_token(episode_id: int) -> str:
    return f"{AGENT}{episode_id}"


def acquire(app: Any, token: str, takeover: bool = False,
            sleep: Callable[[float], Any] = time.sleep, wait: float = ADOPT_WAIT) -> Any:
    """Make this worker the owner of ``token``'s lease: at once when it is already, by
    compare-and-swap from a dead owner, or handed over by a live one. The lease; ``None``
    when there is none; or a refusal's reason (:data:`DECLINED`, :data:`HELD_ELSEWHERE`).
    The caller holds ``token`` in :attr:`Cluster.pending` until its session is live."""
    cluster: Cluster = app.extensions["gridstudy.cluster"]
    deadline, asked = time.monotonic() + wait, None
    while True:
        lease = cluster.lease(token)
        if lease is None or lease.worker == cluster.id:
            return lease
        if not lease.alive:
            if cluster.take(token, lease.worker):
                return lease
            continue
        if asked == lease.worker and lease.wanted_by != cluster.id:
            return DECLINED
        if asked != lease.worker:
            cluster.want(token, lease.worker, takeover)
            asked = lease.worker
        if time.monotonic() > deadline:
            return HELD_ELSEWHERE
        sleep(0.1)


def adopt(app: Any, token: str, takeover: bool = False, sleep: Callable[[float], Any] = time.sleep,
          wait: float = ADOPT_WAIT) -> Any:
    """The live session of ``token`` rebuilt here once its lease is this worker's
    (:func:`acquire`); ``None`` for a token no recorded live session has, or the reason
    it cannot be had."""
    if token.startswith(AGENT):  # an agent's attempt is played through the agent API only
        return None
    return leased(app, token, lambda lease: lease and _rebuild(app, lease.episode_id, token),
                  takeover, sleep, wait)


def leased(app: Any, token: str, rebuild: Callable[[Lease | None], Any], takeover: bool = False,
           sleep: Callable[[float], Any] = time.sleep, wait: float = ADOPT_WAIT) -> Any:
    """``rebuild(lease)`` once ``token``'s lease is this worker's, or ``rebuild(None)``
    when it has none (:func:`acquire`); the reason it cannot be had otherwise. ``token``
    is pending meanwhile: the heartbeat does not release its lease before it is held."""
    cluster: Cluster = app.extensions["gridstudy.cluster"]
    cluster.pending.add(token)
    try:
        lease = acquire(app, token, takeover, sleep, wait)
        return lease if isinstance(lease, str) else rebuild(lease)
    finally:
        cluster.pending.discard(token)


def live_token(app: Any, episode_id: int) -> str | None:
    """The token of episode ``episode_id``'s live session: the one ticking here, the one
    another live worker ticks (the client's join asks for it), or one rebuilt here by
    replay (after a restart or its worker's death, or for a reserved slot's first visit).
    ``None`` when the attempt was abandoned."""
    scheduler = app.extensions["gridstudy.realtime"]
    for session in list(scheduler.sessions.values()):
        if session.episode_id == episode_id:
            return session.token
    cluster: Cluster = app.extensions["gridstudy.cluster"]
    lease = cluster.lease(episode_id=episode_id)
    if lease is not None and lease.alive and lease.worker != cluster.id:
        return lease.token
    if lease is not None:
        session = adopt(app, lease.token)
        return session.token if session is not None and not isinstance(session, str) else None
    session = _rebuild(app, episode_id, None)
    return session.token if session is not None else None


REBUILD_WAIT = 10.0
"""Seconds a join waits for this worker's queued rows before it rebuilds an attempt."""


def _rebuild(app: Any, episode_id: int, token: str | None) -> Any:
    """Replay the attempt's stored events into a live session under ``token`` (a new one,
    leased here, when None) and add it to the scheduler."""
    from study_server.session import limits

    store = app.extensions["gridstudy.store"]
    store.wait(REBUILD_WAIT)  # every row this worker wrote is in the database first
    session = _replay(store, episode_id, token, limits(app.config))
    if session is None:
        return None
    if token is not None:  # its lease is this worker's already
        return app.extensions["gridstudy.realtime"].add(session)
    return keep(app, session)


@blocking
def _replay(store: Any, episode_id: int, token: str | None, limits: dict[str, int]) -> Any:
    """The live session of attempt ``episode_id`` rebuilt from its stored events (None
    when it is gone or abandoned, or abandoned now since its environment changed): read
    and replayed off the event loop, since a long attempt's replay takes a while."""
    from sqlmodel import select as select_rows

    from records.models import EpisodeRow, Event
    from study_server import assignment
    from study_server.session import GameSession

    with store.session() as db:
        row = db.get(EpisodeRow, episode_id)
        if row is None or row.status == assignment.ABANDONED or not resumable(store, db, row):
            return None
        events = list(db.exec(select_rows(Event).where(Event.episode_id == episode_id)))
        return GameSession.resume(store, row, events, token=token, **limits)


def resumable(store: Any, db: Any, row: Any) -> bool:
    """Whether the attempt of ``row`` can be rebuilt here; if not (its environment
    changed since it began, ``records.rebuild.changed``), it is ended ``abandoned`` with
    why, its waiting inputs stored as dropped, so that its participant's next page gives
    them a problem in its place, as after the abandon timeout."""
    from records.rebuild import changed
    from study_server import assignment
    from tasks import registry

    why = changed(row, registry.get_problem(row.problem_id))
    if why is None:
        return True
    why = f"abandoned: {why}"
    log.warning("attempt %s of %s: %s", row.id, row.problem_id, why)
    store.drop_waiting_inputs(STOPPED_BEFORE_TICK, episode_id=row.id)
    assignment.mark_abandoned(db, [row.id], why)
    return False


def keep(app: Any, session: Any) -> Any:
    """Add a new session to this worker's scheduler, leased first when it is recorded (a
    session is leased before it can tick; see :func:`heartbeat`)."""
    if session.recorder is not None:
        app.extensions["gridstudy.cluster"].claim(session.token, session.episode_id)
    return app.extensions["gridstudy.realtime"].add(session)
