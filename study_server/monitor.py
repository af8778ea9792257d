"""The dashboard's live monitor: what is being played now, pushed to researchers.

Every second, :func:`snapshot` reads this worker's sessions and agent API episodes, and
what every other live worker published at its last heartbeat (:func:`local_view`, at most
a second old; ``study_server/cluster.py``): for each participant playing, their stage and time in it, the problem, phase
and tick, seconds since their last input (idle past :data:`IDLE_AFTER`), how late the
last ticks were, and whether they are connected; the participants on the flow's other
pages (consent, colour check, quiz ...) with their stage and when they were last seen;
model attempts in progress beside them;
sessions that reached their end but are not yet closed, and previews, apart. The
dashboard page renders it once (``dashboard/_monitor.html``) and then replaces that
section with each new rendering pushed on the Socket.IO namespace ``/monitor``, which
only a logged-in researcher may join: one template, no page reloads.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any

from flask import Flask, render_template
from flask_socketio import SocketIO, join_room
from sqlmodel import select

from records.models import Participant
from records.offload import blocking, off_loop_for_pages
from records.schema import as_utc
from records.writer import unavailable
from study_server import auth, browser_play

NAMESPACE = "/monitor"
PUSH_EVERY = 1.0
"""Seconds between pushes while a researcher watches."""
IDLE_AFTER = 30.0
"""Seconds without an input after which a playing participant is flagged idle."""
LATE_AFTER = 0.05
"""A 95th-percentile tick lateness beyond this many seconds is flagged."""
SEEN_WITHIN = 30 * 60
"""Seconds since their last page within which a participant not in a game is listed."""
MAX_ON_PAGES = 200
"""The most participants listed on the flow's pages."""
MAX_PLAYING = 100
"""The most participants playing the monitor lists (:func:`shown`); it counts them all.
Every row is rendered and pushed to every watcher each second: 400 rows were 250 KB and
27 ms of the server's CPU a push."""


def snapshot(app: Flask, now: float | None = None) -> dict[str, Any]:
    """What is being played now on every worker (see the module's docstring)."""
    now = time.time() if now is None else now
    app = getattr(app, "_get_current_object", lambda: app)()  # read in another thread too
    views = [local_view(app, now)]
    storage = storage_view(app, now)
    try:
        views += [peer.live for peer in app.extensions["gridstudy.cluster"].peers() if peer.live]
        rows = [row for view in views for row in view.get("sessions", [])]
        people = _participants(app, {row["participant_id"] for row in rows})
    except Exception as error:  # the database is away: show what this worker knows
        if not unavailable(error):
            raise
        storage["reading"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        rows = [row for view in views for row in view.get("sessions", [])]
        people = {}
    playing, finished = [], []
    for row in rows:
        person = people.get(row["participant_id"])
        row = {**row, "stage": person.stage if person else None,
               "stage_seconds": _stage_seconds(person, now)}
        (finished if row["phase"] == "done" else playing).append(row)
    in_game = {row["participant_id"] for row in playing}
    try:
        on_pages = _on_pages(app, in_game, now)
    except Exception as error:
        if not unavailable(error):
            raise
        on_pages = []
    return {"storage": storage,"at": now, "at_text": datetime.fromtimestamp(now, UTC).strftime("%H:%M:%S UTC"),
            **playing_view(playing),
            "on_pages": on_pages,
            "finished": finished, "previews": sum(view.get("previews", 0) for view in views),
            "models": [model for view in views for model in view.get("models", [])],
            "workers": len(views)}


def playing_view(playing: list[dict[str, Any]]) -> dict[str, Any]:
    """The monitor's part on the people playing (their rows, any order): ``playing`` in
    episode order, the rows it lists (``shown``), and how many are not connected, late
    and idle (``counts``)."""
    playing = sorted(playing, key=lambda r: r["episode_id"] or 0)
    return {"playing": playing, "shown": shown(playing),
            "counts": {"not connected": sum(not r["connected"] for r in playing),
                       "late": sum(r["late"] for r in playing),
                       "idle": sum(r["idle"] for r in playing)}}


def shown(playing: list[dict[str, Any]], most: int | None = None) -> list[dict[str, Any]]:
    """The rows of ``playing`` (in episode order) the monitor lists: all of them, up to
    ``most`` (:data:`MAX_PLAYING`); beyond, those that need a look first (not connected,
    then late, then idle, longest idle first), then the others by episode, in episode
    order still, so that a row does not jump about between pushes."""
    most = MAX_PLAYING if most is None else most
    if len(playing) <= most:
        return playing
    need = sorted(range(len(playing)), key=lambda i: (
        playing[i]["connected"], not playing[i]["late"], not playing[i]["idle"],
        -(playing[i]["idle_seconds"] or 0), i))
    return [playing[i] for i in sorted(need[:most])]


def local_view(app: Flask, now: float | None = None) -> dict[str, Any]:
    """This worker's part of the monitor, as plain JSON values: its participants' sessions,
    its previews and its model attempts. Each worker publishes its own at every heartbeat
    (``study_server/cluster.py``) and the monitor on any worker shows them all."""
    now = time.time() if now is None else now
    sessions = list(app.extensions["gridstudy.realtime"].sessions.values())
    worker = app.extensions["gridstudy.cluster"].address or ""
    return {"sessions": [_session_row(s, now, worker) for s in sessions if s.participant_id]
            + [_browser_row(played, now, worker) for played in browser_play.playing(app)],
            "previews": sum(s.participant_id is None for s in sessions),
            "models": [_model_row(live, now) for live in
                       list(app.extensions.get("gridstudy.agent_episodes", {}).values())
                       if not live.turns.ended]}


def storage_view(app: Flask, now: float) -> dict[str, Any]:
    """The store's health for the monitor: rows waiting to be written, how long the oldest
    has waited, and since when and why the storage refuses to write (None while it
    writes)."""
    status = app.extensions["gridstudy.store"].status()
    since = status["outage_since"]
    return {**status, "outage_seconds": None if since is None else round(now - since),
            "reading": None}


@blocking
def _on_pages(app: Flask, in_game: set[int], now: float) -> list[dict[str, Any]]:
    """Active participants seen within :data:`SEEN_WITHIN` on a page of the flow without a
    game (consent, colour check, instructions, quiz, attention check, debrief), or on a
    game page whose game is not running: their stage and how long they have been there."""
    since = datetime.fromtimestamp(now - SEEN_WITHIN, UTC)
    with app.extensions["gridstudy.store"].session() as db:
        people = db.exec(select(Participant).where(
            Participant.status == "active", Participant.updated_at >= since)
            .order_by(Participant.id).limit(MAX_ON_PAGES)).all()
        rows = []
        for person in people:
            if person.id in in_game:
                continue
            seen = as_utc(person.updated_at).timestamp()
            rows.append({"participant_id": person.id, "study_id": person.study_id,
                         "stage": person.stage, "stage_seconds": _stage_seconds(person, now),
                         "seen_seconds": max(0, round(now - seen))})
    return rows


def _stage_seconds(person: Participant | None, now: float) -> int | None:
    """Seconds since the participant reached their current stage."""
    if person is None:
        return None
    stage_started = (person.data or {}).get("stage_started_at")
    if stage_started:
        return max(0, round(now - datetime.fromisoformat(stage_started).timestamp()))
    if person.created_at:
        return max(0, round(now - as_utc(person.created_at).timestamp()))
    return None


@blocking
def _participants(app: Flask, ids: set[int]) -> dict[int, Participant]:
    if not ids:
        return {}
    with app.extensions["gridstudy.store"].session() as db:
        return {p.id: p for p in db.exec(select(Participant).where(Participant.id.in_(ids)))}


def _session_row(session: Any, now: float, worker: str) -> dict[str, Any]:
    return _playing_row(session, session.episode, session.last_input_at, session.lateness,
                        now, worker)


def _browser_row(played: Any, now: float, worker: str) -> dict[str, Any]:
    """A participant's attempt played in their browser (``study_server/browser_play.py``),
    as far as the server has taken its log (a second behind the page at most). How late
    the page's ticks are is the page's own: never late here."""
    attempt = played.attempt
    return {**_playing_row(played, attempt.episode, attempt.last_input_at, [], now, worker),
            "play": "browser"}


def _playing_row(session: Any, episode: Any, last_input_at: float | None,
                 lateness: Any, now: float, worker: str) -> dict[str, Any]:
    """The monitor's row of a participant's attempt being played (``session``: the live
    session or the browser attempt, which name it alike)."""
    late = sorted(lateness)
    p95 = late[int(0.95 * (len(late) - 1))] if late else 0.0
    since_input = now - last_input_at if last_input_at else None
    return {
        "episode_id": session.episode_id, "study_id": session.study_id,
        "participant_id": session.participant_id, "worker": worker,
        "problem_id": session.problem_id, "phase": episode.phase,
        "tick": len(episode.history), "connected": session.sid is not None,
        "idle_seconds": None if since_input is None else round(since_input),
        "idle": since_input is None or since_input > IDLE_AFTER,
        "late_ms": round(1000 * p95), "late_mean_ms": round(1000 * statistics.fmean(late)) if late else 0,
        "late": p95 > LATE_AFTER,
    }


def _model_row(live: Any, now: float) -> dict[str, Any]:
    turns = live.turns
    return {"episode_id": live.id, "token": live.token, "problem_id": turns.episode.problem.id,
            "phase": turns.episode.phase, "turns": turns.turns, "invalid": turns.invalid,
            "since_turn": None if live.last_turn_at is None else round(now - live.last_turn_at)}


def render(app: Flask, data: dict[str, Any] | None = None) -> str:
    """The monitor section's HTML (the dashboard page includes the same rendering)."""
    return render_template("dashboard/_monitor.html", monitor=data or snapshot(app),
                           idle_after=IDLE_AFTER, seen_within=SEEN_WITHIN)


def pushed(app: Flask) -> str:
    """The section pushed to the watchers, read and rendered in a native thread kept for
    pages (the caller's ``off_loop_for_pages``), not on the loop: with 400 participants
    playing, its template alone would hold every game for about 27 ms each second
    (measured)."""
    with app.test_request_context("/dashboard/"):
        return render(app)


def init_monitor(app: Flask, socketio: SocketIO) -> None:
    """The ``/monitor`` namespace: logged-in researchers join it and get the monitor
    section every :data:`PUSH_EVERY` seconds while anyone watches."""
    watchers: set[str] = set()

    def connect(auth_data: Any = None) -> bool:
        from flask import request

        if auth.current_admin(app.extensions["gridstudy.store"].engine) is None:
            return False
        watchers.add(request.sid)
        join_room("monitor")
        return True

    def disconnect(reason: Any = None) -> None:
        from flask import request

        watchers.discard(request.sid)

    socketio.on_event("connect", connect, namespace=NAMESPACE)
    socketio.on_event("disconnect", disconnect, namespace=NAMESPACE)

    def push_forever() -> None:
        while True:
            socketio.sleep(PUSH_EVERY)
            if not watchers:
                continue
            try:
                html = off_loop_for_pages(pushed, app)
                # each worker pushes to its own watchers, with every worker's sessions
                socketio.emit("monitor", {"html": html}, to="monitor", namespace=NAMESPACE,
                              ignore_queue=True)
            except Exception:  # one bad snapshot never stops the monitor
                app.logger.exception("the live monitor could not render")

    socketio.start_background_task(push_forever)
