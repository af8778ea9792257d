"""Shared fixtures: problems on the test environments, a live server, socket clients, a browser.

* ``test_problems``: one problem per challenge on ``test/walker`` (8 FPS), registered for
  the test and forgotten after it.
* ``live_server``: the real app (``create_app``) on a loopback port, served by a thread,
  with a temporary SQLite file; ``make_live_server(config)`` for other configurations.
  Its helpers read what was stored (``events``, ``raw_inputs``, ``episode``).
* ``player``: a factory of python-socketio clients that join a session and record every
  ``state`` and ``refused`` they receive.
* ``page``: a Playwright page in Debian's Chromium (one browser per test session, a fresh
  context per test).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio
from sqlmodel import select
from werkzeug.serving import make_server

from records.models import EpisodeRow, Event, RawInput
from study_server.commands.serve import NoDelayRequestHandler
from study_server.services import free_port
from tasks import registry
from tasks.worldtest.changes import ViewReplica
from tasks.worldtest.problem import Problem
from tests.envs import register_test_envs

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

WALKER_PROBLEMS = {
    "mfp": Problem(
        "test/rt-walker-mfp", "test/walker", "mfp", 0,
        params={
            "actions": ["right", "right", "down", "click 0 4"], "mask": [[2, 1], [0, 4]],
            "masked_from": 3,
            "options": [["gold", "blue"], ["black", "blue"], ["gold", "black"],
                        ["black", "black"], ["blue", "gold"], ["gold", "gold"]],
            "answer": 0,
        },
    ),
    "planning": Problem(
        "test/rt-walker-planning", "test/walker", "planning", 0,
        params={"goal_cells": [[2, 2], [4, 4]], "goal_colours": ["gold", "blue"],
                "horizon": 2000, "optimal_length": 5, "plan": ["click 4 4", "right", "right",
                                                               "down", "down"]},
    ),
    "cd": Problem(
        "test/rt-walker-cd", "test/walker", "cd", 0,
        params={"changed_env_id": "test/walker-changed", "horizon": 2000,
                "witness": ["right", "right", "right", "click 0 4"], "witness_t_star": 4},
    ),
}
"""One problem per challenge on the 5x5 test Walker (8 FPS): MFP's answer is option 0;
planning wants the walker at (2, 2) and cell (4, 4) painted; CD's change shows when a
cell is clicked after the walker reached column 3."""


@pytest.fixture
def test_problems() -> Iterator[dict[str, Problem]]:
    """The walker problems, registered for this test only (challenge -> Problem)."""
    register_test_envs()
    for problem in WALKER_PROBLEMS.values():
        registry.add_problem(problem, replace=True)
    yield WALKER_PROBLEMS
    for problem in WALKER_PROBLEMS.values():
        registry.unregister(problem_id=problem.id)


# -- the live server ----------------------------------------------------------------------


@dataclass
class LiveServer:
    """A running app, its address and its store, with readers of what was stored."""

    app: Any
    url: str
    db_path: Path
    server: Any = None
    thread: threading.Thread | None = None
    stopped: bool = field(default=False)
    tokens_made: int = 0

    @property
    def store(self) -> Any:
        return self.app.extensions["gridstudy.store"]

    @property
    def scheduler(self) -> Any:
        return self.app.extensions["gridstudy.realtime"]

    def token(self, name: str = "tests", study_id: str | None = None) -> str:
        """A new agent-API token (``gridstudy token create``), named uniquely."""
        from study_server import tokens

        self.tokens_made += 1
        return tokens.create(self.store.engine, f"{name}-{self.tokens_made}", study_id)

    def new_session(self, problem_id: str, record: bool = True) -> dict[str, Any]:
        """Open a session over HTTP, as a script would: ``{token, episode_id, ...}``."""
        response = httpx.post(f"{self.url}/play/{problem_id}/session",
                              params={"record": "1"} if record else {}, timeout=10)
        response.raise_for_status()
        return response.json()

    def _rows(self, model: Any, episode_id: int | None, order: Any) -> list[Any]:
        self.store.flush(timeout=10)
        with self.store.session() as session:
            query = select(model).order_by(order)
            if episode_id is not None:
                query = query.where(model.episode_id == episode_id)
            return list(session.exec(query))

    def events(self, episode_id: int | None = None) -> list[Event]:
        """Stored events (all, or one episode's), in order."""
        return self._rows(Event, episode_id, Event.seq if episode_id else Event.id)

    def raw_inputs(self, episode_id: int | None = None) -> list[RawInput]:
        return self._rows(RawInput, episode_id, RawInput.id)

    def episode(self, episode_id: int) -> EpisodeRow:
        self.store.flush(timeout=10)  # how an attempt ended is queued behind its events
        with self.store.session() as session:
            return session.get(EpisodeRow, episode_id)

    def stop(self) -> None:
        if self.stopped:
            return
        from study_server.app import shutdown

        self.stopped = True
        self.server.shutdown()
        self.thread.join(timeout=10)
        shutdown(self.app)


def start_live_server(db_path: Path, config: dict[str, Any] | None = None) -> LiveServer:
    """The app on a free loopback port, served by werkzeug's threaded server (the
    ``threading`` async mode) in a background thread."""
    from study_server.app import create_app

    app = create_app({"DATABASE_URL": str(db_path), **(config or {})})
    server = make_server("127.0.0.1", 0, app, threaded=True,
                         request_handler=NoDelayRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="live-server", daemon=True)
    thread.start()
    live = LiveServer(app, f"http://127.0.0.1:{server.server_port}", db_path, server, thread)
    return live


@pytest.fixture
def make_live_server(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """A factory: ``make_live_server(config)`` starts one (stopped after the test)."""
    started: list[LiveServer] = []

    def make(config: dict[str, Any] | None = None) -> LiveServer:
        live = start_live_server(tmp_path / f"gridstudy-{len(started)}.db", config)
        started.append(live)
        return live

    yield make
    for live in started:
        live.stop()


@pytest.fixture
def live_server(make_live_server, test_problems) -> LiveServer:
    """The real server with the walker problems registered."""
    return make_live_server()


# -- socket clients -----------------------------------------------------------------------


class Player:
    """A python-socketio client on one session: answers pings, records what it receives."""

    def __init__(self, url: str, token: str, clock_skew: float = 0.0, cookie: str = "") -> None:
        self.url, self.token, self.clock_skew, self.cookie = url, token, clock_skew, cookie
        self.states: list[dict[str, Any]] = []
        """The whole view after each state message (``tasks.worldtest.changes``)."""
        self.messages: list[dict[str, Any]] = []
        """The state messages as they came."""
        self.view = ViewReplica()
        self.refusals: list[dict[str, Any]] = []
        self.sio = socketio.Client(reconnection=False)
        self.sio.on("state", self._state)
        self.sio.on("refused", self.refusals.append)
        self.sio.on("ping", self._pong)

    def _state(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if self.view.receive(message):
            self.sio.emit("join", {"token": self.token})
        elif self.view.state is not None:
            self.states.append(self.view.state)

    def now(self) -> float:
        """This client's clock (the server's, shifted by ``clock_skew``)."""
        return time.time() + self.clock_skew

    def _pong(self, message: dict[str, Any]) -> None:
        try:
            self.sio.emit("pong", {"sent": message["sent"], "client_time": self.now()})
        except socketio.exceptions.BadNamespaceError:
            pass  # the test closed this client while the ping was on its way

    def connect(self) -> Player:
        self.sio.connect(self.url, transports=["websocket"], wait_timeout=10,
                         headers={"Cookie": self.cookie} if self.cookie else {})
        return self

    def join(self, token: str | None = None) -> dict[str, Any]:
        return self.sio.call("join", {"token": token or self.token}, timeout=10)

    def send(self, action: Any, token: str | None = None) -> dict[str, Any]:
        """Send one input and wait for the server's acknowledgement."""
        message = {"token": token or self.token, "action": action, "client_time": self.now()}
        return self.sio.call("input", message, timeout=10)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10) -> dict:
        """The first received state satisfying ``predicate`` (waiting for it if needed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for state in list(self.states):
                if predicate(state):
                    return state
            time.sleep(0.01)
        last = self.states[-1] if self.states else None
        raise TimeoutError(f"no state matched within {timeout} s; last state: {last!r:.300}")

    def wait_ticks(self, count: int, timeout: float = 10) -> dict[str, Any]:
        """Wait until ``count`` more ticks have been applied than the last state shows."""
        start = self.states[-1]["tick"] if self.states else 0
        return self.wait_for(lambda s: s["tick"] >= start + count, timeout)

    def close(self) -> None:
        if self.sio.connected:
            self.sio.disconnect()


@pytest.fixture
def player(live_server: LiveServer) -> Iterator[Callable[..., Player]]:
    """A factory: ``player(problem_id)`` opens a recorded session and joins it."""
    made: list[Player] = []

    def make(problem_id: str, record: bool = True, join: bool = True, **options: Any) -> Player:
        token = live_server.new_session(problem_id, record=record)["token"]
        client = Player(live_server.url, token, **options).connect()
        made.append(client)
        if join:
            client.join()
        return client

    yield make
    for client in made:
        client.close()


# -- the browser --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (one for the whole test session)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context and page for one test."""
    context = browser.new_context(viewport={"width": 1100, "height": 850})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


# -- a real serve process ----------------------------------------------------------------


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0,
               what: str = "the condition") -> None:
    """Return once ``predicate()`` holds; :class:`TimeoutError` naming ``what`` if it does
    not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        time.sleep(0.01)


def start_serve(db: Path, async_mode: str = "gevent", *args: str, log: Path | None = None,
                env: dict[str, str] | None = None, port: int | None = None,
                terminal: int | None = None) -> tuple[subprocess.Popen, str]:
    """``gridstudy serve`` in a subprocess on a loopback port (``port``, or a free one): the
    process and its URL. Its log (stderr) goes to ``log`` when given, else to
    a pipe read if it fails. With ``terminal`` (a pseudo-terminal's side, ``os.openpty``)
    it runs in that terminal as a shell runs a command in it: its output goes there, and
    closing the terminal's other side hangs it up (SIGHUP, then no more output)."""
    port = port or free_port()
    command = [str(Path(sys.executable).parent / "gridstudy"), "serve", "--port", str(port),
               "--db", str(db), "--async-mode", async_mode, *args]
    if terminal is not None:
        process = subprocess.Popen(command, stdin=terminal, stdout=terminal, stderr=terminal,
                                   start_new_session=True, preexec_fn=_control_terminal,
                                   env={**os.environ, **(env or {})})
        return process, _wait_until_serving(process, port, log)
    with log.open("w") if log else nullcontext(subprocess.PIPE) as stderr:  # the child's own copy
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr,
                                   env={**os.environ, **(env or {})})
    return process, _wait_until_serving(process, port, log)


def _control_terminal() -> None:
    """In the child, a session leader now: its standard input becomes its terminal."""
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _wait_until_serving(process: subprocess.Popen, port: int, log: Path | None) -> str:
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/play/", timeout=2)
            return url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    output = (log.read_text() if log else process.stderr.read().decode() if process.stderr
              else "(its output went to its terminal)")
    raise RuntimeError(f"the server did not start: {output[-2000:]}")
