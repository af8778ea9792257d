"""Several workers behind nginx, over a real PostgreSQL and a real Redis.

``gridstudy serve --workers 2`` runs as a researcher would run it, with the servers
started from temporary folders on loopback ports (``study_server/services.py``). The
participants are HTTP clients walking the study's flow through nginx and python-socketio
clients playing; each carries its own route cookie, as separate browsers do.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio
from sqlalchemy import create_engine, text

from study_server import services
from study_server.browser_play import AHEAD
from study_server.connections import CONNECTIONS_PER_ADDRESS
from study_server.services import free_port
from tests.study_server.conftest import outside_address
from tests.study_server.people import (
    PASSWORD,
    Person,
    Player,
    accounted,
    episode_of,
    keep_pressing,
    researcher,
)
from tests.study_server.test_browser_play import browser_log

STUDY = """
id: crowd
title: Many at once
problems: [ant_trail/planning, cloud_burst/planning, crate_push/planning, key_and_door/planning]
tutorials: {planning: sun_and_ice/planning}
attempts_per_problem: 10
problems_per_participant: 1
completion_code: CROWD123
screenout_code: CROWD000
stages: [consent, screening, tasks]
consent: {version: "1", text: "You are invited to play."}
"""
PROBLEMS = ["ant_trail/planning", "cloud_burst/planning", "crate_push/planning",
            "key_and_door/planning"]
CAPACITY = 40
"""Four problems, ten attempts each, one per participant: forty people fill the study."""


@pytest.fixture(scope="module")
def servers() -> Any:
    """PostgreSQL and Redis, started once for this module."""
    base = Path(tempfile.mkdtemp(prefix="gridstudy-cluster-"))
    base.chmod(0o711)  # PostgreSQL runs as its own user when the tests run as root
    postgres = services.start_postgres(base / "postgres", durable=False)
    redis = services.start_redis(base / "redis")
    yield postgres, redis
    postgres.stop()
    redis.stop()


def fresh_database(port: int) -> str:
    """A new, empty database on the module's PostgreSQL at ``port``. Named at random:
    a name made of a free port could come round again in one run, and a test then
    found the study of another already stored."""
    return services.create_database(port, f"t{uuid.uuid4().hex}")


class Deployment:
    """``gridstudy serve --workers 2`` on a fresh database of the module's PostgreSQL."""

    def __init__(self, servers: Any, folder: Path) -> None:
        postgres, redis = servers
        self.db = fresh_database(postgres.port)
        subprocess.run([sys.executable, "-m", "study_server.cli", "study", "create",
                        str(_write(folder / "study.yaml", STUDY)), "--db", self.db],
                       check=True, capture_output=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / "serve.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "study_server.cli", "serve", "--workers", "2",
             "--port", str(self.port), "--db", self.db, "--message-queue", redis.url],
            stdout=self.log.open("w"), stderr=subprocess.STDOUT,
            env={**os.environ, "GRIDSTUDY_PREVIEW": "open"})
        self.engine = create_engine(self.db)
        deadline = time.monotonic() + 120
        while "behind nginx" not in self.log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve --workers did not start: {self.log.read_text()[-3000:]}")
            time.sleep(0.2)
        ports = re.search(r"\(ports (\d+), (\d+)\)", self.log.read_text()).groups()
        self.workers = [f"127.0.0.1:{p}" for p in ports]

    def sql(self, query: str, **params: Any) -> list[Any]:
        with self.engine.connect() as db:
            return list(db.execute(text(query), params))

    def worker_pids(self) -> dict[str, int]:
        """Worker id -> pid, from the workers' own rows."""
        return {row[0]: int(row[0].split(":")[1]) for row in self.sql("SELECT id FROM worker")}

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(90)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.engine.dispose()


def _write(path: Path, content: str) -> Path:
    path.write_text(content)
    return path


@pytest.fixture
def deployment(servers: Any, tmp_path: Path) -> Any:
    found = Deployment(servers, tmp_path)
    yield found
    found.stop()


def visitor(deployment: Deployment, pid: str, base: str | None = None) -> Person:
    """One participant's browser on the deployment (or directly on one worker)."""
    return Person(base or deployment.url, "crowd", pid, PROBLEMS, deployment.sql)


def arrive(deployment: Deployment, count: int, prefix: str) -> list[Person]:
    """``count`` people through consent, then all answering the colour screen (which
    reserves their problems) at the same moment."""
    people = [visitor(deployment, f"{prefix}{i}") for i in range(count)]
    for person in people:
        person.consent()
    answers = [person.screening_answers() for person in people]
    barrier = threading.Barrier(count)
    failures: list[BaseException] = []

    def screen(person: Person, form: dict[str, str]) -> None:
        try:
            barrier.wait(30)
            person.post(form)
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=screen, args=pair) for pair in zip(people, answers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    return people


def playing_on(deployment: Deployment, worker: str, pid: str) -> tuple[str, Player]:
    """A participant who walked the flow on ``worker`` (host:port, directly) and plays
    their task there: the session's token and the player, once its first state came."""
    person = visitor(deployment, pid, base=f"http://{worker}")
    person.consent()
    person.post(person.screening_answers())
    token = person.task_token()
    player = Player(f"http://{worker}", token, person.cookie())
    deadline = time.monotonic() + 15
    while not player.states and time.monotonic() < deadline:
        time.sleep(0.1)
    assert player.states, "the session never started"
    return token, player


def test_forty_people_at_once_across_two_workers_fill_the_study_exactly(deployment):
    people = arrive(deployment, CAPACITY, "p")

    rows = deployment.sql("SELECT problem_id, participant_id FROM episode WHERE study_id = 'crowd' "
                          "AND status IN ('assigned', 'active') AND info::text NOT LIKE '%tutorial%'")
    assert Counter(problem for problem, _ in rows) == dict.fromkeys(PROBLEMS, 10)
    assert len({participant for _, participant in rows}) == CAPACITY
    served = Counter(address for person in people for address in person.served_by if address)
    assert set(served) == set(deployment.workers), served  # both workers took part

    late = visitor(deployment, "late")
    late.consent()
    ending = late.post(late.screening_answers()).text
    assert "have just been filled" in ending and "CROWD000" in ending
    assert len(deployment.sql("SELECT 1 FROM episode WHERE participant_id = "
                              "(SELECT id FROM participant WHERE external_id = 'late')")) == 0


def _wait_gone(pid: int, timeout: float = 10) -> None:
    """Until the process has exited and been reaped (by the supervisor)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    raise TimeoutError(f"process {pid} is still there")


def _log_in(deployment: Deployment, base: str) -> httpx.Client:
    from records.store import Store
    from study_server import auth

    with Store(deployment.db) as store:
        auth.create_admin(store.engine, "researcher", PASSWORD)
    return researcher(base)


def test_the_dashboard_on_one_worker_sees_a_participant_playing_on_the_other(deployment):
    one = f"http://{deployment.workers[0]}"
    token, player = playing_on(deployment, deployment.workers[1], "seen")
    try:
        player.press("right")
        [(episode_id, owner)] = deployment.sql(
            "SELECT l.episode_id, w.address FROM livesession l JOIN worker w ON w.id = l.worker "
            "WHERE l.token = :t", t=token)
        assert owner == deployment.workers[1]
        researcher = _log_in(deployment, one)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the other worker's next heartbeat
            page = researcher.get("/dashboard/")
            if f'data-live-episode="{episode_id}"' in page.text:
                break
            time.sleep(0.3)
        assert page.headers["X-Served-By"] == deployment.workers[0]
        assert f'data-live-episode="{episode_id}"' in page.text
        assert f'data-worker="{deployment.workers[1]}"' in page.text

        pushed: list[str] = []
        watcher = socketio.Client()
        watcher.on("monitor", lambda m: pushed.append(m["html"]), namespace="/monitor")
        watcher.connect(one, namespaces=["/monitor"], transports=["websocket"],
                        headers={"Cookie": "; ".join(f"{k}={v}" for k, v
                                                     in researcher.cookies.items())})
        deadline = time.monotonic() + 10
        while not pushed and time.monotonic() < deadline:
            time.sleep(0.1)
        watcher.disconnect()
        assert pushed and f'data-live-episode="{episode_id}"' in pushed[-1]

        # ending it there stops it here, at this worker's next heartbeat, which tells its page
        told: list[dict] = []
        player.client.on("game-ended", told.append)
        page = researcher.get("/dashboard/").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        ended = researcher.post(f"/dashboard/session/{episode_id}/end",
                                data={"reason": "stuck", "csrf_token": csrf})
        assert ended.status_code == 200
        time.sleep(2.5)
        count = len(player.states)
        time.sleep(1)
        assert len(player.states) == count  # no more ticks
        assert [message["url"] for message in told] == ["/study/crowd/flow"]
        assert deployment.sql("SELECT status, included, exclusion_reason FROM episode "
                              "WHERE id = :e", e=episode_id) == [
            ("abandoned", False, "ended by researcher: stuck")]
        time.sleep(2)  # its lease goes once it was gone at two heartbeats
        assert deployment.sql("SELECT 1 FROM livesession WHERE token = :t", t=token) == []
    finally:
        player.client.disconnect()


def test_killing_a_worker_moves_its_twenty_participants_to_the_other_without_a_gap(deployment):
    people = arrive(deployment, 20, "k")
    players = [Player(deployment.url, person.task_token(), person.cookie()) for person in people]
    try:
        time.sleep(2)
        for player in players:
            player.press("left")
        time.sleep(1)
        leases = deployment.sql("SELECT token, worker, episode_id FROM livesession")
        owners = Counter(worker for _, worker, _ in leases)
        assert len(leases) == 20 and len(owners) == 2, owners  # both workers play
        victim = owners.most_common(1)[0][0]
        survivor = next(w for w in owners if w != victim)
        os.kill(deployment.worker_pids()[victim], signal.SIGKILL)
        killed_at = time.time()

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(len(p.states_after(killed_at + 1)) >= 3 for p in players):
                break
            time.sleep(0.2)
        for player in players:
            player.press("right")
        time.sleep(2)

        assert all(len(p.states_after(killed_at + 1)) >= 3 for p in players), [
            len(p.states_after(killed_at + 1)) for p in players]
        leases = deployment.sql("SELECT worker, episode_id FROM livesession")
        assert {worker for worker, _ in leases} == {survivor}
        assert len(leases) == 20
        for _, episode_id in leases:
            seqs = [row[0] for row in deployment.sql(
                "SELECT seq FROM event WHERE episode_id = :e ORDER BY seq", e=episode_id)]
            assert seqs == list(range(len(seqs))), f"episode {episode_id}: a gap in seq"
            times = [row[0] for row in deployment.sql(
                "SELECT server_time FROM event WHERE episode_id = :e", e=episode_id)]
            assert max(times) > killed_at + 1  # it went on ticking after the kill
        applied = deployment.sql("SELECT count(*) FROM event WHERE action = 'right' "
                                 "AND server_time > :t", t=killed_at)
        assert applied[0][0] == 20  # the keys pressed after the move were played
    finally:
        for player in players:
            player.client.disconnect()


def test_a_session_moves_between_live_workers_only_when_its_tab_lets_it(deployment):
    """A join on another worker while the first tab is connected is refused as a second
    tab is; "continue here" takes the session over across workers (the first tab is told),
    and once that tab has gone a plain join brings it back. seq never breaks. (Every tab is
    the same participant's browser: it carries their cookie.)"""
    one, other = (f"http://{address}" for address in deployment.workers)
    token, first = playing_on(deployment, deployment.workers[1], "tabs")
    told: list[dict] = []
    first.client.on("taken-over", told.append)
    second = socketio.Client()
    try:
        first.press("right")
        second.connect(one, transports=["websocket"], headers={"Cookie": first.cookie})
        refused = second.call("join", {"token": token}, timeout=30)
        assert refused == {"ok": False, "error": "join: this session is open in another connection"}

        taken = second.call("join", {"token": token, "takeover": True}, timeout=30)
        assert taken["ok"], taken
        deadline = time.monotonic() + 5
        while not told and time.monotonic() < deadline:
            time.sleep(0.1)
        assert told == [{"token": token}]
        [(owner,)] = deployment.sql("SELECT w.address FROM livesession l JOIN worker w "
                                    "ON w.id = l.worker WHERE l.token = :t", t=token)
        assert owner == deployment.workers[0]
        second.emit("input", {"token": token, "action": "left", "client_time": time.time()})
        time.sleep(1)
        second.disconnect()
        first.client.disconnect()

        third = socketio.Client()
        third.connect(other, transports=["websocket"], headers={"Cookie": first.cookie})
        back = third.call("join", {"token": token}, timeout=30)
        third.disconnect()
        assert back["ok"], back
        [(owner,)] = deployment.sql("SELECT w.address FROM livesession l JOIN worker w "
                                    "ON w.id = l.worker WHERE l.token = :t", t=token)
        assert owner == deployment.workers[1]
        [(episode_id,)] = deployment.sql("SELECT episode_id FROM livesession WHERE token = :t",
                                         t=token)
        time.sleep(1.5)  # the writer's flush
        events = deployment.sql("SELECT seq, action, source FROM event WHERE episode_id = :e "
                                "ORDER BY seq", e=episode_id)
        assert [row[0] for row in events] == list(range(len(events)))
        assert [row[1] for row in events if row[2] == "input"] == ["right", "left"]
    finally:
        for client in (first.client, second):
            if client.connected:
                client.disconnect()


def test_a_game_played_in_the_browser_moves_between_live_workers_without_a_tick_stored_twice(
        deployment):
    """A page playing in the browser whose worker was out of its reach for a moment comes
    back through another live worker, then back again (and once as a second tab that
    chose "continue here"): each worker takes the log only while it holds the attempt's
    lease, the one before handing it over at its heartbeat, so the page is always given
    the record as stored and every tick is stored once. Before, the second worker let the
    page in while the first still held the game, and the first, given the page back,
    answered with its old copy: the page went back 8 ticks and its log from there was
    stored again, two events for each of those seq."""
    one, other = (f"http://{address}" for address in deployment.workers)
    made = httpx.post(f"{one}/play/ant_trail/planning/session", params={"play": "browser"}).json()
    token, began = made["token"], time.time()
    log = browser_log([None, "click 3 3", None, None, "click 2 2", None] * 5)
    pages: list[socketio.Client] = []

    def page(url: str, takeover: bool = False) -> tuple[socketio.Client, dict]:
        client = socketio.Client(reconnection=False)
        client.connect(url, transports=["websocket"])
        pages.append(client)
        return client, client.call("join-browser", {"token": token, "takeover": takeover},
                                   timeout=30)

    def send(client: socketio.Client, start: int, end: int) -> dict:
        # a page's log keeps to its clock: ant_trail ticks 5 times a second
        time.sleep(max(0.0, began + end / 5 - AHEAD + 0.5 - time.time()))
        return client.call("log", {"token": token, "batch": log[start:end]}, timeout=10)

    try:
        first, joined = page(one)
        assert joined["ok"] and send(first, 0, 8)["next"] == 8
        second, refused = page(other)
        assert refused == {"ok": False, "error": "join: this session is open in another connection"}
        second.disconnect()
        first.disconnect()  # the first worker out of reach: the page comes through the other

        moved, joined = page(other)
        assert joined["ok"] and joined["record"]["next"] == 8, joined
        assert send(moved, 8, 16)["next"] == 16
        moved.disconnect()

        back, joined = page(one)
        assert joined["record"] == {"actions": [e["action"] for e in log[:16]], "next": 16}
        assert send(back, 16, 24)["next"] == 24
        told: list[dict] = []
        back.on("taken-over", told.append)
        tab, joined = page(other, takeover=True)
        assert joined["ok"] and joined["record"]["next"] == 24, joined
        assert send(back, 24, 30) == {"ok": False, "error": "log: not your session"}
        assert told == [{"token": token}]
        assert send(tab, 24, 30)["next"] == 30
        for client in pages:
            client.disconnect()
        [(owner,)] = deployment.sql("SELECT w.address FROM livesession l JOIN worker w "
                                    "ON w.id = l.worker WHERE l.token = :t", t=token)
        assert owner == deployment.workers[1]
        time.sleep(1.5)  # the writer's flush
        events = deployment.sql("SELECT seq, tick, frame_hash FROM event WHERE episode_id = :e "
                                "ORDER BY seq, id", e=made["episode_id"])
        assert [(seq, tick, frame) for seq, tick, frame in events] == \
            [(entry["n"], entry["tick"], entry["hash"]) for entry in log[:30]]
    finally:
        for client in pages:
            if client.connected:
                client.disconnect()


def test_an_agents_attempt_goes_on_at_the_other_worker_when_its_worker_dies(deployment):
    """The agent API through nginx: an agent's requests stay on one worker (routed by its
    token); when that worker dies its next turn is played by the other, which takes the
    attempt's lease and rebuilds it from the store."""
    from records.store import Store
    from study_server import tokens

    with Store(deployment.db) as store:
        secret = tokens.create(store.engine, "model-a")
    api = httpx.Client(base_url=deployment.url, timeout=60,
                       headers={"Authorization": f"Bearer {secret}"})
    run_id = api.post("/api/agent/runs", json={"agent_kind": "scripted"}).json()["agent_run_id"]
    started = api.post(f"/api/agent/runs/{run_id}/episodes",
                       json={"problem_id": "ant_trail/planning"})
    episode_id = started.json()["episode_id"]

    def turn(action: str) -> httpx.Response:
        return api.post(f"/api/agent/episodes/{episode_id}/actions", json={"action": action})

    served = {turn(action).headers["X-Served-By"] for action in ("up", "left", "right")}
    assert len(served) == 1  # one agent, one worker
    intruder = socketio.Client()  # a participant's join cannot reach an agent's attempt
    intruder.connect(deployment.url, transports=["websocket"])
    for token in (f"agent:{episode_id}", "\x00", "tok\x00en", "x" * 65):
        assert intruder.call("join", {"token": token}, timeout=10) == {
            "ok": False, "error": "join: unknown or missing session token"}
    intruder.disconnect()
    nul = api.post(f"/api/agent/episodes/{episode_id}/actions", headers={
        "Content-Type": "application/json"}, content=json.dumps(
        {"action": "noop", "raw_reply": "<action>noop</action>\x00junk\ud83d"}).encode())
    assert nul.status_code == 200, nul.text  # kept, with the NUL and half an emoji replaced
    assert httpx.get(f"{deployment.url}/study/crowd?PROLIFIC_PID=%00x&STUDY_ID=s&SESSION_ID=x"
                     ).status_code == 400
    time.sleep(1)  # past the writer's flush window
    [(owner,)] = deployment.sql("SELECT worker FROM livesession WHERE token = :t",
                                t=f"agent:{episode_id}")
    pid = deployment.worker_pids()[owner]
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)  # a request racing the death itself may fail (a raw client sends it again)

    after = turn("down")
    assert after.status_code == 200, after.text
    assert after.headers["X-Served-By"] not in served
    assert after.json()["applied"]
    turn("up")
    time.sleep(1)
    events = deployment.sql("SELECT seq, action FROM event WHERE episode_id = :e ORDER BY seq",
                            e=episode_id)
    assert [row[0] for row in events] == list(range(6))
    assert [row[1] for row in events] == ["up", "left", "right", "noop", "down", "up"]
    [(reply,)] = deployment.sql("SELECT raw_reply FROM event WHERE episode_id = :e AND seq = 3",
                                e=episode_id)
    assert reply == "<action>noop</action>\ufffdjunk\ufffd"


def test_an_evaluation_through_nginx_goes_on_when_the_worker_playing_it_dies(deployment):
    """``gridstudy agent run --server`` through nginx, its worker killed mid-batch
    without waiting for its writer: the batch waits, the other worker takes its attempts
    over, the turns the dead worker answered but had not written are sent again from the
    batch's copy, and no reply is asked of the model twice. Before, each attempt being
    played ended in error at the first 502 and the command stopped without its summary."""
    from bench.standin import FakeOpenAI, Stall
    from records.store import Store
    from study_server import tokens
    from tests.game_client.test_crash import through_server
    from tests.game_client.test_interrupt import NOOP, wait_for_requests

    turns = 20
    with Store(deployment.db) as store:
        secret = tokens.create(store.engine, "model-a")
    with FakeOpenAI([Stall(0.1, NOOP)] * 400) as fake:
        batch = through_server(deployment.url, secret, "--runs", "2", "--concurrency", "2",
                               turns=turns)(fake)
        try:
            wait_for_requests(fake, 10, batch)
            [(owner,)] = deployment.sql("SELECT DISTINCT worker FROM livesession "
                                        "WHERE token LIKE 'agent:%'")
            os.kill(deployment.worker_pids()[owner], signal.SIGKILL)
            out, err = batch.communicate(timeout=240)
        finally:
            if batch.poll() is None:
                batch.kill()
        asked = len(fake.requests)
    assert batch.returncode == 0, err[-3000:]
    assert "4 attempts (abandoned 4)" in out
    rows = deployment.sql("SELECT episode_id, seq FROM event ORDER BY episode_id, seq")
    by_attempt = Counter(episode for episode, _ in rows)
    assert sorted(by_attempt.values()) == [turns] * 4
    assert rows == [(e, s) for e in sorted(by_attempt) for s in range(turns)]
    assert asked == 4 * turns  # no reply lost, none asked for twice


def test_a_participant_in_the_browser_plays_on_when_their_worker_dies(deployment, page):
    """Chromium through nginx: the game page's Socket.IO client reconnects, rejoins, and
    the game goes on at the other worker; the page says so."""
    person = visitor(deployment, "browser")
    person.consent()
    person.post(person.screening_answers())
    page.context.add_cookies([{"name": name, "value": value, "url": deployment.url}
                              for name, value in person.http.cookies.items()])
    page.goto(f"{deployment.url}/study/crowd/flow")
    game = page.locator(".gs-game")
    page.wait_for_function("() => Number(document.querySelector('.gs-game').dataset.tick) > 3")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(1000)  # past the writer's flush window: a kill loses at most that
    token = game.get_attribute("data-token")
    [(owner,)] = deployment.sql("SELECT worker FROM livesession WHERE token = :t", t=token)
    pid = deployment.worker_pids()[owner]
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)
    page.wait_for_function("() => document.querySelector('[data-gs=message]').textContent"
                           ".includes('Connection lost')")
    tick = int(game.get_attribute("data-tick"))
    page.wait_for_function(f"() => Number(document.querySelector('.gs-game').dataset.tick) "
                           f"> {tick + 5}", timeout=20_000)
    page.keyboard.press("ArrowLeft")
    assert "Connection lost" not in page.locator("[data-gs=message]").text_content()
    [(now_owner, episode_id)] = deployment.sql(
        "SELECT worker, episode_id FROM livesession WHERE token = :t", t=token)
    assert now_owner != owner
    time.sleep(1)
    events = deployment.sql("SELECT seq, action, source FROM event WHERE episode_id = :e "
                            "ORDER BY seq", e=episode_id)
    assert [row[0] for row in events] == list(range(len(events)))
    assert [row[1] for row in events if row[2] == "input"] == ["right", "left"]


def test_workers_are_not_started_for_a_study_whose_problems_are_unknown_here(servers,
                                                                           tmp_path):
    """``serve --workers 2`` checks the studies before it starts a worker: one whose
    problems this machine has not registered (its library is elsewhere) is refused in one
    line, and no worker, nginx or port is taken."""
    from consent.definition import load_definition
    from records.models import Study
    from records.store import Store

    postgres, redis = servers
    db = fresh_database(postgres.port)
    definition = load_definition(_write(tmp_path / "study.yaml", STUDY))
    stored = {**definition.to_dict(), "problems": ["glass_house/planning"]}
    with Store(db) as store, store.session() as session:
        session.add(Study(id="crowd", title="Many at once", definition=stored))
    port = free_port()
    refused = subprocess.run(
        [sys.executable, "-m", "study_server.cli", "serve", "--workers", "2", "--port",
         str(port), "--db", db, "--message-queue", redis.url],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "GRIDSTUDY_LIBRARY": ""})
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.startswith("Error: problems not registered here: study 'crowd' "
                                      "plays glass_house/planning. The library read here is "
                                      f"{tmp_path / 'gridstudy-library'}:"), refused.stderr
    assert "behind nginx" not in refused.stdout
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # nothing listens there


def test_postgresql_stopped_for_ten_seconds_loses_nothing(servers, tmp_path):
    """Six people playing on two workers, pressing about four keys a second; PostgreSQL
    stops (fast shutdown) for ten seconds and starts again. Nothing acknowledged is lost,
    no attempt has a hole, nobody is answered 500 meanwhile (503 with Retry-After), and
    the games go on by themselves."""
    _, redis = servers
    base = Path(tempfile.mkdtemp(prefix="gridstudy-outage-"))
    base.chmod(0o711)  # PostgreSQL runs as its own user when the tests run as root
    postgres = services.start_postgres(base / "postgres", durable=False)
    deployment = Deployment((postgres, redis), tmp_path)
    try:
        people = arrive(deployment, 6, "o")
        players = [Player(deployment.url, p.task_token(), p.cookie()) for p in people]
        time.sleep(1)
        episodes = [episode_of(deployment.sql, player.token) for player in players]
        stop = threading.Event()
        presser = keep_pressing(players, rate=4.0, stop=stop)
        from study_server import tokens

        api_token = tokens.create(deployment.engine, "outage")
        time.sleep(2)
        deployment.engine.dispose()
        postgres.process.send_signal(signal.SIGINT)  # fast shutdown: clients cut off
        postgres.process.wait(30)
        stopped_at = time.time()
        time.sleep(3)
        newcomer = visitor(deployment, "newcomer").arrive()
        assert newcomer.status_code == 503 and newcomer.headers["Retry-After"], newcomer.text
        agent = httpx.post(f"{deployment.url}/api/agent/runs", json={"model": "m"},
                           headers={"Authorization": f"Bearer {api_token}"}, timeout=30)
        assert agent.status_code == 503 and "unavailable" in agent.json()["error"]
        time.sleep(max(0.0, stopped_at + 10 - time.time()))
        postgres = services.start_postgres(base / "postgres", port=postgres.port, durable=False)
        back_at = time.time()
        ticks = {id(p): (p.states[-1][1]["tick"] if p.states else -1) for p in players}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                any(s["tick"] > ticks[id(p)] and not s.get("paused")
                    for s in p.states_after(back_at)) for p in players):
            time.sleep(0.2)
        assert all(any(s["tick"] > ticks[id(p)] for s in p.states_after(back_at))
                   for p in players)  # on by themselves
        assert visitor(deployment, "after").arrive().status_code == 200
        time.sleep(2)
        stop.set()
        presser.join()
        for player in players:
            player.settle()
            player.close()
        deployment.stop()
        for player, episode_id in zip(players, episodes):
            counted = accounted(deployment.sql, episode_id)
            assert counted["stored"] == len(player.queued()), (counted, len(player.queued()))
            assert counted["queued"] == 0 and counted["holes"] == [], counted
        assert not [s for p in people for s in p.statuses if s >= 500 and s != 503]
    finally:
        deployment.stop()
        postgres.stop()


DATABASES = ["sqlite", "postgresql"]
"""The two kinds of database a study runs on, for the races of two transactions on one
participant's row: on both, a write read before another transaction's commit and made
after it overwrote that commit."""


@contextlib.contextmanager
def pilot_on(database: str, servers: Any, folder: Path) -> Iterator[tuple[Any, Any]]:
    """The participant flow's app on a new database of that kind (a SQLite file in
    ``folder``, or one of the module's PostgreSQL), its pilot study's time limit a
    minute: the app, and an engine of its own on the database."""
    from study_server.app import shutdown
    from tests.consent.helpers import study_app

    if database == "sqlite":
        url = f"sqlite:///{folder / 'flow.db'}"
    else:
        url = fresh_database(servers[0].port)
    app = study_app(url, time_limit_minutes=1)
    engine = create_engine(url)
    try:
        yield app, engine
    finally:
        engine.dispose()
        shutdown(app)


def while_an_answer_holds_the_lock(engine: Any, pid: int, do: Callable[[], Any],
                                   answer: str, table: str = "participant") -> None:
    """``do()`` in a thread while another transaction holds the write lock of ``table``'s
    row ``pid`` (as the participant's answer does, ``Flow.submit``: SQLite's ``BEGIN
    IMMEDIATE``, PostgreSQL's ``FOR UPDATE``), then ``answer`` (SQL on that row, ``:p`` its
    id) written and committed once ``do`` waits on the lock."""
    with engine.connect() as holder:
        if engine.dialect.name == "sqlite":
            holder.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            holder.begin()
            holder.execute(text(f"SELECT id FROM {table} WHERE id = :p FOR UPDATE"),
                           {"p": pid})
        doing = threading.Thread(target=do)
        doing.start()
        if engine.dialect.name == "sqlite":  # SQLite does not say who waits: a second
            time.sleep(1.0)  # reads the row and reaches the lock many times over
        deadline = time.monotonic() + 30
        while engine.dialect.name != "sqlite" and not holder.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'")).scalar():
            assert doing.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        holder.execute(text(answer), {"p": pid})
        holder.commit()
    doing.join(30)


@pytest.mark.parametrize("database", DATABASES)
def test_a_visit_completed_as_its_time_runs_out_stays_completed(database, servers, tmp_path):
    """On SQLite and on PostgreSQL a write waits for the lock and then overwrites: the
    deadline sweep reads a visit as active and past its limit while the participant's last
    answer, holding the visit's lock, completes it. The visit stays completed, with its
    code. Before, the sweep, released, wrote ``timed-out`` over the completion: the
    participant had the completion code on screen and was asked to return their
    submission. The same for a page load ending the visit, and for a visit left."""
    from datetime import timedelta

    from records.models import Participant, utcnow

    with pilot_on(database, servers, tmp_path) as (app, engine):
        flow, store = app.extensions["gridstudy.flow"], app.extensions["gridstudy.store"]
        ending = {"sweep": lambda pid: flow.end_overdue(),
                  "page load": lambda pid: flow.page("pilot", pid),
                  "leaving": lambda pid: flow.leave("pilot", pid, "wrong-device")}
        for index, (name, end) in enumerate(ending.items()):
            pid = flow.enter("pilot", f"person{index}", None, None)
            with store.session() as db:  # arrived two minutes ago: past the limit
                db.get(Participant, pid).created_at = utcnow() - timedelta(minutes=2)
            while_an_answer_holds_the_lock(
                engine, pid, functools.partial(end, pid),
                "UPDATE participant SET status = 'complete', code = 'DONE-CODE' WHERE id = :p")
            with store.session() as db:
                row = db.get(Participant, pid)
                assert (row.status, row.code) == ("complete", "DONE-CODE"), name


@pytest.mark.parametrize("database", DATABASES)
def test_a_fallback_to_server_play_as_the_participant_answers_loses_neither(database, servers,
                                                                             tmp_path):
    """A page whose browser cannot run the engine asks for server play while
    the participant's answer, holding the visit's lock, moves them on. Both are kept.
    Before, the fallback, released, wrote the visit's data as it had read it: the answer
    was lost, and the participant was sent back to the stage they had answered."""
    from records.models import Participant
    from study_server.flow import FELL_BACK

    with pilot_on(database, servers, tmp_path) as (app, engine):
        flow, store = app.extensions["gridstudy.flow"], app.extensions["gridstudy.store"]
        pid = flow.enter("pilot", "person", None, None)
        while_an_answer_holds_the_lock(
            engine, pid, lambda: flow.fall_back("pilot", pid, "no WebAssembly"),
            """UPDATE participant SET data = '{"step": 1, "records": [{"stage": "consent"}]}'
               WHERE id = :p""")
        with store.session() as db:
            data = db.get(Participant, pid).data
        assert (data["step"], data["records"]) == (1, [{"stage": "consent"}])
        assert data[FELL_BACK]["error"] == "no WebAssembly"


def test_a_visit_timed_out_as_its_problems_are_reserved_stays_ended_and_holds_none(servers,
                                                                                 tmp_path):
    """The screening's answer commits, then reserves the participant's problems under the
    study's lock, in a transaction of its own. A visit timed out in that instant stays
    timed out, on the end page, and gives back the slots reserved for it. Before, the
    answer went on with the row it had read: it moved the ended visit on to the next
    stage, holding its two slots until the abandon timeout; in a full study it wrote
    ``full`` over ``timed-out``. On PostgreSQL only: on SQLite the visit's and the study's
    locks are the one database lock, and the instant cannot be held open from outside."""
    from sqlmodel import select

    from records.models import EpisodeRow, Participant
    from study_server import assignment

    with pilot_on("postgresql", servers, tmp_path) as (app, engine):
        flow, store = app.extensions["gridstudy.flow"], app.extensions["gridstudy.store"]
        pid = flow.enter("pilot", "person", None, None)
        assert flow.submit("pilot", pid, {"choice": "agree"}) is None
        page = flow.page("pilot", pid)
        assert page.stage.name == "screening"
        form = page.stage.simulate(page.state)
        while_an_answer_holds_the_lock(
            engine, "pilot", lambda: flow.submit("pilot", pid, form),
            f"UPDATE participant SET status = 'timed-out', stage = 'end' WHERE id = {pid}",
            table="study")
        with store.session() as db:
            row = db.get(Participant, pid)
            assert (row.status, row.stage) == ("timed-out", "end")
            held = db.exec(select(EpisodeRow).where(EpisodeRow.participant_id == pid,
                                                    EpisodeRow.status.in_(assignment.HOLDING))).all()
            assert held == []


@pytest.mark.parametrize("database", DATABASES)
def test_a_participant_excluded_as_they_complete_is_included_again_as_completed(database,
                                                                              servers, tmp_path):
    """A researcher excludes a participant by hand while the participant's
    last answer, holding their lock, completes the visit. The exclusion keeps
    ``complete`` as the status to restore, and including them again restores it. Before,
    it kept ``active``: included again, the visit was active again, and timed out."""
    from records.models import Participant
    from study_server import auth
    from tests.study_server.test_dashboard import log_in
    from tests.study_server.test_researcher_actions import act

    with pilot_on(database, servers, tmp_path) as (app, engine):
        flow, store = app.extensions["gridstudy.flow"], app.extensions["gridstudy.store"]
        auth.create_admin(store.engine, "researcher", "correct horse")
        researcher = app.test_client()
        log_in(researcher)
        pid = flow.enter("pilot", "person", None, None)
        inclusion = f"/dashboard/participant/{pid}/inclusion"
        while_an_answer_holds_the_lock(
            engine, pid, lambda: act(researcher, inclusion, included="0", reason="bot-like"),
            "UPDATE participant SET status = 'complete' WHERE id = :p")
        with store.session() as db:
            assert db.get(Participant, pid).status == "excluded"
        act(researcher, inclusion, included="1", reason="checked again")
        with store.session() as db:
            assert db.get(Participant, pid).status == "complete"


@pytest.mark.parametrize("database", DATABASES)
def test_two_notes_on_one_attempt_at_once_are_both_kept(database, servers, tmp_path):
    """What the server writes in an attempt's info at its end (the browser check's
    verdict, the outcome), a note made on it meanwhile (the fallback to server play, who
    resumes it), and a resumption each merge into the info as it is when written. Before,
    each read the info, then wrote it back merged after the other's commit: a fallback
    asked for as a tampered log's last batch ended the attempt wrote back the info without
    ``verified: false``, and the attempt was kept in the analysis as verified."""
    from records.models import EpisodeRow
    from records.recorder import merge_info
    from tasks import registry

    with pilot_on(database, servers, tmp_path) as (app, engine):
        store = app.extensions["gridstudy.store"]
        problem = registry.get_problem("ant_trail/planning")
        verdict = '{"play": "browser", "verified": false, "first_difference": {"tick": 7}}'
        cases = {
            "a note as the end is written": (
                lambda e: merge_info(store, e, {"fallback": "no WebAssembly"}),
                f"UPDATE episode SET info = '{verdict}' WHERE id = :p",
                {"verified": False, "fallback": "no WebAssembly"}),
            "the end as a note is written": (
                lambda e: store.finish_episode(e, status="done", phase="test", score=0.0,
                                               info={"verified": False}),
                """UPDATE episode SET info = '{"fallback": "no WebAssembly"}' WHERE id = :p""",
                {"verified": False, "fallback": "no WebAssembly"}),
            "a resumption as a note is written": (
                store.reopen_episode,
                """UPDATE episode SET info = '{"owner": "host:42", "resumed": 1}'
                   WHERE id = :p""",
                {"owner": "host:42", "resumed": 2}),
        }
        for name, (do, answer, kept) in cases.items():
            episode_id = store.start_episode(problem=problem, info={"first": 1})
            while_an_answer_holds_the_lock(engine, episode_id, functools.partial(do, episode_id),
                                           answer, table="episode")
            with store.session() as db:
                info = db.get(EpisodeRow, episode_id).info
            assert {k: info.get(k) for k in kept} == kept, (name, info)


@pytest.mark.parametrize("database", DATABASES)
def test_an_attempt_judged_as_a_note_is_written_on_it_keeps_both(database, servers, tmp_path):
    """The participant's answer after a game judges the attempt (its quality flags go
    into its info) while a note is written on it (the fallback to server play). Both are
    kept. Before, on PostgreSQL, the answer read the attempt under the participant's lock
    only, and wrote its info back over the note."""
    from records.models import EpisodeRow
    from tests.consent.test_flow import ENTRY, answer, current, finish_game, post

    note = ("json_set(info, '$.fallback', 'no WebAssembly')" if database == "sqlite" else
            """(info::jsonb || '{"fallback": "no WebAssembly"}')::json""")
    with pilot_on(database, servers, tmp_path) as (app, engine):
        store, client = app.extensions["gridstudy.store"], app.test_client()
        client.get(ENTRY)
        while current(app, client).stage.name != "task":
            answer(app, client)
        page = current(app, client)
        finish_game(app, page)
        store.wait()  # the attempt's end is written
        episode_id = page.context["episode_id"]
        while_an_answer_holds_the_lock(
            engine, episode_id, lambda: post(client, page.stage.simulate(page.state)),
            f"UPDATE episode SET info = {note} WHERE id = :p", table="episode")
        assert current(app, client).stage.name != "task"
        with store.session() as db:
            info = db.get(EpisodeRow, episode_id).info
        assert info.get("fallback") == "no WebAssembly" and "quality" in info, info


def test_a_guesser_is_slowed_down_on_every_worker_and_the_researcher_gets_in(deployment):
    """Wrong passwords for the researcher's name from one address, sent to one worker:
    the other worker refuses that address's next try too (the count is in the database),
    while the right password from another address is let in on either."""
    from records.store import Store
    from study_server import auth

    with Store(deployment.db) as store:
        auth.create_admin(store.engine, "researcher", "correct horse battery")
    one, two = (f"http://{worker}" for worker in deployment.workers)

    def attempt(base: str, password: str, address: str) -> int:
        client = httpx.Client(base_url=base, timeout=30, headers={"X-Forwarded-For": address})
        page = client.get("/dashboard/login").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        return client.post("/dashboard/login", data={
            "username": "researcher", "password": password, "csrf_token": token}).status_code

    answers = [attempt(one, "wrong", "10.0.0.9") for _ in range(6)]
    assert answers == [200] * 5 + [429]
    assert attempt(two, "wrong", "10.0.0.9") == 429  # the other worker counts them too
    assert attempt(two, "correct horse battery", "10.0.0.2") == 302
    assert attempt(one, "correct horse battery", "10.0.0.2") == 302


def websocket_from(source: str, port: int) -> tuple[socket.socket, str]:
    """A websocket handshake for Socket.IO sent to nginx from ``source``, an address of
    this machine: the socket, and the status line of nginx's answer."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10,
                                          source_address=(source, 0))
    key = base64.b64encode(os.urandom(16)).decode()
    connection.sendall((f"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\n"
                        f"Host: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    answer = b""
    while b"\r\n" not in answer:
        chunk = connection.recv(4096)
        if not chunk:
            break
        answer += chunk
    return connection, answer.split(b"\r\n", 1)[0].decode()


def test_one_address_holds_no_more_than_its_share_of_connections_through_nginx(deployment):
    """Behind nginx every worker sees its connections come from nginx, on this machine,
    which no limit counts; so nginx counts them per client address: one address may hold
    CONNECTIONS_PER_ADDRESS websockets at once (the next is answered 503 at once), and a
    participant arriving from elsewhere meanwhile is let in; once they close, the
    address may connect again."""
    source = outside_address()
    port = int(deployment.url.rsplit(":", 1)[1])
    held = [websocket_from(source, port) for _ in range(CONNECTIONS_PER_ADDRESS + 10)]
    try:
        statuses = Counter(status.split(" ")[1] for _, status in held)
        assert statuses == {"101": CONNECTIONS_PER_ADDRESS, "503": 10}, statuses
        person = visitor(deployment, "elsewhere")
        person.consent()
        assert person.statuses == [200, 200, 200], person.statuses
    finally:
        for connection, _ in held:
            connection.close()
    deadline = time.monotonic() + 10
    while True:  # nginx counts a websocket until the worker's side has closed too
        again, status = websocket_from(source, port)
        again.close()
        if status.startswith("HTTP/1.1 101") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert status.startswith("HTTP/1.1 101"), status


WAITS = """
import sys, threading, time
from gevent import monkey
monkey.patch_all()
import gevent
from records.offload import off_loop, on_loop_thread, psycopg_waits_natively_off_loop
psycopg_waits_natively_off_loop()
import psycopg
from psycopg import waiting

url = sys.argv[1].replace("postgresql+psycopg", "postgresql")
in_c = []  # for each wait in C: whether it was on the loop's thread
native = waiting.wait_c
def noting(gen, fileno, interval=None, timeout=None):
    in_c.append(on_loop_thread())
    return native(gen, fileno, interval=interval, timeout=timeout)
waiting.wait_c = noting

def sleep_in_postgres():
    with psycopg.connect(url) as connection:
        connection.execute("SELECT pg_sleep(0.4)")

beats = []
def beat():
    while True:
        beats.append(time.monotonic())
        gevent.sleep(0.02)
gevent.spawn(beat)
gevent.sleep(0.05)
began = len(beats)
sleep_in_postgres()                # on the loop: gevent's poll, the beat goes on meanwhile
on_loop, waits_in_c = len(beats) - began, len(in_c)
began = len(beats)
off_loop(sleep_in_postgres)        # in a native thread: the C wait, the beat goes on too
print(on_loop, len(beats) - began, waits_in_c, len(in_c), any(in_c))
"""


def test_psycopg_cooperates_on_the_loop_and_waits_in_c_in_native_threads(servers, tmp_path):
    """Under gevent a query made on the loop lets the other greenlets run while it waits;
    one made off the loop waits in its native thread with psycopg's C wait (gevent's
    poll there cost the store's thread ten times the CPU), and the loop goes on."""
    postgres, _ = servers
    script = tmp_path / "waits.py"
    script.write_text(WAITS)
    done = subprocess.run([sys.executable, str(script), postgres.url], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    on_loop, off, before, after, any_on_loop = done.stdout.split()
    assert int(on_loop) >= 10 and int(off) >= 10  # 0.4 s of 20 ms beats, both ways
    assert int(before) == 0 < int(after) and any_on_loop == "False"


def test_an_export_whose_postgresql_stops_mid_read_says_so_and_nothing_more(tmp_path):
    """PostgreSQL stops while an export reads the study. Once it is back, the export's
    page says it failed because the database could not be read, and offers to try again,
    which works; it names neither the database's address nor its user (they are in the
    server's log, guarantee 1.6)."""
    from study_server import auth
    from study_server.app import shutdown
    from tests.consent.helpers import study_app
    from tests.study_server.people import csrf, followed_export
    from tests.study_server.test_dashboard import log_in

    base = Path(tempfile.mkdtemp(prefix="gridstudy-export-outage-"))
    base.chmod(0o711)  # PostgreSQL runs as its own user when the tests run as root
    postgres = services.start_postgres(base / "postgres", durable=False)
    try:
        url = services.create_database(postgres.port, "exports")
        app = study_app(url)
        try:
            auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
            client = app.test_client()
            log_in(client)
            token = csrf(client, "/dashboard/")
            holder = create_engine(url).connect()  # the export waits on it, mid-read
            holder.begin()
            holder.execute(text("LOCK TABLE episode IN ACCESS EXCLUSIVE MODE"))
            asked = client.post("/dashboard/export", data={"study": "pilot", "csrf_token": token})
            assert asked.status_code == 303, asked.text[:300]
            deadline, watcher = time.monotonic() + 30, create_engine(url)
            while not waiting_on_a_lock(watcher):  # the holder's transaction sees a snapshot
                assert time.monotonic() < deadline
                time.sleep(0.05)
            watcher.dispose()
            postgres.process.send_signal(signal.SIGINT)  # fast shutdown: clients cut off
            postgres.process.wait(30)
            holder.invalidate()
            postgres = services.start_postgres(base / "postgres", port=postgres.port, durable=False)
            made, page = followed_export(client, asked.headers["Location"])
            assert made is None and "The export failed: the database could not be read" in page
            assert str(postgres.port) not in page and "gridstudy@" not in page
            assert "Try again" in page
            made, page = followed_export(client, client.post("/dashboard/export", data={
                "study": "pilot", "csrf_token": csrf(client, "/dashboard/")}).headers["Location"])
            assert made[:2] == b"PK", page[-1000:]
        finally:
            shutdown(app)
    finally:
        postgres.stop()


def waiting_on_a_lock(engine: Any) -> bool:
    """Whether a statement on ``engine``'s PostgreSQL database waits for a lock now."""
    with engine.connect() as connection:
        return bool(connection.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")).scalar())


def test_the_readmes_large_study_starts_on_a_new_folder_and_again_on_the_same(tmp_path):
    """The README's way to run a large study with nothing running yet: ``gridstudy serve
    --workers 2 --data-dir DIR`` on a new folder starts PostgreSQL, Redis, nginx and two
    workers and prints the database's URL; the study stored there from another terminal
    is served; stopped and started again on the same folder, it is still there. Before,
    the check of the studies' problems asked the new database for its participants
    before it had tables, and the command stopped with PostgreSQL's "relation
    participant does not exist"."""
    base = Path(tempfile.mkdtemp(prefix="gridstudy-readme-"))
    base.chmod(0o711)  # PostgreSQL runs as its own user when the tests run as root
    folder = base / "study-data"
    port = free_port()
    for start in ("new", "again"):
        log = tmp_path / f"{start}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "study_server.cli", "serve", "--workers", "2", "--port",
             str(port), "--data-dir", str(folder)],
            stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            # Started: the first line; on the same folder, the stored study's link too
            # (kept, and served), printed after it: read too soon, the log held one line.
            started = "behind nginx" if start == "new" else "/study/crowd?PROLIFIC_PID="
            deadline = time.monotonic() + 120
            while started not in log.read_text():
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            url = re.search(r"database (postgresql\S+),", log.read_text()).group(1)
            if start == "new":
                made = subprocess.run(
                    [sys.executable, "-m", "study_server.cli", "study", "create",
                     str(_write(tmp_path / "study.yaml", STUDY)), "--db", url],
                    capture_output=True, text=True, cwd=tmp_path)
                assert made.returncode == 0, made.stderr
            page = httpx.get(f"http://127.0.0.1:{port}/study/crowd?PROLIFIC_PID={start}1"
                             f"&STUDY_ID=s&SESSION_ID=x", follow_redirects=True, timeout=30)
            assert page.status_code == 200 and "You are invited to play." in page.text
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(90)
        assert process.returncode == 0, log.read_text()[-3000:]
    shutil.rmtree(base, ignore_errors=True)
