"""No single visitor can freeze a study or take another's game (``docs/guarantees.md``,
section 2), on ``gridstudy serve`` itself (gevent, one process):

* socket floods (``input`` with a made-up token, unknown events, ``join``; one connection
  at full speed and twenty) while a participant plays: the participant keeps getting
  frames, a page keeps answering, the log stays short, memory comes back;
* a participant joining, or taking over, another participant's game with their own
  cookie is refused, and no session token is ever written to the log;
* a step that runs to its budget, and a researcher exporting a large study or reading
  its dashboard, while another participant plays: that participant's frames stay on time.
"""

from __future__ import annotations

import contextlib
import random
import re
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio

from bench.hostile import largest_gap, memory_mb, page_seconds, socket_flood
from study_server.connections import CONNECTIONS_PER_ADDRESS
from tests.conftest import start_serve, wait_until
from tests.study_server.conftest import outside_address, still_open
from tests.study_server.people import keep_pressing
from tests.study_server.test_faults import Served

PROBLEM = "lamp_grid/planning"
FLOODS = [("input", 1), ("unknown", 1), ("join", 1), ("input", 20)]


@pytest.fixture(scope="module")
def open_server(tmp_path_factory) -> Any:
    """``gridstudy serve`` with previews open to anyone (as the demo), its log in a file."""
    folder = tmp_path_factory.mktemp("floods")
    log = folder / "serve.log"
    process, url = start_serve(folder / "g.db", log=log, env={"GRIDSTUDY_PREVIEW": "open"})
    yield {"url": url, "process": process, "log": log, "db": folder / "g.db"}
    process.terminate()
    process.wait(60)


class Victim:
    """A participant playing a preview, noting when each frame arrives."""

    def __init__(self, url: str) -> None:
        self.frames: list[float] = []
        self.ticks: list[tuple[float, int]] = []
        opened = httpx.post(f"{url}/play/{PROBLEM}/session", timeout=30).json()
        self.token, self.period = opened["token"], 1.0 / opened["frame_rate"]
        self.client = socketio.Client(reconnection=False)
        self.client.on("state", self._state)
        self.client.on("ping", lambda m: self.client.emit(
            "pong", {"sent": m["sent"], "client_time": time.time()}))
        self.client.connect(url, transports=["websocket"], wait_timeout=30)
        assert self.client.call("join", {"token": self.token}, timeout=30)["ok"]

    def _state(self, state: dict[str, Any]) -> None:
        self.frames.append(time.monotonic())
        if "tick" in state:
            self.ticks.append((self.frames[-1], state["tick"]))

    def worst_lateness(self, since: float, until: float) -> float:
        """The latest a state came within [since, until], measured against the schedule of
        its tick (the earliest state of the game is taken as on time): a loop held for
        0.2 s makes the tick due meanwhile 0.2 s late, whether or not an idle tick sends."""
        offsets = [arrived - tick * self.period for arrived, tick in self.ticks]
        return max(offset for offset, (arrived, _) in zip(offsets, self.ticks)
                   if since <= arrived <= until) - min(offsets)

    def close(self) -> None:
        self.client.disconnect()


@pytest.mark.parametrize("kind, connections", FLOODS, ids=[f"{k}-x{n}" for k, n in FLOODS])
def test_a_socket_flood_freezes_nobody(open_server, kind, connections):
    url, log = open_server["url"], Path(open_server["log"])
    victim = Victim(url)
    try:
        time.sleep(1)
        memory = memory_mb(open_server["process"].pid)
        lines = len(log.read_text().splitlines())
        stop, pages = threading.Event(), []
        pager = threading.Thread(target=page_seconds, args=(url, stop, pages))
        pager.start()
        started = time.monotonic()
        sent = socket_flood(url, kind, connections, 2.0)
        ended = time.monotonic()
        time.sleep(1)
        stop.set()
        pager.join()
        assert sent > 200  # a flood indeed
        assert largest_gap(victim.frames, started, ended + 1) <= 0.5
        assert pages and max(pages) <= 1.0
        assert len(log.read_text().splitlines()) - lines <= 3
        assert victim.client.call("input", {"token": victim.token, "action": "right",
                                            "client_time": time.time()}, timeout=10)["ok"]
        time.sleep(3)
        assert memory_mb(open_server["process"].pid) <= 1.10 * memory
    finally:
        victim.close()


def test_a_model_evaluation_through_the_server_freezes_no_game(open_server):
    """A token holder evaluates through the server's agent API at full speed (sixteen
    attempts at once of a heavy program, a random agent answering at once) while a
    participant plays: the server's time is shared, the evaluation's steps yield as the
    games' do (2.4), and the participant's ticks stay on time. Measured with 100
    participants (``python -m bench.load --agents 32``): p99 lateness 1.1 ms without,
    about 20 ms with the server saturated."""
    from bench.load import evaluation

    url, db = open_server["url"], str(open_server["db"])
    victim = Victim(url)
    try:
        with evaluation(url, db, 16, "bee_hive/planning", nice=0) as flood:
            since = time.monotonic()
            time.sleep(6)
            until = time.monotonic()
    finally:
        victim.close()
    assert flood["agent_turns_per_second"] > 100  # a flood indeed
    assert victim.worst_lateness(since, until) <= 0.25


def huge_form(megabytes: int):
    """A login form whose user name is ``megabytes`` MB long, sent in chunks."""
    yield b"username="
    chunk = b"a" * (1 << 20)
    for _ in range(megabytes):
        yield chunk


@pytest.mark.parametrize("sized", [False, True], ids=["chunked", "content-length"])
def test_a_huge_body_is_refused_as_it_arrives_and_freezes_nobody(open_server, sized):
    """Before the server's body limit, one anonymous 300 MB form sent to the login page
    was read whole into memory (300 MB more, kept) and parsed on the loop: every game
    stopped for 1.1 s, and a few such requests at once would exhaust the memory."""
    url = open_server["url"]
    victim = Victim(url)
    try:
        time.sleep(1)
        memory = memory_mb(open_server["process"].pid)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if sized:
            headers["Content-Length"] = str(len("username=") + 300 * (1 << 20))
        started = time.monotonic()
        try:
            answer = httpx.post(f"{url}/dashboard/login", content=huge_form(300), headers=headers,
                                timeout=60)
            # a chunked body is read to the limit only, and refused as one announced
            # too long (before, as a form without its CSRF token: 400)
            assert answer.status_code == 413
        except httpx.TransportError:  # refused and closed while the rest was on its way
            pass
        ended = time.monotonic()
        assert ended - started < 10  # not read to its end (300 MB)
        time.sleep(1)
        assert largest_gap(victim.frames, started, ended + 1) <= 0.5
        assert memory_mb(open_server["process"].pid) <= 1.10 * memory
        assert httpx.get(f"{url}/dashboard/login", timeout=10).status_code == 200
        if not sized:  # a form of a sensible length is read whole when sent in chunks
            with httpx.Client(base_url=url, timeout=10) as browser:
                token = re.search(r'name="csrf_token" value="([^"]+)"',
                                  browser.get("/dashboard/login").text).group(1)
                form = f"csrf_token={token}&username=nobody&password=wrong".encode()
                answer = browser.post("/dashboard/login", content=iter([form[:20], form[20:]]),
                                      headers={"Content-Type": headers["Content-Type"]})
            assert answer.status_code == 200 and "Wrong username or password." in answer.text
    finally:
        victim.close()


def test_nobody_joins_or_takes_over_another_participants_game(tmp_path):
    """Participant A, with A's own cookie, sends ``join`` with B's token (and with
    ``takeover``): refused as an unknown session, B plays on untouched; A's own game
    works. No token is written to the log."""
    served = Served(tmp_path / "g.db", tmp_path / "serve.log")
    try:
        b_player, b_episode = served.playing("pid-b")
        a_person = served.person("pid-a")
        a_person.consent()
        a_person.post(a_person.screening_answers())
        a_token = a_person.task_token()
        attacker = socketio.Client(reconnection=False)
        refusals: list[dict] = []
        attacker.on("refused", refusals.append)
        attacker.connect(served.url, transports=["websocket"],
                         headers={"Cookie": a_person.cookie()}, wait_timeout=30)
        for takeover in (False, True):
            answer = attacker.call("join", {"token": b_player.token, "takeover": takeover},
                                   timeout=10)
            assert answer == {"ok": False, "error": "join: unknown or missing session token"}
        for _ in range(5):  # dropped at the door: this connection has joined nothing
            attacker.emit("input", {"token": b_player.token, "action": "up",
                                    "client_time": time.time()})
        ticks = b_player.states[-1][1]["tick"]
        time.sleep(1)
        assert b_player.client.connected and b_player.states[-1][1]["tick"] > ticks
        assert not [s for _, s in b_player.states if s.get("taken_over")]
        assert attacker.call("join", {"token": a_token}, timeout=10)["ok"]  # A's own game
        attacker.disconnect()
        b_player.close()
        anonymous = socketio.Client(reconnection=False)
        anonymous.connect(served.url, transports=["websocket"], wait_timeout=30)
        assert not anonymous.call("join", {"token": a_token}, timeout=10)["ok"]
        anonymous.disconnect()
        served.stop()
        assert served.sql("SELECT COUNT(*) FROM event WHERE episode_id = :e AND "
                          "source = 'input'", e=b_episode) == [(0,)]
        text = served.log.read_text()
        for token in (a_token, b_player.token):
            assert token not in text and token[:6] not in text
        assert not re.search(r"token['\"]?: ?['\"][A-Za-z0-9_-]{8,}", text)
    finally:
        served.stop()


def test_one_address_holding_connections_open_freezes_nobody(tmp_path):
    """The reproduction: a server at the open-file limit a systemd service or a login
    shell gets (1,024), and one client opening TCP connections to it and sending
    nothing. Before, after 1,137 of them the server accepted no one else: a newcomer's
    page waited 60 s and failed, and the log took a traceback a second. Now the address
    holds at most CONNECTIONS_PER_ADDRESS, the rest are closed as they come, in one log
    line; the quiet ones are closed after CONNECTION_QUIET (15 s here); a newcomer
    arrives at once, and a participant pressing keys plays on throughout."""
    source = outside_address()
    served = Served(tmp_path / "g.db", tmp_path / "serve.log",
                    env={"GRIDSTUDY_CONNECTION_QUIET": "15"})
    held: list[socket.socket] = []
    try:
        subprocess.run(["prlimit", "--pid", str(served.process.pid), "--nofile=1024:1024"],
                       check=True)
        victim, _ = served.playing("p0")
        stop = threading.Event()
        presser = keep_pressing([victim], rate=4.0, stop=stop)
        port = int(served.url.rsplit(":", 1)[1])
        began = time.time()
        for _ in range(1500):
            connection = socket.socket()
            connection.settimeout(5)
            connection.bind((source, 0))
            connection.connect(("127.0.0.1", port))
            held.append(connection)
        wait_until(lambda: still_open(held) <= CONNECTIONS_PER_ADDRESS, 5,
                   "the connections beyond the limit closed")
        assert still_open(held) > CONNECTIONS_PER_ADDRESS // 2  # the quiet ones wait
        asked = time.monotonic()
        assert served.person("late").arrive().status_code == 200
        assert time.monotonic() - asked < 5
        wait_until(lambda: still_open(held) == 0, 20, "the quiet connections closed")
        until = time.time()
        assert largest_gap([t for t, _ in victim.states], began, until) < 0.5
        assert victim.client.connected  # pressing keys, never quiet
        stop.set()
        presser.join()
    finally:
        for connection in held:
            connection.close()
        served.stop()
    log = served.log.read_text()
    said = [line for line in log.splitlines() if "as they came" in line]
    assert len(said) == 1 and f"from 1 address(es) holding {CONNECTIONS_PER_ADDRESS} " in said[0]
    assert "Too many open files" not in log and "Traceback" not in log


def test_a_step_that_runs_to_its_budget_delays_no_other_session(tmp_path):
    """An Autumn step that works for about half a second before its budget stops it,
    four times over, while another participant plays: that participant's ticks stay on
    time (the long step yields to the loop every few milliseconds), and each attempt
    that went over ends with the budget error within a second or two."""
    from bench.hostile import hit_limit, logged_in, play, start_server

    db = str(tmp_path / "hostile.db")
    server, url, _ = start_server(db)
    try:
        researcher = logged_in(url)
        played: list[int] = []
        player = threading.Thread(target=lambda: played.append(
            play(url, researcher, time.time() + 9, random.Random(0))))
        player.start()
        time.sleep(2)
        since = time.time()
        told = [hit_limit(url, researcher, "bench/heavy")[0] for _ in range(4)]
        until = time.time()
        player.join()
    finally:
        server.terminate()
        server.wait(60)
    assert all(seconds is not None and seconds < 3.0 for seconds in told), told
    with sqlite3.connect(db) as connection:
        late = sorted(1000 * row[0] for row in connection.execute(
            "SELECT latency FROM event WHERE episode_id = ? AND server_time BETWEEN ? AND ?",
            (played[0], since, until)))
    # Held for a whole step, the other participant would wait 400 ms and more at once
    # (measured before the steps yielded: p99 476 ms). A busy machine adds its own
    # scheduling noise, so the test bounds the worst tick and the 95th percentile; the
    # benchmark (python -m bench.hostile) prints the p99.
    assert len(late) > 10 and late[-1] < 150.0 and late[int(0.95 * (len(late) - 1))] <= 25.0, late


def many_events(db: Path, count: int) -> None:
    """``count`` applied steps of the test walker, in attempts of 500, stored as a server
    stores them (the record of a study under way)."""
    from records.store import Store
    from tests.envs import register_test_envs
    from tests.sample_study import PLAN, play

    register_test_envs()
    keys = ["right", "down", "left", "up"]
    with Store(str(db)) as store:
        for _ in range(count // 500):
            episode_id = store.start_episode(problem=PLAN)
            play(store, episode_id, PLAN, [keys[i % 4] for i in range(500)], {}, source="input")
        store.flush()


@contextlib.contextmanager
def researcher_beside_a_player(db: Path) -> Iterator[tuple[httpx.Client, Victim]]:
    """``gridstudy serve`` on ``db``, a researcher signed in to its dashboard and a
    participant playing a preview: ``(dashboard, player)``, the player a second into the
    game; the player stops half a second after the block, the server after that."""
    from records.store import Store
    from study_server import auth
    from tests.study_server.people import PASSWORD, researcher

    with Store(str(db)) as store:
        auth.create_admin(store.engine, "researcher", PASSWORD)
    process, url = start_serve(db, env={"GRIDSTUDY_PREVIEW": "open"})
    try:
        board, victim = researcher(url), Victim(url)
        time.sleep(1)
        yield board, victim
        time.sleep(0.5)
        victim.close()
    finally:
        process.terminate()
        process.wait(60)


def test_a_researchers_export_of_a_large_study_freezes_no_game(tmp_path):
    """A researcher downloads the dashboard's export of a database holding 40,000 events
    while someone plays: the export is read and zipped off the event loop, so the
    player's longest wait for a frame stays under half a second (on the loop it was 1.3 s
    for 49,000 events, and grows with the study)."""
    from tests.study_server.people import exported

    many_events(tmp_path / "g.db", 40_000)
    with researcher_beside_a_player(tmp_path / "g.db") as (board, victim):
        started = time.monotonic()
        made, _ = exported(board)
        ended = time.monotonic()
    assert made[:2] == b"PK"
    assert ended - started > 0.5  # an export long enough to have frozen the games
    assert largest_gap(victim.frames, started, ended + 0.5) <= 0.5


def many_participants(db: Path, count: int) -> None:
    """The demo study with ``count`` participants who completed it, as the flow stores
    them, every other one with an attempt excluded (a large study's dashboard listed
    every participant and every excluded attempt)."""
    from consent.definition import load_definition
    from records.models import EpisodeRow, Participant, Study
    from records.store import Store

    definition = load_definition(Path(__file__).parents[2] / "examples" / "demo-study.yaml")
    problems = list(definition.problems)
    with Store(str(db)) as store, store.session() as session:
        session.add(Study(id=definition.id, title=definition.title,
                          definition=definition.to_dict()))
        session.add_all(Participant(study_id=definition.id, external_id=f"5f{n:022x}",
                                    stage="complete", status="complete",
                                    code=definition.completion_code) for n in range(count))
        session.add_all(EpisodeRow(study_id=definition.id, participant_id=n,
                                   problem_id=problems[n % len(problems)], env_id="demo",
                                   challenge="planning", seed=n, status="done", included=False,
                                   exclusion_reason="too few inputs")
                        for n in range(2, count + 1, 2))
        session.commit()


def asked_at_once(url: str, cookies: dict[str, str], path: str, count: int) -> list[int]:
    """The statuses of ``count`` requests for ``path`` sent together, as tabs opened at
    once would send them (run in a process of its own, so that its threads do not slow
    the test's own clients down)."""
    from tests.consent.helpers import at_once

    def tab() -> int:
        with httpx.Client(base_url=url, cookies=cookies, timeout=300) as client:
            return client.get(path).status_code

    return at_once(count, tab)


def test_a_researchers_twenty_tabs_on_a_large_study_keep_no_one_from_starting_a_game(
        tmp_path):
    """Twenty dashboard pages asked for at once (tabs opened together, a script polling
    the payment decisions) of a study of 16,000 participants, while someone plays and a
    newcomer opens a game: the pages are built in threads of their own
    (``records.offload.PAGE_THREADS``), so the newcomer's game opens and is joined at once
    and the player's frames keep coming (within a second: the pages' Python shares the
    interpreter's lock with the loop). Before, the pages took every thread of the pool
    the real-time path uses, and the newcomer's game took 6 to 7.4 s to open."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tests.conftest import Player

    many_participants(tmp_path / "g.db", 16_000)
    with researcher_beside_a_player(tmp_path / "g.db") as (board, victim), \
            ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as tabs:
        url = str(board.base_url).rstrip("/")
        tabs.submit(int, 0).result()  # the process is up
        started = time.monotonic()
        pages = tabs.submit(asked_at_once, url, dict(board.cookies),
                            "/dashboard/study/demo/decisions.csv", 20)
        time.sleep(0.5)
        asked = time.monotonic()
        opened = httpx.post(f"{url}/play/lamp_grid/planning/session", params={"record": "1"},
                            timeout=60)
        opened_in = time.monotonic() - asked
        newcomer = Player(url, opened.json()["token"]).connect()
        asked = time.monotonic()
        assert newcomer.join()["ok"]
        joined_in = time.monotonic() - asked
        newcomer.close()
        answers = pages.result()
        ended = time.monotonic()
    assert answers == [200] * 20
    assert ended - asked > 2, ended - asked  # the pages held threads after the newcomer came
    assert opened_in < 1 and joined_in < 1, (opened_in, joined_in)
    gap = largest_gap(victim.frames, started, ended)
    assert gap <= 1.0, gap  # 0.26 to 0.28 s alone; 0.66 s once beside the whole suite


def test_a_researcher_reading_a_large_studys_dashboard_freezes_no_game(tmp_path):
    """A researcher reads the dashboard of a server whose study holds 16,000 participants
    and 8,000 excluded attempts (a lab's studies add up on one server): the index twice,
    the last page of the participant list and of the excluded attempts, the payment
    decisions and one participant's page, while someone plays. The pages are read and
    rendered off the event loop, so no tick of the game is late by more than 0.1 s
    (measured: 14 to 20 ms; 0.39 s with the pages on the loop)."""
    many_participants(tmp_path / "g.db", 16_000)
    with researcher_beside_a_player(tmp_path / "g.db") as (board, victim):
        started = time.monotonic()
        pages = [board.get(path) for path in (
            "/dashboard/", "/dashboard/", "/dashboard/study/demo/participants?page=32",
            "/dashboard/study/demo/excluded?page=16", "/dashboard/study/demo/decisions.csv",
            "/dashboard/participant/16000")]
        ended = time.monotonic()
    assert [page.status_code for page in pages] == [200] * 6
    assert "all 16000 on" in pages[0].text and "all 8000 on" in pages[0].text
    assert pages[2].text.count("<tr data-participant=") == 500
    assert pages[3].text.count("<tr data-excluded=") == 8000 - 15 * 500
    assert pages[4].text.count("\n") == 16_001
    assert f"5f{15_999:022x}" in pages[5].text
    assert victim.worst_lateness(started, ended + 0.5) <= 0.1
