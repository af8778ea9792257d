"""A restart keeps everybody signed in: the session-signing secret is made once per
installation and kept in the database, so a participant mid-flow and a logged-in
researcher carry on with the cookies they have."""

from __future__ import annotations

import re

import pytest

from records.models import Study
from study_server import auth
from study_server.app import create_app, shutdown
from tests.consent.helpers import make_definition, register_walker_problems

ENTRY = "/study/pilot?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=x9"


def start(db):
    return create_app({"DATABASE_URL": str(db), "TESTING": True})


def carried(old, app, names=("session",)):
    """A test client of ``app`` holding ``old``'s cookies, as a browser would."""
    client = app.test_client()
    for name in names:
        cookie = old.get_cookie(name)
        if cookie is not None:
            client.set_cookie(name, cookie.value)
    return client


def test_a_restart_keeps_participants_and_researchers_signed_in(tmp_path):
    register_walker_problems(["test/p0", "test/p1", "test/p2", "test/tutorial"])
    db = tmp_path / "gridstudy.db"
    first = start(db)
    definition = make_definition()
    store = first.extensions["gridstudy.store"]
    with store.session() as session:
        session.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    auth.create_admin(store.engine, "researcher", "correct horse")
    participant, researcher = first.test_client(), first.test_client()
    participant.get(ENTRY)
    assert "consent" in participant.get("/study/pilot/flow").text
    page = researcher.get("/dashboard/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    researcher.post("/dashboard/login", data={"username": "researcher", "password": "correct horse",
                                              "csrf_token": token})
    assert researcher.get("/dashboard/").status_code == 200
    secret = first.config["SECRET_KEY"]
    shutdown(first)

    second = start(db)
    try:
        assert second.config["SECRET_KEY"] == secret
        participant, researcher = carried(participant, second), carried(researcher, second)
        again = participant.get("/study/pilot/flow")
        assert again.status_code == 200 and "consent" in again.text
        assert researcher.get("/dashboard/").status_code == 200
    finally:
        shutdown(second)


def test_secret_key_from_the_configuration_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "from the environment")
    app = start(tmp_path / "g.db")
    try:
        assert app.config["SECRET_KEY"] == "from the environment"
    finally:
        shutdown(app)


def test_a_restart_resumes_a_live_session_under_the_same_token(tmp_path, test_problems):
    """The page already open rejoins with the token it has: the new process finds the
    session's lease, rebuilds the attempt by replay and continues its seq."""
    from tests.conftest import Player, start_live_server

    db = tmp_path / "gridstudy.db"
    first = start_live_server(db)
    opened = first.new_session(test_problems["planning"].id)
    player = Player(first.url, opened["token"]).connect()
    player.join()
    player.send("right")
    before = player.wait_ticks(3)
    player.close()
    first.stop()

    second = start_live_server(db)
    try:
        again = Player(second.url, opened["token"]).connect()
        reply = again.join()
        assert reply["ok"], reply
        assert reply["state"]["tick"] >= before["tick"]  # nothing applied is lost
        resumed = second.scheduler.get(opened["token"])
        assert resumed.last_input_at is not None  # the monitor does not call them idle
        again.send("left")
        again.wait_ticks(3)
        again.close()
        events = second.events(opened["episode_id"])
        assert [e.seq for e in events] == list(range(len(events)))
        assert [e.action for e in events if e.source == "input"] == ["right", "left"]
    finally:
        second.stop()


def test_an_attempt_whose_environment_changed_across_a_restart_is_ended_not_replayed(
        tmp_path, test_problems):
    """The problem (here its seed; a program's text the same way) is edited while a page is
    open, and the server started again: the attempt was played on the old version, and
    its actions replayed on the new one would make a world its player never saw. So the
    page's join is refused, played by the server or in the browser, and the attempt is
    ended abandoned and excluded with why (a participant's next page gives them another
    problem), its events kept as they were. Before, it was rebuilt on the edited problem
    and went on there, one attempt over two worlds."""
    import dataclasses

    import httpx
    import socketio

    from game_client.api_client import AgentAPIClient
    from records.rebuild import CannotResume
    from records.schema import VERSION_KEY
    from tasks import registry
    from tests.conftest import Player, start_live_server
    from tests.study_server.test_browser_play import row

    problem = test_problems["planning"]
    db = tmp_path / "gridstudy.db"
    first = start_live_server(db)
    opened = first.new_session(problem.id)
    player = Player(first.url, opened["token"]).connect()
    player.join()
    player.send("right")
    player.wait_ticks(3)
    player.close()
    browser = httpx.post(f"{first.url}/play/{problem.id}/session", params={"play": "browser"},
                         timeout=10).json()
    token = first.token()
    agent = AgentAPIClient(first.url, token)
    model = agent.start_episode(agent.create_run("llm", "m", {}), problem.id)["episode_id"]
    assert agent.act(model, {"action": "right"})["applied"]
    first.stop()
    played_on = registry.problem_version(problem)
    registry.add_problem(dataclasses.replace(problem, seed=problem.seed + 1), replace=True)
    now = registry.problem_version(registry.get_problem(problem.id))

    second = start_live_server(db)
    try:
        kept = [(e.seq, e.action, e.frame_hash) for e in second.events(opened["episode_id"])]
        again = Player(second.url, opened["token"]).connect()
        assert again.join() == {"ok": False, "error": "join: unknown or missing session token"}
        again.close()
        page = socketio.Client(reconnection=False)
        page.connect(second.url, transports=["websocket"])
        assert page.call("join-browser", {"token": browser["token"]}, timeout=10) == {
            "ok": False, "error": "join: unknown or missing session token"}
        page.disconnect()
        changed = (f"its environment changed since it began (version {played_on}, now {now}), "
                   f"so it was not resumed")
        why = f"abandoned: {changed}"
        store = second.app.extensions["gridstudy.store"]
        for episode_id in (opened["episode_id"], browser["episode_id"]):
            ended = row(store, episode_id)
            assert (ended.status, ended.included, ended.exclusion_reason) == (
                "abandoned", False, why)
            assert ended.info[VERSION_KEY] == played_on
        assert [(e.seq, e.action, e.frame_hash) for e in second.events(opened["episode_id"])] == kept
        assert second.scheduler.get(opened["token"]) is None
        # a model's attempt through the agent API, its next turn sent to the new server
        with pytest.raises(CannotResume, match=re.escape(f"episode {model}: {changed}")):
            AgentAPIClient(second.url, token).act(model, {"action": "right"})
        ended = row(store, model)
        assert (ended.status, ended.info["resumable"], ended.exclusion_reason) == (
            "error", False, changed)
        assert [e.action for e in second.events(model)] == ["right"]
    finally:
        second.stop()
        registry.add_problem(problem, replace=True)
