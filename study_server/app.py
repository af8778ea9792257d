"""The application factory: ``create_app(config)`` builds one gridstudy server.

Nothing is configured at import time. ``socketio`` is created here without an app and
bound in the factory, as Flask-SocketIO's own examples do; the store, the real-time
scheduler and every blueprint are set up from the configuration passed in, so tests make
as many independent apps (one at a time) as they like.

Configuration keys (each may also be set as an environment variable ``GRIDSTUDY_KEY``;
``DATABASE_URL`` and ``SOCKETIO_MESSAGE_QUEUE`` are read unprefixed too):

``DATABASE_URL``      a SQLAlchemy URL or a SQLite file path (default ``gridstudy.db``)
``ASYNC_MODE``        ``threading`` (default; see README, "Async mode") or ``gevent``
``PREVIEW``           who may open ``/play/<problem_id>``: ``open`` (default; ``demo``),
                      ``researchers`` (logged in; ``gridstudy serve``'s default) or ``off``
``MAX_PREVIEWS``, ``UNJOINED_TIMEOUT``  previews open at once, played by the server and in the
                      browser together (200), and the seconds a
                      preview nobody joins is kept (45)
``QUEUE_SIZE``, ``RATE_LIMIT``, ``IDLE_TIMEOUT``   real-time input limits (see tasks/worldtest/tick.py)
``SOCKET_RATE``, ``SOCKET_BURST``  Socket.IO events a second (60) and at once (120) one
                      connection may send before the door drops them unread (door.py)
``SOCKETIO_CLIENT_JS``  the npm ``socket.io.min.js`` served at ``/vendor/socket.io.min.js``
``PYODIDE_DIR``       the npm package ``pyodide``, served under ``/vendor/pyodide/`` for
                      browser play (study_server/engine.py)
``DEADLINE_SWEEP``    seconds between two checks of the visits' time limits (5): how late
                      a visit may end after its limit (study_server/deadlines.py)
``FLUSH_INTERVAL``    seconds the event writer batches before writing (0.25): what a
                      ``kill -9`` can lose
``SESSION_COOKIE_SECURE``  true behind HTTPS (cookies are always HttpOnly and SameSite=Lax)
``LOGIN_FREE_PER_USER``, ``LOGIN_FREE_PER_ADDRESS``, ``LOGIN_FIRST_DELAY``  failed dashboard
                      logins allowed per (address, user name) (5) and per address (20)
                      before delays that double from the first (1 s); study_server/logins.py
``ARRIVALS_PER_ADDRESS``, ``ARRIVALS_WINDOW``  new participants one address may bring
                      into the studies (30) within that many seconds (600; 0 for no
                      limit); the server's own machine is not limited (arrivals.py)
``CONNECTIONS_PER_ADDRESS``, ``CONNECTION_QUIET``  connections one address may hold open
                      at once (200), and the seconds one may send nothing before it is
                      closed (60); gevent only, the server's own machine not limited
                      (connections.py)
``BEHIND_PROXY``      true behind one reverse proxy (nginx): the client's address and
                      scheme come from its X-Forwarded-* headers
``ADDRESS``           where this worker listens, shown beside its sessions (cluster.py)
``MAX_CONTENT_LENGTH``  the largest request body a page reads (1,000,000 bytes; the
                      agent API takes up to its largest turn, ``agent_api.MAX_BODY``); a
                      longer one is refused with 413 as it arrives, before it is held in
                      memory or parsed on the loop
``SECRET_KEY``        signs session cookies; also read unprefixed. Without it, a random
                      secret is made once per installation and kept in the database's
                      ``setting`` table, so a restart keeps everybody signed in
"""

from __future__ import annotations

import math
import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, abort, current_app, request, send_file
from flask_socketio import SocketIO
from sqlalchemy import exc as sa_exc
from werkzeug.datastructures import ImmutableMultiDict
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.middleware.proxy_fix import ProxyFix

from records.schema import storable_text
from records.store import StorageUnavailable
from study_server.connections import CONNECTION_QUIET, CONNECTIONS_PER_ADDRESS
from study_server.workers import ROUTE_COOKIE

if TYPE_CHECKING:
    from study_server.scheduler import Scheduler

socketio = SocketIO()

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS: dict[str, Any] = {
    "DATABASE_URL": None,
    "ASYNC_MODE": "threading",
    "SOCKETIO_MESSAGE_QUEUE": None,
    "PREVIEW": "open",
    "MAX_PREVIEWS": 200,
    "UNJOINED_TIMEOUT": 45.0,
    "QUEUE_SIZE": 4,
    "RATE_LIMIT": 30,
    "IDLE_TIMEOUT": 600.0,
    "SOCKETIO_CLIENT_JS": str(ROOT / "node_modules/socket.io-client/dist/socket.io.min.js"),
    "PYODIDE_DIR": str(ROOT / "node_modules/pyodide"),
    "FLUSH_INTERVAL": 0.25,
    "DEADLINE_SWEEP": 5.0,
    "SOCKET_RATE": 60.0,
    "SOCKET_BURST": 120,
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_SECURE": False,
    "BEHIND_PROXY": False,
    "ADDRESS": None,
    "MAX_CONTENT_LENGTH": 1_000_000,
    "ARRIVALS_PER_ADDRESS": 30,
    "ARRIVALS_WINDOW": 600.0,
    "CONNECTIONS_PER_ADDRESS": CONNECTIONS_PER_ADDRESS,
    "CONNECTION_QUIET": CONNECTION_QUIET,
}


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """A configured server: store, Socket.IO, real-time scheduler and blueprints."""
    app = Flask(__name__)
    app.config.from_mapping(DEFAULTS)
    for key in ("DATABASE_URL", "SOCKETIO_MESSAGE_QUEUE"):
        app.config[key] = os.environ.get(key) or app.config[key]
    app.config.from_prefixed_env("GRIDSTUDY")
    app.config.from_mapping(config or {})
    numbers(app.config)
    switches(app.config)
    init_store(app)
    app.config["SECRET_KEY"] = (app.config.get("SECRET_KEY") or os.environ.get("SECRET_KEY")
                                or app.extensions["gridstudy.store"].setting(
                                    "secret_key", lambda: secrets.token_hex(32)))
    init_realtime(app)
    register_blueprints(app)
    from study_server.deadlines import Deadlines
    app.extensions["gridstudy.deadlines"] = Deadlines(app, socketio)
    if app.config["BEHIND_PROXY"]:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=1)
    app.after_request(routing_headers)
    app.before_request(refuse_bad_input)
    for error in STORAGE_ERRORS:
        app.register_error_handler(error, storage_unavailable)
    app.register_error_handler(500, failed)
    app.add_url_rule("/vendor/socket.io.min.js", "socketio_client", socketio_client)
    app.add_url_rule("/favicon.ico", "favicon", favicon)
    return app


def numbers(config: dict[str, Any]) -> None:
    """Each setting whose default is a number, as a number of that kind: a value that is
    not one above 0 (``GRIDSTUDY_SOCKET_RATE=fast``) stops the server in one line naming
    its setting, where it said only "could not convert string to float". Every one is a
    count, a size or a time: ``GRIDSTUDY_IDLE_TIMEOUT=NaN`` (read as JSON, so a number)
    let no game go, and ``-1`` let every game go at once."""
    for key, default in DEFAULTS.items():
        if isinstance(default, bool) or not isinstance(default, int | float):
            continue
        kind = "a whole number" if isinstance(default, int) else "a number"
        try:
            value = type(default)(config[key])
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is None or not math.isfinite(value) or value <= 0:
            raise ValueError(f"the setting {key} (GRIDSTUDY_{key}) must be {kind} above 0, "
                             f"not {config[key]!r}")
        config[key] = value


YES, NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
"""How a yes-or-no setting may be written (any case), besides JSON's true and false."""


def switches(config: dict[str, Any]) -> None:
    """Each yes-or-no setting as a bool, and who may open previews one of the three
    answers: anything else stops the server in one line naming the setting. Before, any
    text was taken as it came: ``GRIDSTUDY_BEHIND_PROXY=no`` (a non-empty string, so true)
    trusted every client's X-Forwarded-For, the address every per-address limit counts,
    and ``GRIDSTUDY_PREVIEW=researcher`` opened the previews to anyone."""
    for key, default in DEFAULTS.items():
        if not isinstance(default, bool):
            continue
        value = config[key]
        written = str(value).strip().lower()
        if isinstance(value, bool) or value in (0, 1):
            config[key] = bool(value)
        elif written in YES or written in NO:
            config[key] = written in YES
        else:
            raise ValueError(f"the setting {key} (GRIDSTUDY_{key}) must be true or false "
                             f"({', '.join(YES)} or {', '.join(NO)}), not {value!r}")
    from study_server.play import OFF, OPEN, RESEARCHERS

    preview = config["PREVIEW"]
    if preview is False:
        config["PREVIEW"] = OFF  # GRIDSTUDY_PREVIEW=false
    elif preview not in (OPEN, RESEARCHERS, OFF):
        raise ValueError(f"the setting PREVIEW (GRIDSTUDY_PREVIEW) must be one of {OPEN}, "
                         f"{RESEARCHERS} or {OFF}, not {preview!r}")


def register_blueprints(app: Flask) -> None:
    """Every HTTP area of the server, one line each: add yours here."""
    from study_server import agent_api, dashboard, engine, flow, play, prolific

    app.register_blueprint(play.bp)
    app.register_blueprint(engine.bp)
    app.register_blueprint(prolific.bp)
    flow.init_app(app)
    dashboard.init_app(app)
    agent_api.init_app(app)


def init_store(app: Flask) -> None:
    """The event store from ``DATABASE_URL``, as ``app.extensions["gridstudy.store"]``."""
    from records.store import Store

    app.extensions["gridstudy.store"] = Store(app.config["DATABASE_URL"] or "gridstudy.db",
                                              flush_interval=float(app.config["FLUSH_INTERVAL"]))


def init_realtime(app: Flask) -> None:
    """Bind ``socketio``, attach the socket handlers and create the one scheduler
    (``app.extensions["gridstudy.realtime"]``); its loop starts with the first session."""
    from study_server import cluster, door, monitor, session, sockets
    from study_server.scheduler import Scheduler

    options = {"async_mode": app.config["ASYNC_MODE"], "serializer": sockets.JsonPacket,
               "logger": sockets.OneLineLogger("socketio.server"),
               "engineio_logger": sockets.OneLineLogger("engineio.server"),
               "max_http_buffer_size": door.MAX_MESSAGE,
               # a connection's events are handled in turn by the task reading it, not by
               # a new task each (one per key cost 3 % of the server at 100 players; no
               # handler waits for another message of its own connection)
               "async_handlers": False}
    if app.config["SOCKETIO_MESSAGE_QUEUE"]:
        options["message_queue"] = app.config["SOCKETIO_MESSAGE_QUEUE"]
    socketio.init_app(app, **options)
    app.extensions["gridstudy.door"] = door.Door(
        socketio.server, rate=float(app.config["SOCKET_RATE"]),
        burst=int(app.config["SOCKET_BURST"]))
    if app.config["ASYNC_MODE"] == "gevent":
        app.wsgi_app = sockets.quiet_websocket_errors(app.wsgi_app)
        sockets.unmask_in_c()
        # The export's pyarrow, imported now rather than by the first export: its C
        # initialisation holds the interpreter's lock throughout, in whichever thread,
        # and a server's first export stopped every game for 1.25 s on a busy machine.
        import study_server.export  # noqa: F401
    sockets.register_handlers(socketio, app)
    monitor.init_monitor(app, socketio)
    store = app.extensions["gridstudy.store"]
    app.extensions["gridstudy.realtime"] = Scheduler(
        sockets.make_deliver(socketio),
        start_task=socketio.start_background_task,
        sleep=socketio.sleep,
        idle_timeout=float(app.config["IDLE_TIMEOUT"]),
        unjoined_timeout=float(app.config["UNJOINED_TIMEOUT"]),
        holding=lambda: session.holding(store),
    )
    if app.config["ASYNC_MODE"] == "gevent":
        _share_time_under_gevent(app.extensions["gridstudy.realtime"])
    cluster.init_cluster(app, socketio)


COOPERATE_AFTER = 0.004
"""Seconds of a long step after which it lets the other sessions tick (gevent)."""


def _share_time_under_gevent(scheduler: Scheduler) -> None:
    """A long Autumn step yields to gevent's loop now and then (``tasks/limits.py``), so
    that one heavy program never holds the other sessions' ticks (the scheduler first
    hands the ticks due behind it to another task)."""
    import gevent

    from records.offload import on_loop_thread
    from tasks.limits import share_time

    last = [time.monotonic()]

    def cooperate() -> None:
        now = time.monotonic()
        if now - last[0] >= COOPERATE_AFTER and on_loop_thread():
            scheduler.lend()
            gevent.idle()  # not sleep(0), which lets no timer fire (measured: 214 ms held)
            last[0] = time.monotonic()

    share_time(cooperate=cooperate)


def shutdown(app: Flask) -> None:
    """Stop the scheduler, store every input still waiting for a tick (``dropped``: the
    episodes stay open, to resume after a restart), then write everything still queued
    (serve's exit, test teardown)."""
    from study_server.session import STOPPED_BEFORE_TICK

    scheduler, store = app.extensions["gridstudy.realtime"], app.extensions["gridstudy.store"]
    scheduler.stop()
    app.extensions["gridstudy.deadlines"].running = False
    for session in list(scheduler.sessions.values()):
        session.engine.drain(STOPPED_BEFORE_TICK)
    cluster = app.extensions["gridstudy.cluster"]
    cluster.running = False
    app.extensions["gridstudy.exports"].close()
    try:
        store.wait()  # every row is written before another worker may replay it
        cluster.leave()
    finally:
        store.close()


RETRY_AFTER = 5
"""Seconds a client is asked to wait (``Retry-After``) while the storage is away."""
STORAGE_ERRORS = (StorageUnavailable, sa_exc.OperationalError, sa_exc.InterfaceError,
                  sa_exc.DisconnectionError, sa_exc.TimeoutError)
STORAGE_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">{refresh}
<title>{heading}</title></head><body style="font-family: sans-serif; margin: 3em">
<h1>{heading}</h1><p>{what}</p></body></html>"""


def storage_unavailable(error: Exception) -> Any:
    """The database is away (a full disk, a stopped server, a lock held too long): 503
    with ``Retry-After`` and plain words (JSON under ``/api/``), never a 500 with a
    traceback. Nothing queued is lost: the store retries until it writes. Any other
    database error is a defect and stays one."""
    from records.writer import unavailable

    if isinstance(error, sa_exc.SQLAlchemyError) and not unavailable(error):
        raise error
    current_app.logger.warning("503 for %s %s: the storage is unavailable (%s: %s)",
                               request.method, request.path, type(error).__name__,
                               str(error).splitlines()[0][:200])
    headers = {"Retry-After": str(RETRY_AFTER), "Cache-Control": "no-store"}
    if request.path.startswith("/api/"):
        return {"error": "the database is unavailable for a moment; nothing was lost. "
                         f"Retry in {RETRY_AFTER} s"}, 503, headers
    again = request.method == "GET"
    what = ("This page tries again by itself in a few seconds." if again else
            "Please wait a few seconds, then send the page again.")
    heading = "Saving your progress, one moment"
    if request.path.startswith("/dashboard/"):  # a researcher: what is wrong, without a path
        heading, what = "The study's database is not available", f"{_held_rows()} {what}"
    page = STORAGE_PAGE.format(
        refresh=f'<meta http-equiv="refresh" content="{RETRY_AFTER}">' if again else "",
        heading=heading, what=what)
    return page, 503, headers


def failed(error: Any) -> Any:
    """A defect (the traceback is in the server's log, written before this runs): plain
    words on the participant's page, JSON under ``/api/``; never the framework's bare
    "Internal Server Error", which told a participant nothing of what to do."""
    cause = type(getattr(error, "original_exception", None) or error).__name__
    if request.path.startswith("/api/"):
        return {"error": f"the server failed ({cause}); its log says why"}, 500
    page = STORAGE_PAGE.format(
        refresh="", heading="Something went wrong on our side",
        what="This is not your doing, and the researchers can see what happened. Please try "
             "again in a minute; if this page comes back, message the researchers (on "
             "Prolific: through its messages) rather than returning your submission.")
    return page, 500, {"Cache-Control": "no-store"}


def _held_rows() -> str:
    """What the store holds while the database is away, for the dashboard's 503 page (the
    reason, which may name the database's path, is in the server's log only)."""
    status = current_app.extensions["gridstudy.store"].status()
    since = status["outage_since"]
    when = ("" if since is None else
            f", and it has refused to write since {time.strftime('%H:%M:%S UTC', time.gmtime(since))}")
    return (f"The server keeps {status['waiting']} row(s) in memory, retried until they are "
            f"written{when}; nothing is lost. The server's log says why.")


FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def refuse_bad_input() -> None:
    """A NUL character in a path or a link's parameter is nobody's input (and PostgreSQL's
    text cannot hold it): 400 before any handler reads it. In a form it is what a person
    pasted, into a comment perhaps, on the last page of a study: the form is read with
    it stored as U+FFFD (:func:`records.schema.storable_text`), as everywhere else (1.13).
    A form sent in chunks (its length not announced) is read up to ``MAX_CONTENT_LENGTH``
    and no further: one that reaches it is refused, 413, as one announced too long is
    (before, it was parsed from its start, lacked its CSRF token and was refused, 400,
    for that). JSON bodies are checked field by field where they are read."""
    if any("\x00" in value for value in (request.path, *request.args.values())):
        abort(400, "the request holds a NUL character, which no field can take")
    if request.mimetype not in FORMS:
        return
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    if limit and request.content_length is None and len(request.get_data(cache=True)) >= limit:
        raise RequestEntityTooLarge()
    if any("\x00" in value for value in request.form.values()):
        request.form = ImmutableMultiDict([(key, storable_text(value))
                                           for key, value in request.form.items(multi=True)])


def routing_headers(response: Any) -> Any:
    """The route cookie: a random value per browser, which the load balancer hashes to keep a participant's
    requests and connection on one worker (``study_server/workers.py``); meaningless to
    the server itself."""
    if current_app.config["ADDRESS"]:  # which worker answered (a deployment's logs, tests)
        response.headers["X-Served-By"] = current_app.config["ADDRESS"]
    if ROUTE_COOKIE not in request.cookies:
        response.set_cookie(ROUTE_COOKIE, secrets.token_urlsafe(9), max_age=30 * 86400,
                            httponly=True, samesite="Lax",
                            secure=bool(current_app.config["SESSION_COOKIE_SECURE"]))
    return response


def favicon():
    """The icon, for a browser that asks for it by its old name (pages link it)."""
    return send_file(Path(current_app.static_folder) / "gridstudy/favicon.svg",
                     mimetype="image/svg+xml", max_age=86400)


def socketio_client():
    """The Socket.IO browser client, installed from npm (``make setup``), not committed."""
    path = Path(current_app.config["SOCKETIO_CLIENT_JS"])
    if not path.is_file():
        abort(404, f"{path.name} is missing: run `npm install` (make setup installs it)")
    return send_file(path, mimetype="application/javascript", max_age=3600)
