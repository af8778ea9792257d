"""``gridstudy serve`` (the study server) and ``gridstudy demo`` (a demo database, served)."""

from __future__ import annotations

import os
import signal
import socket
import sys
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

    Everything is patched, the store's writer thread included (it becomes a greenlet
    whose SQLite commits hold the loop for their duration). Leaving threads real fails:
    the writer's queue is shared with greenlets and trips gevent's hub.
    """
    if async_mode == "gevent":
        from gevent import monkey

        monkey.patch_all()


def run(config: dict[str, Any], host: str, port: int, announce: Any = None) -> None:
    """Build the app from ``config`` and serve it until interrupted, then write out the
    store's queue. ``announce(app, base_url)`` prints what the user should open."""
    _patch_for(config.get("ASYNC_MODE", "threading"))
    from study_server.app import create_app, shutdown, socketio

    app = create_app(config)
    _stop_on_signals(config.get("ASYNC_MODE", "threading"), socketio)
    base_url = f"http://{host}:{port}"
    (announce or _announce_server)(app, base_url)
    try:
        options = {"allow_unsafe_werkzeug": True, "request_handler": NoDelayRequestHandler}
        if config.get("ASYNC_MODE", "threading") != "threading":
            options = {}
        socketio.run(app, host=host, port=port, log_output=False, use_reloader=False, **options)
    finally:
        shutdown(app)


def _stop_on_signals(async_mode: str, socketio: Any) -> None:
    """SIGTERM (systemd, docker stop, a benchmark) and Ctrl-C end the server through
    ``run``'s ``finally``, which writes out the store's queue.

    Under gevent a Python signal handler runs inside whichever greenlet happens to be
    running, so raising there can kill the store's writer or a tick half-way and leave
    shutdown waiting for it forever (seen once in about ten benchmark stops at 150
    sessions). gevent's own handler runs the stop in a greenlet of its own instead: the
    server stops accepting, its handlers end, and ``serve_forever`` returns normally.
    """
    if async_mode == "gevent":
        import gevent

        def stop() -> None:
            server = getattr(socketio, "wsgi_server", None)
            if server is None:  # a signal before the server started: just leave
                raise SystemExit(0)
            server.stop(timeout=5)

        for signum in (signal.SIGTERM, signal.SIGINT):
            gevent.signal_handler(signum, stop)
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: sys.exit(0))


def _announce_server(app: Any, base_url: str) -> None:
    store = app.extensions["gridstudy.store"]
    click.echo(f"gridstudy serving on {base_url} (store: {store.url}); previews at {base_url}/play/")
    from study_server.commands.study import study_links

    links = study_links(app, base_url)
    if links:
        click.echo("Studies (paste the link into Prolific); dashboard at " + base_url + "/dashboard/")
        click.echo("\n".join(links))


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--db", default=None,
              help="Database URL or SQLite file (default: $DATABASE_URL, else gridstudy.db).")
@click.option("--async-mode", type=click.Choice(ASYNC_MODES), default=DEFAULT_ASYNC_MODE,
              show_default=True, help="Flask-SocketIO async mode (README: Async mode).")
def serve(host: str, port: int, db: str | None, async_mode: str) -> None:
    """Run the study server (HTTP pages, Socket.IO real-time play, agent API). Previews
    are for logged-in researchers unless GRIDSTUDY_PREVIEW says otherwise."""
    config: dict[str, Any] = {"ASYNC_MODE": async_mode}
    if "GRIDSTUDY_PREVIEW" not in os.environ:
        config["PREVIEW"] = "researchers"
    if db:
        config["DATABASE_URL"] = db
    run(config, host, port)


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

    create_study(url, str(study_file), replace=True)
    password = secrets.token_urlsafe(9)
    with Store(url) as store:
        auth.create_admin(store.engine, "demo", password)
        for old in tokens.listed(store.engine):
            if old.name.startswith("demo-") and old.revoked_at is None:
                tokens.revoke(store.engine, old.name)
        token = tokens.create(store.engine, f"demo-{secrets.token_hex(3)}")
    return password, token


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--data-dir", default="demo-data", show_default=True, type=click.Path(),
              help="Where the demo database is created.")
@click.option("--study", "study_file", default=str(DEMO_STUDY), type=click.Path(dir_okay=False),
              help="Study definition to launch.", show_default="examples/demo-study.yaml")
def demo(host: str, port: int, data_dir: str, study_file: str) -> None:
    """Create a demo database under ./demo-data/ with a demo study and a dashboard login,
    and serve it, printing the study link, the dashboard and preview links."""
    directory = Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"DATABASE_URL": str(directory / "gridstudy.db"), "ASYNC_MODE": DEFAULT_ASYNC_MODE}
    _patch_for(DEFAULT_ASYNC_MODE)  # before the store starts a thread (or Ctrl-C hangs)
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
