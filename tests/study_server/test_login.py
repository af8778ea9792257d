"""The dashboard login against the attacks a public server meets: a password flood is
rate-limited per address and per user, an unknown user costs the same hash as a real one,
logout ends the session on the server too, and the cookie is HttpOnly and SameSite=Lax."""

from __future__ import annotations

import re

import pytest

from study_server import auth
from study_server.app import create_app, shutdown


@pytest.fixture
def app(tmp_path):
    app = create_app({"DATABASE_URL": str(tmp_path / "g.db"), "TESTING": True,
                      "LOGIN_LIMIT_ADDRESS": "6 per minute", "LOGIN_LIMIT_USER": "4 per minute"})
    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    yield app
    shutdown(app)


def attempt(client, username, password, address="10.0.0.1"):
    page = client.get("/dashboard/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    return client.post("/dashboard/login", environ_base={"REMOTE_ADDR": address},
                       data={"username": username, "password": password, "csrf_token": token})


def test_a_password_flood_is_limited_per_user_and_per_address(app):
    client = app.test_client()
    answers = [attempt(client, "researcher", "wrong").status_code for _ in range(5)]
    assert answers == [200, 200, 200, 200, 429]
    assert attempt(client, "researcher", "correct horse", "10.0.0.2").status_code == 429  # the user is limited
    answers = [attempt(client, f"guess{i}", "wrong", "10.0.0.3").status_code for i in range(7)]
    assert answers == [200] * 6 + [429]  # and the address
    assert attempt(client, "other", "x", "10.0.0.4").status_code == 200


def test_an_unknown_user_costs_the_same_hash_as_a_real_one(app, monkeypatch):
    engine = app.extensions["gridstudy.store"].engine
    checked = []
    real_check = auth.check_password_hash

    def observed(stored, password):
        checked.append(stored.split("$")[0])
        return real_check(stored, password)

    monkeypatch.setattr(auth, "check_password_hash", observed)
    assert not auth.verify(engine, "researcher", "wrong")
    assert not auth.verify(engine, "nobody", "wrong")
    assert len(checked) == 2 and checked[0] == checked[1]  # the same method, salt rounds and all
    assert checked[0].startswith("scrypt")


def test_logout_ends_the_session_on_the_server_and_the_cookie_is_strict(app):
    client = app.test_client()
    response = attempt(client, "researcher", "correct horse")
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    saved = client.get_cookie("session").value
    assert client.get("/dashboard/").status_code == 200
    page = client.get("/dashboard/").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    client.post("/dashboard/logout", data={"csrf_token": token})
    thief = app.test_client()
    thief.set_cookie("session", saved)
    assert thief.get("/dashboard/").status_code == 302  # back to the login page
