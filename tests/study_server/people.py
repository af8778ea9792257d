"""Participants as a server meets them: a browser walking the flow over HTTP, and a game
client over Socket.IO that keeps a ledger of what the server acknowledged.

The fault tests (``test_faults.py``) and the cluster tests (``test_cluster.py``) check
the record against these ledgers: every input the server answered ``queued`` must end
in the database, applied (an ``input`` event) or refused at its tick (a ``rawinput``
row carrying its ``input_seq``).
"""

from __future__ import annotations

import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import socketio

from consent.screening import make_items, study_palette
from tasks.worldtest.changes import ViewReplica

KEYS = ("up", "down", "left", "right")
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
"""A page's CSRF token, as its forms carry it."""
PASSWORD = "correct horse battery"
"""The researcher account's password in these tests."""


def csrf(client: httpx.Client, path: str) -> str:
    """The CSRF token of the page at ``path``."""
    return CSRF.search(client.get(path).text).group(1)


def exported(client: Any, study: str = "", timeout: float = 300) -> tuple[bytes | None, str]:
    """The dashboard's export of ``study`` ("": every study) as a researcher makes it:
    asked for, its page followed until it is made, its zip downloaded. The zip (None:
    the export failed) and the page's last text. ``client``: a signed-in httpx client or
    Flask test client."""
    asked = client.post("/dashboard/export", data={"study": study,
                                                   "csrf_token": csrf(client, "/dashboard/")})
    return followed_export(client, asked.headers.get("Location") or asked.url.path, timeout)


def followed_export(client: Any, page: str, timeout: float = 300) -> tuple[bytes | None, str]:
    """:func:`exported`, from the export's page at ``page``."""
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get(page)
        text = answer.text
        found = re.search(r'data-export-state="(\w+)"', text)
        assert found, f"{page} answered {answer.status_code}: {text[:1000]}"
        state = found.group(1)
        if state not in ("waiting", "reading", "zipping"):
            break
        assert time.monotonic() < deadline, text
        time.sleep(0.2)
    if state != "done":
        return None, text
    download = client.get(re.search(r'href="([^"]+)" data-download-export', text).group(1))
    assert download.headers["Content-Type"] == "application/zip", download.text[:300]
    return getattr(download, "content", None) or download.data, text


def researcher(url: str, password: str = PASSWORD) -> httpx.Client:
    """A browser signed in to the dashboard as ``researcher``."""
    client = httpx.Client(base_url=url, timeout=30, follow_redirects=True)
    client.post("/dashboard/login", data={"username": "researcher", "password": password,
                                          "csrf_token": csrf(client, "/dashboard/login")})
    return client


class Person:
    """One participant's browser on study ``study``: its own cookies (the route cookie
    among them), every HTTP status it was answered."""

    def __init__(self, url: str, study: str, pid: str, problems: list[str],
                 sql: Callable[..., list[Any]]) -> None:
        self.study, self.pid, self.problems, self.sql = study, pid, problems, sql
        self.http = httpx.Client(base_url=url, timeout=60, follow_redirects=True)
        self.served_by: list[str] = []
        self.statuses: list[int] = []

    def get(self, path: str) -> httpx.Response:
        return self._seen(self.http.get(path))

    def post(self, form: dict[str, str]) -> httpx.Response:
        token = CSRF.search(self.get(f"/study/{self.study}/flow").text).group(1)
        return self._seen(self.http.post(f"/study/{self.study}/flow",
                                         data={**form, "csrf_token": token}))

    def _seen(self, response: httpx.Response) -> httpx.Response:
        self.served_by.append(response.headers.get("X-Served-By", ""))
        self.statuses.append(response.status_code)
        return response

    def arrive(self) -> httpx.Response:
        """The Prolific link."""
        return self.get(f"/study/{self.study}?PROLIFIC_PID={self.pid}&STUDY_ID=s&SESSION_ID=x")

    def consent(self) -> None:
        self.arrive()
        self.post({"choice": "agree"})

    def screening_answers(self) -> dict[str, str]:
        [(participant_id,)] = self.sql("SELECT id FROM participant WHERE external_id = :pid",
                                       pid=self.pid)
        items = make_items(study_palette(self.problems), 6, seed=participant_id)
        return {f"item-{i}": str(item.answer) for i, item in enumerate(items)}

    def task_token(self) -> str:
        page = self.get(f"/study/{self.study}/flow").text
        return re.search(r'data-token="([^"]+)"', page).group(1)

    def cookie(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.http.cookies.items())


@dataclass
class Ack:
    """One input and what the server answered, when."""

    action: str
    sent: float
    status: str | None = None
    answered: float | None = None


LIVE: list[Player] = []
"""The players not closed yet: ``conftest.py`` closes them after each test."""


@dataclass
class Player:
    """A python-socketio client playing one session, rejoining after every reconnection
    as the browser client does, with a ledger of every input it sent and its answer."""

    url: str
    token: str
    cookie: str = ""
    states: list[tuple[float, dict]] = field(default_factory=list)
    refusals: list[dict] = field(default_factory=list)
    ledger: list[Ack] = field(default_factory=list)
    view: ViewReplica = field(default_factory=ViewReplica)
    """The whole view, rebuilt from the state messages (``states`` holds each)."""

    def __post_init__(self) -> None:
        LIVE.append(self)
        self.client = socketio.Client(reconnection=True, reconnection_delay=0.2,
                                      reconnection_delay_max=1)
        self.client.on("state", self._state)
        self.client.on("refused", self.refusals.append)
        self.client.on("connect", lambda: self.client.emit("join", {"token": self.token}))
        self.client.on("ping", lambda m: self.client.emit(
            "pong", {"sent": m["sent"], "client_time": time.time()}))
        self.client.connect(self.url, transports=["websocket"],
                            headers={"Cookie": self.cookie} if self.cookie else {},
                            wait_timeout=30)

    def _state(self, message: dict) -> None:
        if self.view.receive(message):  # a state went missing: join again for the whole
            self.client.emit("join", {"token": self.token})
        elif self.view.state is not None:
            self.states.append((time.time(), self.view.state))

    def press(self, action: str) -> None:
        """Send one input (if connected) and note the server's answer when it comes."""
        if not self.client.connected:
            return
        ack = Ack(action, time.time())
        self.ledger.append(ack)

        def answered(reply: Any = None) -> None:
            ack.status = reply.get("status") if isinstance(reply, dict) else None
            ack.answered = time.time()

        try:
            self.client.emit("input", {"token": self.token, "action": action,
                                       "client_time": ack.sent}, callback=answered)
        except socketio.exceptions.BadNamespaceError:
            self.ledger.remove(ack)

    def queued(self, before: float | None = None) -> list[Ack]:
        """Inputs the server answered ``queued`` (before ``before``, by its answer)."""
        return [a for a in self.ledger if a.status == "queued"
                and (before is None or (a.answered or 0) < before)]

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until the server has answered every input sent (closing first would leave
        an input the server acknowledged, and stored, missing from the ledger)."""
        deadline = time.monotonic() + timeout
        while any(a.answered is None for a in self.ledger) and self.client.connected:
            assert time.monotonic() < deadline, "an input went unanswered"
            time.sleep(0.02)

    def states_after(self, moment: float) -> list[dict]:
        return [state for at, state in self.states if at > moment]

    def close(self) -> None:
        """Disconnect, or stop reconnecting to a server that is gone: a client left
        reconnecting outlives its test, and once a later test's server takes the port,
        joins it with a stale token (its refusals counted there)."""
        self.client.shutdown()
        LIVE[:] = [player for player in LIVE if player is not self]


def keep_pressing(players: list[Player], rate: float, stop: threading.Event,
                  seed: int = 0) -> threading.Thread:
    """A thread pressing random arrows on every player at about ``rate`` keys a second
    each (exponential gaps, as people press), until ``stop`` is set."""
    rng = random.Random(seed)

    def run() -> None:
        due = {id(p): time.monotonic() + rng.expovariate(rate) for p in players}
        while not stop.is_set():
            now = time.monotonic()
            for player in players:
                if due[id(player)] <= now:
                    player.press(rng.choice(KEYS))
                    due[id(player)] = now + rng.expovariate(rate)
            time.sleep(0.01)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def sqlite_reader(path: Path) -> Callable[..., list[Any]]:
    """``sql(query, **params)``: the rows of ``query`` on the SQLite file at ``path``, read
    from this (another) process, as any tool would."""
    def sql(query: str, **params: Any) -> list[Any]:
        with closing(sqlite3.connect(path, timeout=30)) as db:
            return db.execute(query, params).fetchall()
    return sql


def episode_of(sql: Callable[..., list[Any]], token: str) -> int:
    """The attempt a live session token plays (from its lease)."""
    [(episode_id,)] = sql("SELECT episode_id FROM livesession WHERE token = :t", t=token)
    return episode_id


def accounted(sql: Callable[..., list[Any]], episode_id: int) -> dict[str, Any]:
    """What the database holds of an attempt's acknowledged inputs: those applied
    (``input`` events) and those refused at their tick or dropped (``rawinput`` rows with
    an ``input_seq``, by status), and the gaps in its ``seq``."""
    applied = sql("SELECT COUNT(*) FROM event WHERE episode_id = :e AND source = 'input'",
                  e=episode_id)[0][0]
    resolved = dict(sql("SELECT status, COUNT(*) FROM rawinput WHERE episode_id = :e AND "
                        "input_seq IS NOT NULL GROUP BY status", e=episode_id))
    seqs = [row[0] for row in sql("SELECT seq FROM event WHERE episode_id = :e ORDER BY seq",
                                  e=episode_id)]
    return {"applied": applied, "resolved": resolved,
            "stored": applied + sum(n for s, n in resolved.items() if s != "queued"),
            "queued": resolved.get("queued", 0),
            "holes": [s for s, t in zip(seqs, seqs[1:]) if t != s + 1]
                     + ([0] if seqs and seqs[0] != 0 else [])}
