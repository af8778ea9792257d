"""Socket.IO events of real-time play, beside the HTTP routes.

Every handler says who sends its event and what is emitted to whom. The browser client
(``static/gridstudy/game.js``), the remote pygame client and the load benchmark all speak
this protocol:

* client -> ``join {token}``: bind this connection to the session ``token`` (opened by
  an HTTP route) and start its clock; the reply is ``state`` and a first ``ping``.
* server -> ``state {...}``: the session's view, whole on joining, then after every tick
  what changed (``tasks.worldtest.changes``), to that session's room only.
* client -> ``input {token, action, client_time}``: one key, click or button.
* client -> ``unsent {token, inputs: [{action, client_time}], more}``: once after joining
  again, the keys pressed while the page had lost its connection, which it kept instead
  of sending (at most ``UNSENT_KEPT``, and how many more it counted); stored as
  ``dropped`` raw inputs, never applied (:func:`on_unsent`).
* server -> ``ping {sent}`` / client -> ``pong {sent, client_time}``: the clock-offset
  exchange, a round of a few pings after joining and again with the first input once the
  estimate is ``CLOCK_RESYNC`` seconds old (app config, default 30), so that a long
  session follows a drifting clock (``study_server/clock.py``).
* server -> ``refused {reason}``: a message that was not acted on.
* server -> ``visit-ended {url}``: the participant's visit ended (a connection slower
  than the study's ``max_round_trip_ms``); the page opens ``url``, its ending.
* server -> ``game-ended {url}``: the attempt was ended while its page was open (by a
  researcher, or by the study's abandon timeout), and its session stopped; the page says
  so and opens ``url``, the flow's page, which goes on from there (:func:`game_ended`).

What a connection may send, and how much, is judged before any of this runs
(``study_server/door.py``). A session is joined only by its participant's connection
(the flow's cookie) or, for a preview, the researcher who opened it. Malformed and
unknown messages are refused and counted, never logged one by one, and never with a
session's token; they never end a session.
"""

from __future__ import annotations

import logging
import queue
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import current_app, request
from flask import session as flask_session
from flask_socketio import SocketIO, join_room, leave_room
from socketio.packet import Packet
from sqlalchemy.exc import SQLAlchemyError

from records.offload import off_loop
from records.writer import unavailable
from study_server import auth, browser_play, cluster, deadlines
from study_server.app import STORAGE_ERRORS
from study_server.browser_play import LogError
from study_server.clock import UNIX_SECONDS, is_unix_time, steady_time
from study_server.scheduler import Scheduler
from study_server.session import GameSession, label
from tasks.worldtest.tick import AUTO, UNSENT_KEPT, Tick

log = logging.getLogger(__name__)


class OneLineLogger(logging.LoggerAdapter):
    """The Socket.IO and Engine.IO servers' logger: a message they could not handle (a
    malformed frame from any visitor) is one line, not a traceback per frame."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.getLogger(name), {})

    def exception(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        error = sys.exc_info()[1]
        kwargs.pop("exc_info", None)
        self.error(f"{msg}: {type(error).__name__}: {str(error)[:200]}", *args, **kwargs)


TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a session token can be (ours are 22 URL-safe characters): only such a token is
looked up in the database, never an agent attempt's lease (``agent:<id>``) nor a string
the database cannot hold."""

JOIN_LATER = "join: saving; the database is unavailable for a moment, join again shortly"
"""The refusal of a join that needs the database while it is away (the client retries)."""

TRY_AGAIN = frozenset({JOIN_LATER, cluster.HELD_ELSEWHERE})
"""Refusals of a join that may succeed a moment later: they say ``retry: true``, and every
client (``game.js``, ``game_client.remote``) joins again two seconds later by itself."""

CLOCK_RESYNC = 30.0
"""Seconds after which the next input starts a new round of clock pings."""


class JsonPacket(Packet):
    """Socket.IO packets without the binary-attachment scan: this protocol sends JSON only.

    python-socketio walks every element of every emitted payload looking for bytes; for a
    16x16 state that scan took 110 of the 133 microseconds of encoding it (measured), a
    tenth of a core at 100 sessions x 8 FPS, spent in the sender while the tick loop
    waits for the GIL. Passed to Flask-SocketIO as its ``serializer``.
    """

    uses_binary_events = False


@dataclass(frozen=True)
class Peer:
    """The connection a message came from and the app it came to: all a handler needs,
    whether Flask's request context was built for the message (``join``) or not."""

    app: Any
    sid: str

    @classmethod
    def here(cls) -> Peer:
        """The sender of the message a Flask-SocketIO handler is handling."""
        return cls(current_app._get_current_object(), request.sid)

    @property
    def scheduler(self) -> Scheduler:
        return self.app.extensions["gridstudy.realtime"]

    def emit(self, event: str, data: Any, to: str | None = None) -> None:
        """Emit to this connection (or ``to``, a session's connection, which joined here):
        straight to it, not through the message queue, which would carry it to every
        worker for one of them to deliver."""
        self.app.extensions["socketio"].server.emit(event, data, to=to or self.sid,
                                                    ignore_queue=True)

    def refuse(self, reason: str) -> dict[str, Any]:
        """Tell the sender why its message was not acted on. The door counts the refusal
        (one log line a minute per connection at most; the message itself, which may hold
        a session's token, is never logged). One that may succeed a moment later
        (:data:`TRY_AGAIN`) says ``retry``."""
        self.app.extensions["gridstudy.door"].note(self.sid, reason[:80])
        retry = {"retry": True} if reason in TRY_AGAIN else {}
        self.emit("refused", {"reason": reason, **retry})
        return {"ok": False, "error": reason, **retry}


def register_handlers(socketio: SocketIO, app: Any) -> None:
    """Attach the handlers to ``socketio`` (called by the app factory after ``init_app``),
    each taking exactly its one message: an event sent with more arguments is refused in
    one counted line, not a traceback.

    ``input``, ``log`` and ``pong``, a participant's frequent messages, are handled
    without Flask's request context (they read no cookie and no route): building it for
    each cost more than the handler itself (measured with ``bench.load --profile``: the context 8 % of
    the server's CPU at 100 players, ``on_input`` 4 %).
    """
    for name, handler in HANDLERS.items():
        socketio.on_event(name, _one_message(name, handler, lambda args: (Peer.here(), args)))
    for name, handler in BARE_HANDLERS.items():
        socketio.server.on(name, _one_message(
            name, handler, lambda args: (Peer(app, args[0]), args[1:])))
    app.jinja_env.globals["unsent_kept"] = UNSENT_KEPT  # the game page's bound


def _one_message(name: str, handler: Callable, sender: Callable) -> Callable:
    """``handler(peer, message)`` for an event whose arguments ``sender`` splits into the
    peer and the rest."""
    def receive(*args: Any) -> Any:
        peer, args = sender(args)
        if name not in ("disconnect", "*") and len(args) > 1:
            return peer.refuse(f"{name}: expected one message, got more arguments")
        return handler(peer, *args)

    receive.__name__ = receive.__qualname__ = handler.__name__
    receive.__doc__ = handler.__doc__
    return receive


def game_ended(socketio: SocketIO, session: GameSession) -> None:
    """Tell the page of ``session``, just stopped because its attempt was ended, that it
    was: without a word, its game stood still for good, a key refused, a reload showing
    the same still game. A preview's page reloads itself (``url`` None)."""
    if session.sid is not None:
        url = f"/study/{session.study_id}/flow" if session.study_id else None
        socketio.emit("game-ended", {"url": url}, to=session.sid, ignore_queue=True)


def make_deliver(socketio: SocketIO):
    """The scheduler's ``deliver``: a session's new state (what changed since the last,
    :meth:`GameSession.state_message`) to its room only, encoded once for every
    connection in it; an idle tick that changed only the tick sends nothing, but for one
    in every ``idle_every`` (``tasks.worldtest.changes``).

    In threading mode sending happens on a sender task fed by a queue, in tick order,
    so that the tick loop never waits on a participant's socket: there an emit blocks
    until the frame is written, and 100 sessions at 8 FPS made the loop late by 200 ms
    while the CPU stood mostly idle. Under gevent an emit only queues the frame for the
    connection's own writer, so the tick sends it at once (the sender task's queue and
    switch cost 3 % of the server at 100 players).
    """
    server = socketio.server

    def emit(token: str, message: dict[str, Any]) -> None:
        try:  # the session's connection is on this worker: no need for the queue
            server.emit("state", message, to=token, ignore_queue=True)
        except Exception:
            log.exception("session %s: sending the state failed", label(token))

    send = emit
    if server.async_mode != "gevent":
        outbox: queue.SimpleQueue = queue.SimpleQueue()

        def send_forever() -> None:
            while True:
                emit(*outbox.get())

        def send_later(token: str, message: dict[str, Any]) -> None:
            outbox.put((token, message))

        socketio.start_background_task(send_forever)
        send = send_later

    def deliver(session: GameSession, tick: Tick | None) -> None:
        message = session.state_message(idle=tick is not None and tick.source == AUTO)
        if message is not None:
            send(session.token, message)

    return deliver


UNDECODABLE = (ValueError, TypeError, KeyError, IndexError)
"""What Engine.IO raises on a frame it cannot decode (a normal close is none of these)."""


def quiet_websocket_errors(wsgi_app: Callable) -> Callable:
    """Wrap the WSGI app of the gevent server so that a WebSocket whose frames Engine.IO
    cannot even decode is closed with one logged line, not a traceback from the web
    server (gevent's WebSocket handler ignores what the app returns after the upgrade)."""

    def app(environ: dict[str, Any], start_response: Callable) -> Any:
        if environ.get("HTTP_UPGRADE", "").lower() != "websocket":
            return wsgi_app(environ, start_response)
        try:
            return wsgi_app(environ, start_response)
        except UNDECODABLE as error:
            log.warning("websocket from %s closed: %s: %s", environ.get("REMOTE_ADDR"),
                        type(error).__name__, _short(str(error)))
            return []
    return app


def _short(payload: Any) -> str:
    return repr(payload)[:200]


def unmask_in_c() -> None:
    """Make gevent-websocket unmask the frames clients send with wsaccel's masker (C)
    instead of its loop over every byte in Python: the same bytes, and 15 % of the
    server's CPU in browser play, where each page sends its play log once a second."""
    from geventwebsocket.websocket import Header
    from wsaccel.xormask import XorMaskerSimple

    def unmask(header: Header, payload: bytes | bytearray) -> bytearray:
        return bytearray(XorMaskerSimple(bytes(header.mask)).process(bytes(payload)))

    Header.mask_payload = Header.unmask_payload = unmask


def on_join(peer: Peer, message: Any = None) -> dict[str, Any]:
    """Client sends ``join {token}`` (``takeover: true`` to move the session here).
    Binds this connection to the session, enters the session's room, starts its ticks;
    emits the whole ``state`` and a ``ping`` to this client (a client that lost step with
    the state messages joins again for the whole state). A session already bound to
    another live connection is refused, unless the join takes it over: the other
    connection then leaves the room and is told ``taken-over`` (a second tab that chose
    "continue here")."""
    token = message.get("token") if isinstance(message, dict) else None
    session = peer.scheduler.get(token)
    if session is None and isinstance(token, str) and TOKEN.fullmatch(token):
        try:
            session = _adopt(token, takeover=message.get("takeover") is True)
        except STORAGE_ERRORS as error:
            if isinstance(error, SQLAlchemyError) and not unavailable(error):
                raise
            return peer.refuse(JOIN_LATER)
        if isinstance(session, str):
            return peer.refuse(session)
    if session is None:
        return peer.refuse(UNKNOWN_SESSION)
    if not _may_play(session.study_id, session.participant_id, session.owner):
        return peer.refuse(UNKNOWN_SESSION)  # the same answer: a token is no one's to probe
    if session.sid not in (None, peer.sid):
        if message.get("takeover") is not True:
            return peer.refuse("join: this session is open in another connection")
        leave_room(session.token, sid=session.sid)
        peer.emit("taken-over", {"token": session.token}, to=session.sid)
    session.sid, session.idle_since, session.joined = peer.sid, None, True
    join_room(session.token)
    peer.app.extensions["gridstudy.door"].joined(peer.sid)
    peer.scheduler.start(session.token)
    state = session.whole_state()
    peer.emit("state", state)
    _start_ping_round(peer, session)
    return {"ok": True, "state": state}


UNKNOWN_SESSION = "join: unknown or missing session token"


def _may_play(study_id: str | None, participant_id: int | None, owner: str | None) -> bool:
    """Whether this connection may play a session of ``participant_id`` in ``study_id``
    (its flow cookie names that participant), or a preview opened by researcher ``owner``
    (signed in as them). A preview opened without signing in (``PREVIEW = open``, the
    demo) is anyone's who holds its token."""
    if participant_id is not None:
        return flask_session.get(f"participant:{study_id}") == participant_id
    if owner is not None:
        engine = current_app.extensions["gridstudy.store"].engine
        return off_loop(auth.signed_in, engine, flask_session.get("admin"),
                        flask_session.get("nonce")) == owner
    return True


def _adopt(token: str, takeover: bool) -> Any:
    """A recorded session this worker does not hold, rebuilt here: only for the
    participant it belongs to (anyone else learns nothing and moves nothing). A recorded
    preview is resumed for whoever holds its token (who opened it is not stored)."""
    found = current_app.extensions["gridstudy.cluster"].player_of(token)
    if found is None or not _may_play(found[0], found[1], None):
        return None
    return cluster.adopt(current_app, token, takeover=takeover,
                         sleep=current_app.extensions["socketio"].sleep)


def _start_ping_round(peer: Peer, session: GameSession) -> None:
    now = time.time()
    session.clock.start_round(now)
    peer.emit("ping", {"sent": now})


def on_input(peer: Peer, message: Any = None) -> dict[str, Any]:
    """Client sends ``input {token, action, client_time}`` for a key, click or button.
    Queues it for the session's next tick; nothing is emitted unless it is refused (the
    next ``state`` shows its effect). Only the connection bound to the session may send."""
    if not isinstance(message, dict) or not isinstance(message.get("action"), str):
        return peer.refuse("input: expected {token, action, client_time}")
    session = _owned_session(peer, message.get("token"))
    if session is None:
        return peer.refuse("input: not your session")
    client_time = message.get("client_time")
    if not isinstance(client_time, int | float) or isinstance(client_time, bool):
        client_time = None
    elif not is_unix_time(client_time):
        return peer.refuse(f"input: client_time must be {UNIX_SECONDS}")
    status = session.enqueue_action(message["action"], client_time=client_time)
    if status != "queued":
        peer.emit("refused", {"reason": status, "action": message["action"][:100]})
    if session.clock.due(time.time(), peer.app.config.get("CLOCK_RESYNC", CLOCK_RESYNC)):
        _start_ping_round(peer, session)
    return {"ok": status == "queued", "status": status}


def on_unsent(peer: Peer, message: Any = None) -> dict[str, Any]:
    """Client sends ``unsent {token, inputs, more}`` once after joining again: the keys
    pressed while its connection was lost, never applied; each kept as a ``dropped`` raw
    input (``TickEngine.keep_unsent``), so the record holds every key the participant
    pressed. Once per connection: a page has one outage's keys to tell."""
    expected = (f"unsent: expected {{token, inputs: at most {UNSENT_KEPT} of {{action, "
                f"client_time}}, more: a count}}")
    if not isinstance(message, dict) or not isinstance(message.get("inputs"), list):
        return peer.refuse(expected)
    inputs, more = message["inputs"], message.get("more", 0)
    if len(inputs) > UNSENT_KEPT or type(more) is not int or not 0 <= more <= 10**9 or not all(
            isinstance(i, dict) and isinstance(i.get("action"), str) for i in inputs):
        return peer.refuse(expected)
    times = [i.get("client_time") for i in inputs]
    if not all(t is None or is_unix_time(t) for t in times):
        return peer.refuse(f"unsent: client_time must be {UNIX_SECONDS}")
    session = _owned_session(peer, message.get("token"))
    if session is None:
        return peer.refuse("input: not your session")
    if session.unsent_from == peer.sid:
        return peer.refuse("unsent: sent already on this connection")
    session.unsent_from = peer.sid
    if not session.engine.keep_unsent([(i["action"], session.clock.to_server(t))
                                       for i, t in zip(inputs, times, strict=True)], more):
        return peer.refuse("unsent: more keys than a page can have kept")
    return {"ok": True, "kept": len(inputs) + min(more, 1)}


def _judge_connection(peer: Peer, session: GameSession) -> None:
    """End the visit of a study participant whose round trip stays above the study's
    ``max_round_trip_ms`` (``ClockOffset.typical_rtt``): the flow records the
    ``slow-connection`` ending, and the page is sent to it (``visit-ended``)."""
    typical = session.clock.typical_rtt()
    if typical is None or session.study_id is None or session.participant_id is None:
        return
    app = peer.app
    flow = app.extensions["gridstudy.flow"]
    limit = off_loop(flow.round_trip_limit, session.study_id)
    if limit is None or typical * 1000 <= limit:
        return
    log.info("%s: round trip %.0f ms over the study's %.0f ms; the visit ends",
             label(session.token), typical * 1000, limit)
    off_loop(flow.leave, session.study_id, session.participant_id, "slow-connection")
    with app.app_context():
        deadlines.close(app, app.extensions["socketio"], session, session.study_id)


def _owned_session(peer: Peer, token: Any) -> GameSession | None:
    session = peer.scheduler.get(token)
    if session is None or session.sid != peer.sid:
        return None
    return session


def on_pong(peer: Peer, message: Any = None) -> None:
    """Client answers a ``ping`` with ``pong {sent, client_time}``. Adds a clock sample to
    every session of this connection; emits the next ``ping`` until the round is complete."""
    received = time.time()
    if not isinstance(message, dict):
        peer.refuse("pong: expected {sent, client_time}")
        return
    sent, client_time = message.get("sent"), message.get("client_time")
    if not (is_unix_time(sent) and is_unix_time(client_time)):
        peer.refuse(f"pong: sent and client_time must be {UNIX_SECONDS}")
        return
    sessions = peer.scheduler.sessions_of(peer.sid)
    for session in sessions:
        session.clock.add(sent, client_time, received)
        _judge_connection(peer, session)
    if any(not s.clock.round_complete for s in sessions):
        peer.emit("ping", {"sent": time.time()})


def on_disconnect(peer: Peer, reason: Any = None) -> None:
    """The connection closed (tab closed, network lost). Pauses its sessions, which wait
    for a ``join`` from a new connection; nothing is emitted."""
    scheduler = peer.scheduler
    for session in scheduler.sessions_of(peer.sid):
        scheduler.pause(session.token)
        session.sid, session.idle_since = None, steady_time()
    for played in browser_play.sessions(peer.app).values():
        if played.sid == peer.sid:
            played.sid, played.idle_since = None, steady_time()


def on_join_browser(peer: Peer, message: Any = None) -> dict[str, Any]:
    """Client sends ``join-browser {token}`` (``takeover: true`` to move it here) for an
    attempt its page plays in the browser (``study_server/browser_play.py``). Binds this
    connection to it and answers what the page rebuilds the attempt from (``record``:
    the actions the server holds and the number of the next log entry it expects)."""
    token = message.get("token") if isinstance(message, dict) else None
    session = browser_play.sessions(peer.app).get(token) if isinstance(token, str) else None
    if session is None and isinstance(token, str) and TOKEN.fullmatch(token):
        try:  # a page that played on while its server restarted, or came from another worker
            session = _adopt_browser(peer, token, takeover=message.get("takeover") is True)
        except STORAGE_ERRORS as error:
            if isinstance(error, SQLAlchemyError) and not unavailable(error):
                raise
            return peer.refuse(JOIN_LATER)
        if isinstance(session, str):
            return peer.refuse(session)
    if session is None or not _may_play(session.study_id, session.participant_id, session.owner):
        return peer.refuse(UNKNOWN_SESSION)
    if session.sid not in (None, peer.sid):
        if message.get("takeover") is not True:
            return peer.refuse("join: this session is open in another connection")
        peer.emit("taken-over", {"token": session.token}, to=session.sid)
    session.sid, session.joined, session.idle_since = peer.sid, True, None
    peer.app.extensions["gridstudy.door"].joined(peer.sid)
    return {"ok": True, "problem_id": session.problem_id, "frame_rate": session.frame_rate,
            "record": session.attempt.record(), "verified": session.attempt.verified}


def _adopt_browser(peer: Peer, token: str, takeover: bool) -> Any:
    """An attempt played in the browser that this worker does not hold, rebuilt here: only
    for the participant it belongs to, as :func:`_adopt` (anyone else moves nothing)."""
    found = off_loop(browser_play.find, peer.app, token)
    if found is None or not _may_play(found[1], found[2], None):
        return None
    return browser_play.adopt(peer.app, found[0], token, takeover,
                              sleep=peer.app.extensions["socketio"].sleep)


def on_log(peer: Peer, message: Any = None) -> dict[str, Any]:
    """Client sends ``log {token, batch}``: its play log's entries from the first the
    server has not acknowledged. They are replayed on the server's own engine, off the
    event loop, stored and checked; the answer's ``next`` says what is stored."""
    if not isinstance(message, dict) or not isinstance(message.get("batch"), list):
        return peer.refuse("log: expected {token, batch}")
    token = message.get("token")
    session = browser_play.sessions(peer.app).get(token) if isinstance(token, str) else None
    if session is None or session.sid != peer.sid:
        return peer.refuse("log: not your session")
    try:
        taken = off_loop(session.attempt.take, message["batch"])
    except LogError as error:
        return peer.refuse(f"log: {error}")
    return {"ok": True, "next": taken.next, "verified": taken.verified}


def on_unknown(peer: Peer, event: str, *args: Any) -> None:
    """Any event without a handler (the door lets none through; kept for safety): ignored
    and counted (the session goes on)."""
    peer.app.extensions["gridstudy.door"].note(peer.sid, "unknown event")


HANDLERS = {
    "join": on_join,
    "join-browser": on_join_browser,
    "disconnect": on_disconnect,
    "*": on_unknown,
}
"""Handlers run in Flask's request context (they read the flow's cookie)."""
BARE_HANDLERS = {
    "input": on_input,
    "unsent": on_unsent,
    "log": on_log,
    "pong": on_pong,
}
"""Handlers run without it: a participant's frequent messages (:func:`register_handlers`)."""
