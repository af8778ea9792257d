"""A restart keeps everybody signed in: the session-signing secret is made once per
installation and kept in the database, so a participant mid-flow and a logged-in
researcher carry on with the cookies they have."""

from __future__ import annotations

import re

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
