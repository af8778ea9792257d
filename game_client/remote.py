"""Remote play: the pygame window as a participant's client of a running server.

The server owns the episode and its clock (``study_server.sockets``): this side joins a
session by its token (the join code) over Socket.IO, rebuilds the view from the states
the server sends (the whole view on joining, then what changed: ``tasks.worldtest.changes``)
and draws it, answers ``ping`` with its clock (the server estimates the offset), and sends each
key or click as ``input``. A key pressed while the connection is lost is kept, not sent,
and told to the server as ``unsent`` once the game is joined again (stored as never
applied, ``study_server.sockets.on_unsent``). :class:`RemoteLoop` stands where the local
:class:`~game_client.loop.GameLoop` stands, so :class:`~game_client.play.PygameClient`
draws and reads input the same way in both modes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import socketio

from tasks.worldtest.changes import ViewReplica
from tasks.worldtest.tick import UNSENT_KEPT

REDRAW_FPS = 30
RETRY_WAIT = 2.0
"""Seconds before joining again after a refusal that says ``retry`` (the database away
for a moment, another server still holding the game: ``study_server.sockets.TRY_AGAIN``)."""
JOIN_PATIENCE = 60.0
"""Seconds :meth:`RemoteSession.join` goes on joining again while the server says retry."""


class JoinError(RuntimeError):
    """The server refused to let this client join (unknown code, or already open)."""


class RemoteSession:
    """One Socket.IO connection bound to one session."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.view = ViewReplica()
        self.refusals: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.joined = False
        """Whether this connection is bound to the game (keys are sent), since its last
        state; False from a disconnection or a refused join until the next state."""
        self.unsent: list[dict[str, Any]] = []
        self.unsent_more = 0
        self.sio = socketio.Client(reconnection=True)
        self.sio.on("state", self._on_state)
        self.sio.on("ping", self._on_ping)
        self.sio.on("refused", self._on_refused)
        self.sio.on("connect", self._rejoin)
        self.sio.on("disconnect", self._lost)

    @property
    def state(self) -> dict[str, Any] | None:
        """The whole view, rebuilt from the server's states (``tasks.worldtest.changes``)."""
        return self.view.state

    def _on_state(self, message: dict[str, Any]) -> None:
        with self.lock:
            lost = self.view.receive(message)
            back, self.joined = not self.joined, True
            told = {"token": self.token, "inputs": self.unsent, "more": self.unsent_more}
            if back:
                self.unsent, self.unsent_more = [], 0
        if back and (told["inputs"] or told["more"]):
            self.sio.emit("unsent", told)
        if lost:  # a state went missing: the server sends the whole view on a join
            self.sio.emit("join", {"token": self.token})

    def _lost(self, *_reason: Any) -> None:
        with self.lock:
            self.joined = False

    def _on_ping(self, message: dict[str, Any]) -> None:
        self.sio.emit("pong", {"sent": message["sent"], "client_time": time.time()})

    def _rejoin(self) -> None:
        if self.state is not None:  # a reconnection: bind the new connection again
            self.sio.emit("join", {"token": self.token})

    def _on_refused(self, message: dict[str, Any]) -> None:
        self.refusals.append(message)
        if message.get("retry") and self.state is not None:  # a rejoin: again, shortly
            self._lost()
            self.sio.start_background_task(self._rejoin_later)

    def _rejoin_later(self) -> None:
        self.sio.sleep(RETRY_WAIT)
        if self.sio.connected:
            self._rejoin()

    def join(self, timeout: float = 10.0) -> dict[str, Any]:
        """Connect and join (again every :data:`RETRY_WAIT` seconds, for at most
        :data:`JOIN_PATIENCE`, while the server says retry); the first state;
        :class:`JoinError` when refused."""
        self.sio.connect(self.url, transports=["websocket"], wait_timeout=timeout)
        deadline = time.monotonic() + JOIN_PATIENCE
        answer = self.sio.call("join", {"token": self.token}, timeout=timeout)
        while answer and answer.get("retry") and time.monotonic() < deadline:
            time.sleep(RETRY_WAIT)
            answer = self.sio.call("join", {"token": self.token}, timeout=timeout)
        if not answer or not answer.get("ok"):
            self.close()
            reason = (self.refusals[-1]["reason"] if self.refusals else "no answer")
            raise JoinError(f"could not join session {self.token[:8]}... at {self.url}: {reason}")
        self._on_state(answer["state"])
        return answer["state"]

    def send(self, action: str) -> None:
        """Send one key or click; kept instead while the game is not joined (the
        connection lost, or a join refused for a moment)."""
        pressed = {"action": action, "client_time": time.time()}
        with self.lock:
            if self.joined:
                try:
                    self.sio.emit("input", {"token": self.token, **pressed})
                    return
                except socketio.exceptions.BadNamespaceError:  # lost in this instant
                    self.joined = False
            if len(self.unsent) < UNSENT_KEPT:
                self.unsent.append(pressed)
            else:
                self.unsent_more += 1

    def close(self) -> None:
        if self.sio.connected:
            self.sio.disconnect()


class RemoteLoop:
    """What the pygame front end drives when the server keeps the clock."""

    paused = False

    def __init__(self, session: RemoteSession) -> None:
        self.session = session
        self.fps = REDRAW_FPS
        self.driver = self

    def view(self) -> dict[str, Any]:
        with self.session.lock:
            return dict(self.session.state)

    @property
    def done(self) -> bool:
        return self.view()["phase"] == "done"

    def enqueue(self, text: str, client_time: float | None = None) -> bool:
        if self.done:
            return False
        self.session.send(text)
        return True

    def tick(self) -> None:
        """Nothing: the server ticks; the window only redraws."""

    step_frame = tick

    def toggle_pause(self) -> bool:
        return False  # a participant cannot stop the server's clock

    def change_fps(self, delta: int) -> int:
        return self.fps

    def status_line(self) -> str:
        view = self.view()
        parts = [view["phase"], f"tick {view['tick']}",
                 "remote" if self.session.joined else "connection lost: keys do nothing"]
        if view.get("paused"):  # the server's store is behind: the game stands still
            parts.append(f"{view['paused']} Keys do nothing")
        if view.get("score") is not None:
            parts.append(f"score {view['score']:.3f}")
        return " | ".join(parts)

    def close(self, reason: str = "") -> None:
        """Leave the session; the server records how its attempt ends."""
        self.session.close()


def play_remote(url: str, code: str, scale: int = 32) -> None:
    """Join session ``code`` at ``url`` and play it in a window."""
    from game_client.play import PygameClient

    session = RemoteSession(url, code)
    session.join()
    loop = RemoteLoop(session)
    PygameClient(loop, scale=scale, title=f"gridstudy: {session.state['problem_id']}").run()
    print(loop.status_line())
