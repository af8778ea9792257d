"""The dashboard login against the attacks a public server meets: a password flood is
rate-limited per address and per user, an unknown user costs the same hash as a real one,
logout ends the session on the server too, and the cookie is HttpOnly and SameSite=Lax."""

from __future__ import annotations

import re
import time

import pytest

from study_server import auth
from study_server.app import create_app, shutdown
from tests.study_server.people import csrf


@pytest.fixture
def app(tmp_path):
    app = create_app({"DATABASE_URL": str(tmp_path / "g.db"), "TESTING": True,
                      "LOGIN_FREE_PER_USER": 4, "LOGIN_FREE_PER_ADDRESS": 6,
                      "LOGIN_FIRST_DELAY": 0.4})
    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    yield app
    shutdown(app)


def attempt(client, username, password, address="10.0.0.1"):
    return client.post("/dashboard/login", environ_base={"REMOTE_ADDR": address},
                       data={"username": username, "password": password,
                             "csrf_token": csrf(client, "/dashboard/login")})


def test_a_guesser_is_slowed_down_and_never_locks_the_researcher_out(app):
    """Four free failures per (address, user name), then delays that double; a refused
    attempt is answered 429 with Retry-After; the right password from another address is
    let in meanwhile, and a success starts its pair afresh."""
    client = app.test_client()
    answers = [attempt(client, "researcher", "wrong").status_code for _ in range(5)]
    assert answers == [200, 200, 200, 200, 429]
    refused = attempt(client, "researcher", "wrong")
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert "try again in 1 s" in refused.text
    assert attempt(client, "researcher", "correct horse", "10.0.0.2").status_code == 302
    time.sleep(0.45)  # the first delay passes: one more try, then twice as long
    assert attempt(client, "researcher", "wrong").status_code == 200
    assert attempt(client, "researcher", "wrong").status_code == 429
    time.sleep(0.45)
    assert attempt(client, "researcher", "wrong").status_code == 429  # 0.8 s now
    time.sleep(0.4)
    assert attempt(client, "researcher", "correct horse").status_code == 302
    assert attempt(client, "researcher", "wrong").status_code == 200  # afresh


def test_many_user_names_from_one_address_are_slowed_down_at_that_address_only(app):
    client = app.test_client()
    answers = [attempt(client, f"guess{i}", "wrong", "10.0.0.3").status_code for i in range(7)]
    assert answers == [200] * 6 + [429]
    assert attempt(client, "other", "x", "10.0.0.4").status_code == 200


def test_the_count_is_shared_by_every_process_on_the_database(app, tmp_path):
    """A second server on the same database (another worker) sees the same failures."""
    other = create_app({"DATABASE_URL": app.config["DATABASE_URL"], "TESTING": True,
                        "LOGIN_FREE_PER_USER": 4, "LOGIN_FIRST_DELAY": 30})
    try:
        first, second = app.test_client(), other.test_client()
        for _ in range(4):
            assert attempt(first, "researcher", "wrong").status_code == 200
        assert attempt(second, "researcher", "wrong").status_code == 429
    finally:
        shutdown(other)


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


def test_a_burst_of_guesses_sent_at_once_gets_only_the_free_ones(tmp_path):
    """Forty wrong passwords sent together from one address to a real server: each
    attempt is counted before its password is checked, so the burst gets the five free
    failures and 429 for the rest, whichever worker or thread answers. Before, every
    attempt of the burst was checked before any was counted: forty scrypt hashes (70 ms
    of a core each), forty failures counted, where the promise is five; the right
    password from another address still gets in."""
    import sqlite3
    from contextlib import closing

    import httpx

    from records.store import Store
    from tests.conftest import start_serve
    from tests.consent.helpers import at_once

    db = tmp_path / "g.db"
    with Store(str(db)) as store:
        auth.create_admin(store.engine, "researcher", "correct horse")
    # the first wait after the free failures outlasts the burst, however slow the machine
    process, url = start_serve(db, env={"GRIDSTUDY_LOGIN_FIRST_DELAY": "600"})
    try:
        guessers = [httpx.Client(base_url=url, timeout=60) for _ in range(40)]
        ready = [(client, {"username": "researcher", "password": f"guess {n}",
                           "csrf_token": csrf(client, "/dashboard/login")})
                 for n, client in enumerate(guessers)]  # each with its form's token

        def guess() -> int:
            client, form = ready.pop()
            return client.post("/dashboard/login", data=form).status_code

        answers = at_once(40, guess)
        for client in guessers:
            client.close()
        elsewhere = httpx.HTTPTransport(local_address="127.0.0.2")  # another address
        with httpx.Client(base_url=url, timeout=60, transport=elsewhere) as client:
            assert client.post("/dashboard/login", data={
                "username": "researcher", "password": "correct horse",
                "csrf_token": csrf(client, "/dashboard/login")}).status_code == 302
    finally:
        process.terminate()
        process.wait(60)
    assert sorted(answers) == [200] * 5 + [429] * 35
    with closing(sqlite3.connect(db)) as raw:
        counted = raw.execute("SELECT key, count(*) FROM loginfailure GROUP BY key").fetchall()
    assert sorted(count for _, count in counted) == [5, 5]



def test_a_server_told_in_words_that_no_proxy_is_in_front_trusts_no_forwarded_address(tmp_path):
    """``GRIDSTUDY_BEHIND_PROXY=no``, as an operator writes it. Before, any text was a true
    setting: the server took each request's X-Forwarded-For as its address, so a guesser
    naming a new address with every guess was never slowed (and one naming 127.0.0.1 is
    the server's own machine, which the per-address limits on arrivals and connections
    leave alone)."""
    import httpx

    from records.store import Store
    from tests.conftest import start_serve

    db = tmp_path / "g.db"
    with Store(str(db)) as store:
        auth.create_admin(store.engine, "researcher", "correct horse")
    process, url = start_serve(db, env={"GRIDSTUDY_BEHIND_PROXY": "no",
                                        "GRIDSTUDY_LOGIN_FIRST_DELAY": "600"})
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            answers = [client.post("/dashboard/login", headers={"X-Forwarded-For": f"203.0.113.{n}"},
                                   data={"username": "researcher", "password": f"guess {n}",
                                         "csrf_token": csrf(client, "/dashboard/login")}).status_code
                       for n in range(1, 7)]
    finally:
        process.terminate()
        process.wait(60)
    assert answers == [200] * 5 + [429]
