"""``gridstudy serve`` (the study server) and ``gridstudy demo`` (a demo database, served)."""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from werkzeug.serving import WSGIRequestHandler

ASYNC_MODES = ("gevent", "threading")
DEFAULT_ASYNC_MODE = "gevent"
"""Measured with bench/load.py: see README, "Async mode" (threading stays available)."""


class NoDelayRequestHandler(WSGIRequestHandler):
    """Werkzeug's handler, fitted for websockets.

    Nagle's algorithm is off: a state or an acknowledgement is a small websocket frame,
    and Nagle plus delayed ACKs held each back about 20 ms (measured). And the connection
    is closed when a websocket ends: werkzeug would otherwise read the client's closing
    frame as a new HTTP request, answer 400, and leave the client waiting 3 s for the
    close handshake.
    """

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self) -> None:
        super().handle_one_request()
        if getattr(self, "headers", None) and self.headers.get("Upgrade", "").lower() == "websocket":
            self.close_connection = True


def _patch_for(async_mode: str) -> None:
    """gevent must patch the standard library before the server's modules use it.

    Everything is patched, the store's writer thread included (it becomes a greenlet,
    whose transactions run in gevent's pool of native threads: ``records/offload.py``).
    Leaving threads real fails: the writer's queue is shared with greenlets and trips
    gevent's hub. psycopg then waits cooperatively only on the loop's thread.
    """
    if async_mode == "gevent":
        from gevent import monkey

        from records.offload import psycopg_waits_natively_off_loop

        monkey.patch_all()
        psycopg_waits_natively_off_loop()


def run(config: dict[str, Any], host: str, port: int, announce: Any = None,
        check: bool = True) -> None:
    """Build the app from ``config`` and serve it until interrupted, then write out the
    store's queue. ``announce(app, base_url)`` prints what the user should open;
    ``check``: refuse to serve a study whose problems are not registered here."""
    _patch_for(config.get("ASYNC_MODE", "threading"))
    from study_server.app import create_app, shutdown, socketio
    from study_server.connections import ConnectionGuard

    _say_open_file_limit()
    app = create_app(config)
    if check:
        try:
            check_studies(app.extensions["gridstudy.store"].engine, app.config)
        except click.ClickException:
            shutdown(app)
            raise
    _freeze_startup_objects()
    _stop_on_signals(config.get("ASYNC_MODE", "threading"), socketio)
    base_url = f"http://{host}:{port}"
    (announce or _announce_server)(app, base_url)
    try:
        options: dict[str, Any] = {"allow_unsafe_werkzeug": True,
                                   "request_handler": NoDelayRequestHandler}
        if config.get("ASYNC_MODE", "threading") != "threading":
            options = {"spawn": ConnectionGuard(app.config["CONNECTIONS_PER_ADDRESS"],
                                                app.config["CONNECTION_QUIET"])}
        socketio.run(app, host=host, port=port, log_output=False, use_reloader=False, **options)
    finally:
        shutdown(app)


def _say_open_file_limit() -> None:
    """Take every open file the system lets this process have (each connection is one),
    and warn when that is still few (``study_server.connections``)."""
    from study_server.connections import few_files_warning, raise_open_file_limit

    warning = few_files_warning(raise_open_file_limit())
    if warning:
        click.echo(f"Warning: {warning}", err=True)


def _freeze_startup_objects() -> None:
    """Leave everything made while starting (the registry, the libraries, the app) out of
    the garbage collector's full passes, and let it collect the young generation less often.

    A full pass walks every tracked object; with a hundred sessions playing, one held
    every tick loop for about 110 ms once in each 15-second benchmark run, the worst tick
    lateness of the run (measured). Frozen, the startup objects are not walked again.

    Every tick makes a few short-lived containers per session (the event row, the state
    message, the diff), and at the interpreter's default of 700 the young generation was
    collected 25 times a second at 200 sessions, each pass promoting rows still queued for
    the store to be walked again in the older ones: 6.5 % of the server's CPU, with five
    full passes of 37 ms in 15 s. At :data:`YOUNG_THRESHOLD` the same run collected a
    quarter as much (0.17 s against 0.73 s) and one full pass; what waits for a pass is a
    few megabytes at most.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


YOUNG_THRESHOLD = 10_000
"""Allocations (less deallocations) of tracked objects between two collections of the
young generation (CPython's default: 700)."""


STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""The signals that stop the server with everything acknowledged written. SIGHUP is the
terminal closing (an SSH connection dropped, a window closed): left to its default it
ended the process at once, as a ``kill -9`` does."""


def _stop_on_signals(async_mode: str, socketio: Any) -> None:
    """SIGTERM (systemd, docker stop, a benchmark), Ctrl-C and the terminal closing
    (SIGHUP) end the server through ``run``'s ``finally``, which writes out the store's
    queue.

    Under gevent a Python signal handler runs inside whichever greenlet happens to be
    running, so raising there can kill the store's writer or a tick half-way and leave
    shutdown waiting for it forever (seen once in about ten benchmark stops at 150
    sessions). gevent's own handler runs the stop in a greenlet of its own instead: the
    server stops accepting, its handlers end, and ``serve_forever`` returns normally.
    """
    if async_mode == "gevent":
        import gevent

        def stop(signum: int) -> None:
            _say_why(signum)
            server = getattr(socketio, "wsgi_server", None)
            if server is None:  # a signal before the server started: just leave
                raise SystemExit(0)
            server.stop(timeout=5)

        for signum in STOPPING:
            gevent.signal_handler(signum, stop, signum)
        return

    def leave(signum: int, _frame: Any) -> None:
        _say_why(signum)
        sys.exit(0)

    for signum in STOPPING:
        signal.signal(signum, leave)


def _say_why(signum: int) -> None:
    if signum != signal.SIGHUP:
        return
    try:  # to the log file, if stderr is one: the terminal itself has gone
        click.echo("gridstudy: the terminal closed (SIGHUP); stopping, everything "
                   "acknowledged is written first. To keep a study running after its "
                   "terminal closes, start it under systemd, tmux or nohup.", err=True)
    except OSError:
        pass


def _announce_server(app: Any, base_url: str) -> None:
    store = app.extensions["gridstudy.store"]
    click.echo(f"gridstudy serving on {base_url} (store: {store.url}); previews at {base_url}/play/")
    _echo_study_links(store, base_url)
    _say_other_servers(app)


def _say_other_servers(app: Any) -> None:
    """Warn when another server serves the same database (one left running in another
    terminal, on another port): the links given out earlier lead there, maybe to other
    code, and nothing else would say so."""
    now = time.time()  # (a predecessor killed a moment ago was forgotten at start)
    for peer in app.extensions["gridstudy.cluster"].peers():
        host, pid = _host_and_pid(peer.id)
        click.echo(f"Warning: another gridstudy server serves this database too (process "
                   f"{pid} on {host}, started {now - peer.started_at:.0f} s ago, "
                   f"{'at ' + peer.address if peer.address else 'on its own'}): participants "
                   "following a link to it play there. Stop it if it was left running.",
                   err=True)


def _host_and_pid(worker_id: str) -> tuple[str, str]:
    """The host and process of a worker's id (``cluster.new_worker_id``), to name it."""
    host, pid = (worker_id.split(":") + ["?", "?"])[:2]
    return host, pid


def _echo_study_links(store: Any, base_url: str) -> None:
    from study_server.commands.study import study_links

    links = study_links(store, base_url)
    if links:
        click.echo("Studies (paste the link into Prolific); dashboard at " + base_url + "/dashboard/")
        click.echo("\n".join(links))
    _say_unchecked(store)


def _say_unchecked(store: Any) -> None:
    """Warn of the problems of each open study that no check showed passable at the
    version this process serves: ``study create`` said so for the version it saw, and a
    program edited since is served as it is now."""
    from sqlmodel import select

    from consent.definition import from_stored
    from records.models import Study
    from study_server.commands.study import doubt_lines

    with store.session() as db:
        studies = db.exec(select(Study).where(Study.status == "open").order_by(Study.id)).all()
    for study in studies:
        try:
            lines = doubt_lines(from_stored(study.definition), "Warning", f"study {study.id!r}")
        except Exception as error:  # a warning never stops a server that can serve
            lines = [f"Warning: could not look at study {study.id!r}'s checks: {error}"]
        for line in lines:
            click.echo(line, err=True)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--db", default=None,
              help="Database URL or SQLite file (default: $DATABASE_URL, else gridstudy.db).")
@click.option("--async-mode", type=click.Choice(ASYNC_MODES), default=DEFAULT_ASYNC_MODE,
              show_default=True, help="Flask-SocketIO async mode (README: Async mode).")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server processes, behind nginx (README: Running a large study).")
@click.option("--message-queue", default=None, metavar="URL",
              help="Redis URL joining the workers (default: $SOCKETIO_MESSAGE_QUEUE).")
@click.option("--data-dir", default=None, type=click.Path(file_okay=False),
              help="With --workers: keep a PostgreSQL database and a Redis server in this "
                   "folder, started and stopped with the workers (instead of --db and "
                   "--message-queue).")
@click.option("--print-nginx-config", "nginx_for", multiple=True, metavar="HOST:PORT",
              help="Print nginx's configuration for workers at these addresses and exit "
                   "(several machines).")
@click.option("--worker", is_flag=True,
              help="One worker behind a load balancer (several machines): trusts its "
                   "X-Forwarded-* headers and prints nothing at start.")
@click.option("--skip-check", is_flag=True,
              help="Start without the checks: SQLite's quick_check of the database file, "
                   "which reads all of it (measured: about 1 s per GB from the page cache, "
                   "20 s per GB from a cold disk), and that every study open or being played "
                   "plays problems registered here, with the browser files it needs.")
def serve(host: str, port: int, db: str | None, async_mode: str, workers: int,
          message_queue: str | None, data_dir: str | None, nginx_for: tuple[str, ...],
          worker: bool, skip_check: bool) -> None:
    """Run the study server (HTTP pages, Socket.IO real-time play, agent API). Previews
    are for logged-in researchers unless GRIDSTUDY_PREVIEW says otherwise. A SQLite
    database that fails SQLite's quick_check is refused (exit 1), and so is a study open
    or being played whose problems are not registered here (its library is elsewhere)."""
    from records.store import command_url
    from study_server.workers import nginx_config

    if nginx_for:
        click.echo(nginx_config(nginx_for, f"{host}:{port}", "/var/lib/gridstudy/nginx"), nl=False)
        return
    if not skip_check:
        check_database(command_url(db))
    config: dict[str, Any] = {"ASYNC_MODE": async_mode}
    if "GRIDSTUDY_PREVIEW" not in os.environ:
        config["PREVIEW"] = "researchers"
    if db:
        config["DATABASE_URL"] = db
    if message_queue:
        config["SOCKETIO_MESSAGE_QUEUE"] = message_queue
    if workers > 1 or data_dir:
        run_workers(workers, host, port, db, message_queue, data_dir, async_mode, skip_check)
        return
    if worker:  # behind nginx, one of several: say nothing, the supervisor announces
        config.update(BEHIND_PROXY=True, ADDRESS=f"{host}:{port}")
    else:
        check_address(host, port)
    run(config, host, port, announce=(lambda app, url: None) if worker else None,
        check=not skip_check)


def check_address(host: str, port: int) -> None:
    """Refuse, in one line and before starting anything, an address another process
    listens on (most often a server already running on the same database): the server
    used to announce itself, start its sweepers, and only then fail to listen. Port 0
    (any free port) is refused too: the link printed, and given to participants, could
    not name it."""
    if port == 0:
        raise click.ClickException("--port 0 would listen on a port chosen at random, which "
                                   "no link could name: choose a port (the default is 5000)")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            hint = ("Is another gridstudy serve running there? Stop it, or choose another "
                    "--port" if error.errno == errno.EADDRINUSE else
                    "Check --host: an address of this machine, or a name it resolves to one")
            raise click.ClickException(
                f"cannot listen on {host}:{port}: {error.strerror or error}. {hint}") from None


def check_studies(engine: Any, config: Mapping[str, Any]) -> None:
    """Refuse, in one line, to serve a study (open, or with participants playing) that
    cannot be played from here:

    - problems this process has not registered: the library is read from
      ``$GRIDSTUDY_LIBRARY``, else ``./gridstudy-library`` of the folder the server starts
      in, and a server started elsewhere answered every page of the study with a bare
      Internal Server Error, to participants arriving from Prolific;
    - the browser's files from npm (``make setup``): the Socket.IO client every game page
      loads, and Pyodide for a study played in the browser. Installed with ``pip install``
      out of gridstudy's checkout, the server started, printed its links, and every
      participant's game stayed on "Connecting..."."""
    from study_server.commands.study import served_studies, unknown_problems
    from tasks.library import library_root

    served = served_studies(engine)
    unknown = unknown_problems(served)
    if unknown:
        studies = "; ".join(f"study {study!r} plays {', '.join(problems)}"
                            for study, problems in unknown.items())
        raise click.ClickException(
            f"problems not registered here: {studies}. The library read here is "
            f"{library_root().resolve()}: start in the folder that holds the library the "
            "study was made with, or set GRIDSTUDY_LIBRARY to it (--skip-check serves it "
            "anyway, and its participants' pages fail)")
    needed = [("the Socket.IO browser client every game page loads",
               Path(config["SOCKETIO_CLIENT_JS"]))]
    in_browser = [study for study, definition in served if definition.play == "browser"]
    if in_browser:
        needed.append((f"Pyodide, which study {in_browser[0]!r} plays its games in "
                       "(play: browser)", Path(config["PYODIDE_DIR"]) / "pyodide.js"))
    missing = [f"{what} ({path})" for what, path in needed if not path.is_file()]
    if missing:
        raise click.ClickException(
            f"missing: {'; '.join(missing)}. They come from npm: run `make setup` in "
            "gridstudy's checkout and serve from there (a `pip install` elsewhere does not "
            "bring them; --skip-check serves anyway, and participants' games never connect)")


def check_database(url: str) -> None:
    """Refuse, in one line, a SQLite database whose pages SQLite's quick_check finds
    damaged: serving it would answer participants with 500s while the dashboard looked
    fine. A missing file is made by the server, but not its folder; one this process
    cannot write is refused with what to change (``records.database.check_writable``);
    other databases check themselves."""
    from records.database import check_sqlite_file, check_writable, sqlite_path

    path = sqlite_path(url)
    if path is not None:  # a missing folder, or one it may not write
        check_writable(path)  # before the check, which would blame the file
    if path is None or not path.is_file() or not path.stat().st_size:
        return
    try:
        check_sqlite_file(path, thorough=True)
    except (ValueError, FileNotFoundError) as error:
        raise click.ClickException(f"{error}. Restore it from a backup (or start with "
                                   "--skip-check to serve it anyway)") from None


def run_workers(workers: int, host: str, port: int, db: str | None, message_queue: str | None,
                data_dir: str | None, async_mode: str, skip_check: bool = False) -> None:
    """``serve --workers N``: the database and queue checked (or started in
    ``data_dir``), then the workers and nginx until Ctrl-C or SIGTERM."""
    import tempfile

    from records.database import database_url, make_engine
    from study_server import services
    from study_server.app import DEFAULTS
    from study_server.workers import Supervisor

    started: list[Any] = []
    folder = Path(data_dir).resolve() if data_dir else Path(tempfile.mkdtemp(prefix="gridstudy-"))
    try:
        if data_dir and not db and not os.environ.get("DATABASE_URL"):
            started.append(services.start_postgres(folder / "postgres"))
            db = started[-1].url
        if data_dir and not message_queue and not os.environ.get("SOCKETIO_MESSAGE_QUEUE"):
            started.append(services.start_redis(folder / "redis"))
            message_queue = started[-1].url
        db = db or os.environ.get("DATABASE_URL")
        message_queue = message_queue or os.environ.get("SOCKETIO_MESSAGE_QUEUE")
        if not db or database_url(db).startswith("sqlite"):
            raise click.UsageError("several workers share one PostgreSQL database: give "
                                   "--db postgresql://... (or --data-dir to keep one there)")
        if not message_queue:
            raise click.UsageError("several workers talk through Redis: give --message-queue "
                                   "redis://... (or --data-dir to keep one there)")
        if not skip_check:
            engine = make_engine(db)
            try:
                check_studies(engine, DEFAULTS)
            finally:
                engine.dispose()
        _say_open_file_limit()  # nginx inherits it
        supervisor = Supervisor(workers, host, port, folder / "run",
                                ["--async-mode", async_mode, *(["--skip-check"] * skip_check)],
                                env={"DATABASE_URL": db, "SOCKETIO_MESSAGE_QUEUE": message_queue},
                                on_death=lambda pid: _forget_worker(db, pid))
        (folder / "run").mkdir(parents=True, exist_ok=True)

        def stop(signum: int, _frame: Any) -> None:
            _say_why(signum)
            supervisor.stopping = True

        for signum in STOPPING:
            signal.signal(signum, stop)
        supervisor.start()
        _announce_workers(supervisor, db, message_queue, f"http://{host}:{port}")
        try:
            supervisor.watch()
        finally:
            supervisor.stop()
    except services.ServiceError as error:
        raise click.ClickException(str(error)) from None
    finally:
        for service in reversed(started):
            service.stop()


def _forget_worker(db: str, pid: int) -> None:
    from records.database import make_engine
    from study_server.cluster import Cluster

    engine = make_engine(db)
    try:
        Cluster(engine).forget(pid)
    finally:
        engine.dispose()


def _announce_workers(supervisor: Any, db: str, message_queue: str, base_url: str) -> None:
    from records.database import database_url
    from study_server.commands.study import shown

    click.echo(f"gridstudy serving on {base_url} with {supervisor.count} workers "
               f"(ports {', '.join(map(str, supervisor.ports))}) behind nginx; "
               f"database {shown(database_url(db))}, message queue {shown(message_queue)}; "
               f"logs in {supervisor.folder}")
    from records.store import Store

    with Store(db) as store:
        _echo_study_links(store, base_url)


DEMO_LINKS_PER_CHALLENGE = 2


def demo_links(base_url: str) -> list[str]:
    """Preview links of a few registered problems, a couple per challenge."""
    from tasks import registry

    links, seen = [], {}
    for spec in registry.list_problems():
        seen[spec.challenge] = seen.get(spec.challenge, 0) + 1
        if seen[spec.challenge] <= DEMO_LINKS_PER_CHALLENGE:
            links.append(f"  {spec.challenge:<9} {base_url}/play/{spec.id}")
    return links


DEMO_STUDY = Path(__file__).resolve().parents[2] / "examples" / "demo-study.yaml"


def prepare_demo(url: str, study_file: Path) -> tuple[str, str]:
    """Store the demo study (replacing an older copy), give the ``demo`` admin a fresh
    random password and make a fresh agent-API token ``demo-<random>`` (revoking the
    previous demo tokens): ``(password, token)``, so the researcher can log in and run
    agents against the demo."""
    import secrets

    from records.store import Store
    from study_server import auth, tokens
    from study_server.commands.study import create_study

    create_study(url, str(study_file), replace=True, live=True)  # the demo's own study
    password = secrets.token_urlsafe(9)
    with Store(url) as store:
        auth.create_admin(store.engine, "demo", password)
        for old in tokens.listed(store.engine):
            if old.name.startswith("demo-") and old.revoked_at is None:
                tokens.revoke(store.engine, old.name)
        token = tokens.create(store.engine, f"demo-{secrets.token_hex(3)}")
    return password, token


def _refuse_a_second_demo(url: str, directory: Path) -> None:
    """Stop before anything changes when a demo already serves ``directory`` (started in
    another terminal, on another port): a second would give the demo login a new
    password and revoke the first's agent token, so that what the first printed no
    longer works, and two servers would hand out links to one study."""
    from records.store import Store
    from study_server.cluster import Cluster

    if not Path(url).is_file():
        return
    with Store(url) as store:
        cluster = Cluster(store.engine)
        cluster.forget_dead_here()  # one killed a moment ago is not serving
        running = cluster.peers()
    if running:
        _, pid = _host_and_pid(running[0].id)
        raise click.ClickException(
            f"a demo is already running on {directory} (process {pid}, or another "
            "gridstudy server of its database): its dashboard password and agent token "
            "are the ones it printed when it started. Stop it "
            "first (Ctrl-C where it runs), or start another beside it with --data-dir "
            "and --port of its own.")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--data-dir", default="demo-data", show_default=True, type=click.Path(),
              help="Where the demo database is created.")
@click.option("--study", "study_file", default=str(DEMO_STUDY), type=click.Path(dir_okay=False),
              help="Study definition to launch.", show_default="examples/demo-study.yaml")
def demo(host: str, port: int, data_dir: str, study_file: str) -> None:
    """Create a demo database under ./demo-data/ with a demo study and a dashboard login,
    and serve it, printing the study link, the dashboard and preview links."""
    check_address(host, port)  # before replacing the study a running demo serves
    if Path(study_file) == DEMO_STUDY and not DEMO_STUDY.is_file():
        raise click.ClickException("the demo study is examples/demo-study.yaml of gridstudy's "
                                   "checkout, not of a `pip install`: run `make demo` in the "
                                   "checkout, or give --study FILE")
    directory = Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"DATABASE_URL": str(directory / "gridstudy.db"), "ASYNC_MODE": DEFAULT_ASYNC_MODE}
    _patch_for(DEFAULT_ASYNC_MODE)  # before the store starts a thread (or Ctrl-C hangs)
    _refuse_a_second_demo(config["DATABASE_URL"], directory)
    password, token = prepare_demo(config["DATABASE_URL"], Path(study_file))

    def announce(app: Any, base_url: str) -> None:
        _announce_server(app, base_url)
        click.echo(f"Dashboard login: user 'demo', password {password!r} (new each start)")
        click.echo(f"Agent API token (new each start): GRIDSTUDY_TOKEN={token} "
                   f"gridstudy agent run --server {base_url} ...")
        links = demo_links(base_url)
        click.echo("Preview a problem (nothing recorded; add ?record=1 to record):")
        click.echo("\n".join(links) if links else "  (no problems are registered yet)")
        click.echo(f"All problems: {base_url}/play/")

    run(config, host, port, announce)
