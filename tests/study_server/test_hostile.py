"""A hostile visitor against a real ``gridstudy serve`` process: every malformed HTTP
request is answered 4xx (never 5xx) with a message, every malformed socket message is
refused, and the server keeps serving the people who play properly.

One row per case. HTTP paths and bodies may name ``{run}`` and ``{episode}``: an agent
run and an agent episode the module creates first.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Player, start_serve, wait_until
from tests.study_server.people import exported

PROBLEM = "cloud_burst/mfp"
GRIDSTUDY = str(Path(sys.executable).parent / "gridstudy")
PASSWORD = "correct horse battery"


def log_in(http: httpx.Client) -> None:
    """Log the researcher in (previews on a production server are for researchers)."""
    page = http.get("/dashboard/login").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    answer = http.post("/dashboard/login", data={"username": "researcher", "password": PASSWORD,
                                                 "csrf_token": csrf})
    assert answer.status_code == 302, answer.text[:300]
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = 2**64


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


HTTP = {
    # the agent API: credentials (the 6th item replaces the Authorization header)
    "auth: no token": ("POST", "/api/agent/runs", {}, 401, "send Authorization: Bearer <token>", ""),
    "auth: bearer without a token": ("POST", "/api/agent/runs", {}, 401, "send Authorization", "Bearer"),
    "auth: basic scheme": ("POST", "/api/agent/runs", {}, 401, "send Authorization", "Basic dXNlcjpwdw=="),
    "auth: made-up token": ("GET", "/api/agent/episodes/{episode}", None, 401, "send Authorization", "Bearer gs_made-up"),
    "auth: a 10,000-character token": ("GET", "/api/agent/episodes/{episode}", None, 401, "send Authorization", "Bearer gs_" + "x" * 10_000),
    "auth: another study": ("POST", "/api/agent/runs", {"study_id": "other"}, 403, "is for runs outside any study only"),
    # the agent API: runs
    "runs: not JSON": ("POST", "/api/agent/runs", b"not json", 400, "send a JSON object"),
    "runs: a list": ("POST", "/api/agent/runs", [], 400, "send a JSON object"),
    "runs: a string": ("POST", "/api/agent/runs", "run", 400, "send a JSON object"),
    "runs: model as an object": ("POST", "/api/agent/runs", {"model": {"x": 1}}, 400, "model must be text"),
    "runs: study_id as an object": ("POST", "/api/agent/runs", {"study_id": {"a": 1}}, 400, "study_id must be text"),
    "runs: a study the token is not for": ("POST", "/api/agent/runs", {"study_id": "nope"}, 403, "token 'hostile' is for runs outside any study only"),
    "runs: agent_kind too long": ("POST", "/api/agent/runs", {"agent_kind": "x" * 100}, 400, "agent_kind must lie in 0..40"),
    "runs: config a list": ("POST", "/api/agent/runs", {"config": [1]}, 400, "config must be a JSON object"),
    "runs: unknown field": ("POST", "/api/agent/runs", {"colour": 1}, 400, "unknown field 'colour'"),
    "runs: a misspelt field": ("POST", "/api/agent/runs", {"modle": "m"}, 400,
                               "unknown field 'modle' (did you mean 'model'?); expected some of"),
    "runs: nested 100,000 deep": ("POST", "/api/agent/runs", DEEP.encode(), 400, "send a JSON object"),
    "runs: config nested 40 deep": ("POST", "/api/agent/runs", {"config": nested(40)}, 400, "nests deeper than 32"),
    "runs: an 8 MB body": ("POST", "/api/agent/runs", {"model": "m" * 8_000_000}, 413, "over 7312240 bytes"),
    "runs: PUT": ("PUT", "/api/agent/runs", None, 405, "Method Not Allowed: PUT /api/agent/runs"),
    # episodes
    "episodes: run id beyond 64 bits": ("POST", f"/api/agent/runs/{HUGE}/episodes", {"problem_id": PROBLEM}, 404, "no agent run"),
    "episodes: unknown run": ("POST", "/api/agent/runs/987654/episodes", {"problem_id": PROBLEM}, 404, "no agent run 987654"),
    "episodes: negative run id": ("POST", "/api/agent/runs/-1/episodes", {"problem_id": PROBLEM}, 404, ""),
    "episodes: no problem": ("POST", "/api/agent/runs/{run}/episodes", {}, 400, "problem_id is required"),
    "episodes: problem a number": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": 5}, 400, "problem_id must be text"),
    "episodes: unknown problem": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": "nope"}, 404, "unknown problem 'nope'"),
    "episodes: max_invalid 0": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": PROBLEM, "max_invalid": 0}, 400, "max_invalid must be an integer of at least 1"),
    "episodes: max_turns beyond 64 bits": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": PROBLEM, "max_turns": 2**70}, 400, "max_turns must be an integer of at least 1"),
    "episodes: max_invalid text": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": PROBLEM, "max_invalid": "3"}, 400, "max_invalid must be an integer of at least 1"),
    "episodes: max_turns true": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": PROBLEM, "max_turns": True}, 400, "max_turns must be an integer of at least 1"),
    "episodes: run_index negative": ("POST", "/api/agent/runs/{run}/episodes", {"problem_id": PROBLEM, "run_index": -1}, 400, "run_index must be an integer of at least 0"),
    "episode: id 0": ("GET", "/api/agent/episodes/0", None, 404, "no agent episode 0"),
    "episode: id beyond 64 bits": ("GET", f"/api/agent/episodes/{HUGE}", None, 404, "no agent episode"),
    "episode: unknown id": ("GET", "/api/agent/episodes/987654", None, 404, "no agent episode 987654"),
    "episode: not a number": ("GET", "/api/agent/episodes/abc", None, 404, ""),
    # turns
    "turn: action an object": ("POST", "/api/agent/episodes/{episode}/actions", {"action": {"x": 1}}, 400, "action must be text"),
    "turn: action a number": ("POST", "/api/agent/episodes/{episode}/actions", {"action": 5}, 400, "action must be text"),
    "turn: action too long": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up" * 500}, 400, "action must lie in 0..200"),
    "turn: raw_reply an object": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "raw_reply": {"x": 1}}, 400, "raw_reply must be text"),
    "turn: prompt_tokens text": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "prompt_tokens": "lots"}, 400, "prompt_tokens must be an integer"),
    "turn: prompt_tokens negative": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "prompt_tokens": -1}, 400, "prompt_tokens must lie in 0.."),
    "turn: completion_tokens a float": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "completion_tokens": 1.5}, 400, "completion_tokens must be an integer"),
    "turn: cost text": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "cost": "free"}, 400, "cost must be a finite number"),
    "turn: cost NaN": ("POST", "/api/agent/episodes/{episode}/actions", b'{"action": "up", "cost": NaN}', 400, "cost must be a finite number"),
    "turn: latency Infinity": ("POST", "/api/agent/episodes/{episode}/actions", b'{"action": "up", "latency": Infinity}', 400, "latency must be a finite number"),
    "turn: latency absurd": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "latency": 1e308}, 400, "latency must lie in 0..86400"),
    "turn: error a list": ("POST", "/api/agent/episodes/{episode}/actions", {"error": ["x"]}, 400, "error must be text"),
    "turn: unknown field": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "up", "score": 1}, 400, "unknown field 'score'"),
    "turn: not JSON": ("POST", "/api/agent/episodes/{episode}/actions", b"{", 400, "send a JSON object"),
    "turn: unknown episode": ("POST", "/api/agent/episodes/987654/actions", {"action": "up"}, 404, "no agent episode 987654"),
    "end: status done": ("POST", "/api/agent/episodes/{episode}/end", {"status": "done"}, 400, "status must be one of abandoned, error, interrupted"),
    "end: reason an object": ("POST", "/api/agent/episodes/{episode}/end", {"reason": {"a": 1}}, 400, "reason must be text"),
    "end: a list": ("POST", "/api/agent/episodes/{episode}/end", [1], 400, "send a JSON object"),
    "resume: an active attempt": ("POST", "/api/agent/episodes/{episode}/resume", {}, 409, "is still being played"),
    "resume: unknown episode": ("POST", "/api/agent/episodes/999999/resume", {}, 404, "no agent episode 999999"),
    "actions: a prompt over its limit": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "noop", "prompt": "x" * 400_001}, 400, "prompt must lie in 0..400000 characters"),
    "actions: retries as text": ("POST", "/api/agent/episodes/{episode}/actions", {"action": "noop", "retries": "2"}, 400, "retries must be"),
    "api: unknown route": ("GET", "/api/agent/nothing", None, 404, "Not Found: GET /api/agent/nothing"),
    "api: wrong method": ("DELETE", "/api/agent/runs", None, 405, "Method Not Allowed"),
    # previews, the participant flow, the dashboard, static files
    "preview: unknown problem": ("GET", "/play/does/not/exist", None, 404, ""),
    "preview session: unknown problem": ("POST", "/play/nope/session", None, 404, ""),
    "preview: path traversal": ("GET", "/play/../../etc/passwd", None, 404, ""),
    "static: path traversal": ("GET", "/static/../../pyproject.toml", None, 404, ""),
    "study: unknown": ("GET", "/study/nope?PROLIFIC_PID=a", None, 404, ""),
    "flow: forged form without CSRF": ("POST", "/study/nope/flow", b"choice=1", 400, ""),
    "dashboard: episode id beyond 64 bits": ("GET", f"/dashboard/episode/{HUGE}", None, 404, ""),
    "dashboard: participant 0": ("GET", "/dashboard/participant/0", None, 404, ""),
    "dashboard: login without a form": ("POST", "/dashboard/login", b"", 400, ""),
    "study: a NUL in the Prolific id": ("GET", "/study/nope?PROLIFIC_PID=%00a", None, 400, ""),
    # an id lands in the payment files and the export, opened in spreadsheets
    "study: a formula as the Prolific id": ("GET", "/study/nope?PROLIFIC_PID=%3DHYPERLINK(%22x%22)", None, 400, ""),
    "study: a formula as the session id": ("GET", "/study/nope?PROLIFIC_PID=a1&SESSION_ID=%2B1%2B2", None, 400, ""),
    "study: an id starting with @": ("GET", "/study/nope?PROLIFIC_PID=a1&STUDY_ID=%40SUM(1)", None, 400, ""),
    "preview: a NUL in the path": ("GET", "/play/a%00b", None, 400, ""),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Any:
    folder = tmp_path_factory.mktemp("hostile")
    db = str(folder / "gridstudy.db")
    made = subprocess.run([GRIDSTUDY, "token", "create", "hostile", "--db", db],
                          capture_output=True, text=True, check=True)
    token = made.stdout.strip()
    subprocess.run([GRIDSTUDY, "admin", "create", "researcher", "--password", PASSWORD, "--db", db],
                   capture_output=True, check=True)
    process, url = start_serve(folder / "gridstudy.db", log=folder / "serve.log")
    http = httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"})
    log_in(http)
    run = http.post("/api/agent/runs", json={"agent_kind": "scripted"}).json()["agent_run_id"]
    episode = http.post(f"/api/agent/runs/{run}/episodes", json={"problem_id": PROBLEM}).json()["episode_id"]
    yield {"url": url, "http": http, "run": run, "episode": episode, "process": process,
           "log": folder / "serve.log"}
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.parametrize("name", HTTP)
def test_a_malformed_request_is_answered_4xx_with_a_message(server, name):
    method, path, body, status, message, *authorization = HTTP[name]
    path = path.format(run=server["run"], episode=server["episode"])
    content = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if content is not None else {}
    if authorization:
        headers["Authorization"] = authorization[0]
    response = server["http"].request(method, path, content=content, follow_redirects=False,
                                      headers=headers)
    assert response.status_code == status, response.text[:300]
    if message:
        assert message in response.json()["error"]
    assert server["process"].poll() is None


SOCKET = {
    "join: nothing": ("join", None, "join: unknown or missing session token"),
    "join: a list": ("join", [], "join: unknown or missing session token"),
    "join: a string": ("join", "token", "join: unknown or missing session token"),
    "join: token a number": ("join", {"token": 5}, "join: unknown or missing session token"),
    "join: token an object": ("join", {"token": {"a": 1}}, "join: unknown or missing session token"),
    "join: unknown token": ("join", {"token": "nope"}, "join: unknown or missing session token"),
    "join: a 10,000-character token": ("join", {"token": "x" * 10_000}, "join: unknown or missing session token"),
    "input: nothing": ("input", None, "input: expected {token, action, client_time}"),
    "input: a list": ("input", [], "input: expected {token, action, client_time}"),
    "input: a string": ("input", "up", "input: expected {token, action, client_time}"),
    "input: no action": ("input", {"token": "{token}"}, "input: expected {token, action, client_time}"),
    "input: action a number": ("input", {"token": "{token}", "action": 5}, "input: expected {token, action, client_time}"),
    "input: action an object": ("input", {"token": "{token}", "action": {"x": 1}}, "input: expected {token, action, client_time}"),
    "input: action null": ("input", {"token": "{token}", "action": None}, "input: expected {token, action, client_time}"),
    "input: someone else's token": ("input", {"token": "nope", "action": "up"}, "input: not your session"),
    "input: client_time NaN": ("input", {"token": "{token}", "action": "up", "client_time": float("nan")}, "input: client_time must be"),
    "input: client_time Infinity": ("input", {"token": "{token}", "action": "up", "client_time": float("inf")}, "input: client_time must be"),
    "input: client_time 1e308": ("input", {"token": "{token}", "action": "up", "client_time": 1e308}, "input: client_time must be"),
    "input: client_time negative": ("input", {"token": "{token}", "action": "up", "client_time": -5.0}, "input: client_time must be"),
    "unsent: nothing": ("unsent", None, "unsent: expected {token, inputs"),
    "unsent: inputs a string": ("unsent", {"token": "{token}", "inputs": "up"}, "unsent: expected {token, inputs"),
    "unsent: an input a string": ("unsent", {"token": "{token}", "inputs": ["up"]}, "unsent: expected {token, inputs"),
    "unsent: 101 inputs": ("unsent", {"token": "{token}", "inputs": [{"action": "up"}] * 101}, "unsent: expected {token, inputs"),
    "unsent: more negative": ("unsent", {"token": "{token}", "inputs": [], "more": -1}, "unsent: expected {token, inputs"),
    "unsent: more a float": ("unsent", {"token": "{token}", "inputs": [], "more": 1.5}, "unsent: expected {token, inputs"),
    "unsent: client_time NaN": ("unsent", {"token": "{token}", "inputs": [{"action": "up", "client_time": float("nan")}]}, "unsent: client_time must be"),
    "unsent: someone else's token": ("unsent", {"token": "nope", "inputs": []}, "input: not your session"),
}


@pytest.fixture
def player(server):
    opened = server["http"].post(f"/play/{PROBLEM}/session").json()
    cookie = "; ".join(f"{k}={v}" for k, v in server["http"].cookies.items())
    client = Player(server["url"], opened["token"], cookie=cookie).connect()  # its researcher
    assert client.join()["ok"]
    yield client
    client.close()


@pytest.mark.parametrize("name", SOCKET)
def test_a_malformed_socket_message_is_refused_and_play_goes_on(server, player, name):
    event, payload, error = SOCKET[name]
    if isinstance(payload, dict):
        payload = {k: player.token if v == "{token}" else v for k, v in payload.items()}
    answer = player.sio.call(event, payload, timeout=10)
    assert answer == {"ok": False, "error": answer.get("error")} and answer["error"].startswith(error)
    assert player.send("right") == {"ok": True, "status": "queued"}
    player.wait_ticks(2)


def recorded_player(server, kind: type[Player] = Player) -> tuple[dict[str, Any], Player]:
    """A recorded preview opened by the server's researcher, and a ``kind`` of player
    connected to it (not joined yet)."""
    http = server["http"]
    opened = http.post(f"/play/{PROBLEM}/session?record=1").json()
    cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
    return opened, kind(server["url"], opened["token"], cookie=cookie).connect()


def test_keys_a_page_kept_while_cut_off_are_stored_once_never_applied(server):
    """``unsent``: the keys a page pressed while its connection was lost, told once it has
    joined again. Each is stored as a ``dropped`` raw input with why, the ones it only
    counted in one row; none is applied; a second telling on the same connection is
    refused, so a page cannot fill the record with them."""
    from tasks.worldtest.tick import UNSENT

    opened, page = recorded_player(server)
    try:
        assert page.join()["ok"]
        pressed = [{"action": a, "client_time": time.time() - 3} for a in ("up", "left", "up")]
        told = {"token": page.token, "inputs": pressed, "more": 40}
        assert page.sio.call("unsent", told, timeout=10) == {"ok": True, "kept": 4}
        again = page.sio.call("unsent", told, timeout=10)
        assert again["error"] == "unsent: sent already on this connection"
        assert page.send("right") == {"ok": True, "status": "queued"}
        page.wait_ticks(3)
    finally:
        page.close()

    def stored() -> tuple[list, list]:
        with closing(sqlite3.connect(server["log"].parent / "gridstudy.db")) as db:
            episode = opened["episode_id"]
            return (db.execute("select text, status, reason from rawinput where episode_id = ?"
                               " order by id", (episode,)).fetchall(),
                    [a for (a,) in db.execute("select action from event where episode_id = ?"
                                              " and source = 'input'", (episode,))])

    wait_until(lambda: stored()[1] == ["right"], 10, "the applied key's event")
    kept, applied = stored()
    assert kept == [("up", "dropped", UNSENT), ("left", "dropped", UNSENT),
                    ("up", "dropped", UNSENT),
                    ("up", "dropped", f"40 more key(s) {UNSENT}, counted, not kept one by one")]
    assert applied == ["right"]


@pytest.mark.parametrize("event, payload", [
    ("pong", None), ("pong", {"sent": "x", "client_time": 1}), ("pong", [1, 2]),
    ("hack", {"a": 1}), ("input", "x" * 60_000),
])
def test_messages_without_an_answer_are_ignored_and_play_goes_on(server, player, event, payload):
    player.sio.emit(event, payload)
    assert player.send("right") == {"ok": True, "status": "queued"}
    player.wait_ticks(2)


@pytest.mark.parametrize("answer", [float("inf"), float("nan"), 1e308],
                         ids=["Infinity", "NaN", "1e308"])
def test_a_clock_answered_with_an_impossible_time_is_refused_and_every_input_is_stored(
        server, answer):
    """Python's JSON parser reads Infinity and NaN. A page answering the clock's pings
    with one set its session's clock offset to it: every input after went unacknowledged,
    and the tick that applied it failed to store it. The pong is refused; the offset
    stays as it was, and play and the record go on."""
    class WrongClock(Player):
        def _pong(self, message: dict[str, Any]) -> None:
            self.sio.emit("pong", {"sent": message["sent"], "client_time": answer})

    opened, wrong = recorded_player(server, WrongClock)
    try:
        assert wrong.join()["ok"]
        sent = [wrong.send("right") for _ in range(3)]
        wrong.wait_ticks(3)
    finally:
        wrong.close()
    assert sent == [{"ok": True, "status": "queued"}] * 3
    assert "pong: sent and client_time must be Unix seconds" in wrong.refusals[0]["reason"]

    def stored_times() -> list[float]:
        with closing(sqlite3.connect(server["log"].parent / "gridstudy.db")) as db:
            return [t for (t,) in db.execute("select client_time from event where episode_id"
                                             " = ? and source = 'input'", (opened["episode_id"],))]

    wait_until(lambda: len(stored_times()) == 3, 10, "the three inputs' events")
    assert all(abs(t - time.time()) < 60 for t in stored_times()), stored_times()


def test_a_message_over_the_size_cap_closes_its_connection_and_the_game_waits(server, player):
    """Engine.IO refuses a message over 64 KB by closing the connection that sent it; the
    session only pauses, and a new connection of its player resumes it. The game is played
    here on a bare WebSocket: python-socketio's client, should a pong of its own be queued
    in the instant the server closes, waits out its 30 s write timeout before it sees the
    close (one time in about 200 here; a pygame player's next key ends that wait)."""
    from simple_websocket import Client, ConnectionClosed

    player.close()
    raw = Client.connect(server["url"].replace("http", "ws") + "/socket.io/?EIO=4&transport=websocket",
                         headers={"Cookie": player.cookie})
    raw.receive(timeout=5)  # the Engine.IO open packet
    raw.send("40")
    raw.receive(timeout=5)
    raw.send("421" + json.dumps(["join", {"token": player.token}]))
    answer = ""
    while not answer.startswith("431"):
        answer = raw.receive(timeout=5)
    assert json.loads(answer[3:])[0]["ok"]
    raw.send("42" + json.dumps(["input", "x" * 100_000]))
    deadline = time.monotonic() + 10
    with pytest.raises(ConnectionClosed):
        while time.monotonic() < deadline:
            raw.receive(timeout=0.5)
    again = Player(server["url"], player.token, cookie=player.cookie).connect()
    try:
        assert again.join()["ok"]
        assert again.send("right") == {"ok": True, "status": "queued"}
        again.wait_ticks(2)
    finally:
        again.close()


@pytest.mark.parametrize("frame", ["42[", '42["input",', "4x", "9", '42{"a":1}', "\x00\xff"])
def test_a_malformed_socket_frame_is_logged_in_one_line(server, player, frame):
    from simple_websocket import Client, ConnectionClosed

    before = server["log"].read_text()
    raw = Client.connect(server["url"].replace("http", "ws") + "/socket.io/?EIO=4&transport=websocket")
    raw.receive(timeout=5)  # the Engine.IO open packet
    raw.send("40")  # connect to the default namespace
    raw.receive(timeout=5)
    raw.send(frame)
    try:
        raw.close()
    except (ConnectionClosed, OSError):
        pass  # the server closed an undecodable connection first (its defined answer)
    assert player.send("right") == {"ok": True, "status": "queued"}
    player.wait_ticks(2)
    added = server["log"].read_text()[len(before):]
    assert "Traceback" not in added, added[-3000:]


def test_previews_on_a_production_server_are_for_researchers_only(server):
    visitor = httpx.Client(base_url=server["url"], timeout=30)
    assert visitor.post(f"/play/{PROBLEM}/session").status_code == 403
    assert visitor.get(f"/play/{PROBLEM}").headers["Location"].startswith("/dashboard/login")
    assert server["http"].post(f"/play/{PROBLEM}/session").status_code == 200


LONE = "\ud83d"
"""Half of an emoji: valid JSON (``"\\ud83d"``), but UTF-8 cannot encode it."""


def send(http: httpx.Client, path: str, body: Any) -> httpx.Response:
    """POST ``body`` as JSON with its lone surrogates escaped (httpx would refuse them)."""
    return http.post(path, content=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})


def test_a_lone_surrogate_anywhere_is_stored_as_a_replacement_character(server, player):
    """A model's reply cut inside an emoji, or a page's made-up message, can carry a lone
    surrogate; SQLite and PostgreSQL refuse a row holding one, and a refused row is a
    hole in its attempt's record. Every text from outside is stored with U+FFFD in its
    place, and the export still reads."""
    http = server["http"]
    run = send(http, "/api/agent/runs", {"agent_kind": "scripted", "model": f"m{LONE}",
                                             "config": {"note": f"x{LONE}"}})
    assert run.status_code == 201, run.text[:300]
    run_id = run.json()["agent_run_id"]
    episode = send(http, f"/api/agent/runs/{run_id}/episodes", {"problem_id": PROBLEM}).json()["episode_id"]
    turn = send(http, f"/api/agent/episodes/{episode}/actions", {"action": "noop", "raw_reply": f"{LONE}<action>noop</action>",
                           "reasoning": f"r{LONE}"})
    assert turn.status_code == 200, turn.text[:300]
    invalid = send(http, f"/api/agent/episodes/{episode}/actions", {"action": f"up{LONE}", "raw_reply": f"up{LONE}"})
    assert invalid.status_code in (200, 400), invalid.text[:300]
    ended = send(http, f"/api/agent/episodes/{episode}/end", {"status": "abandoned", "reason": f"cut{LONE}"})
    assert ended.status_code == 200, ended.text[:300]
    token = http.post(f"/play/{PROBLEM}/session?record=1").json()["token"]
    cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
    recorded = Player(server["url"], token, cookie=cookie).connect()
    try:
        assert recorded.join()["ok"]
        assert recorded.send(f"left{LONE}")["status"] == "malformed"  # stored as a raw input
        assert recorded.send("right") == {"ok": True, "status": "queued"}
        recorded.wait_ticks(3)
    finally:
        recorded.close()
    player.wait_ticks(2)
    log = server["log"].read_text()
    assert "gave up on" not in log and "Traceback" not in log, log[-3000:]
    made, page = exported(http)
    assert made is not None, page[-2000:]
    with closing(sqlite3.connect(server["log"].parent / "gridstudy.db")) as db:
        replies = [r for (r,) in db.execute("select raw_reply from event where episode_id = ?"
                                            " order by seq", (episode,))]
        texts = [t for (t,) in db.execute("select text from rawinput")]
        (status, info), = db.execute("select status, info from episode where id = ?", (episode,))
        (model,), = db.execute("select model from agentrun where id = ?", (run_id,))
    assert (status, json.loads(info)["reason"], model) == ("abandoned", "cut\ufffd", "m\ufffd")
    assert replies[0] == "\ufffd<action>noop</action>", replies
    assert "left\ufffd" in texts, texts
