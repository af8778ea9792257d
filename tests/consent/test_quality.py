"""Data-quality signals: what the browser may send, the flags made of them, the rules that
read the flags, and the signal route on the real app (bad input stores nothing)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from types import SimpleNamespace

import pytest
from sqlmodel import select

from consent import exclusion, quality
from consent.definition import DefinitionError, ExclusionRules
from records.models import EpisodeRow, Participant, Signal
from study_server.app import shutdown
from tests.consent.helpers import make_definition, study_app
from tests.consent.test_flow import ENTRY, answer, current


def test_a_signal_is_checked_field_by_field():
    row = quality.parse({"kind": "shown", "client_time": 1.7e9, "seconds": 12.5})
    assert row == {"kind": "shown", "client_time": 1.7e9, "seconds": 12.5, "value": {}}
    device = quality.parse({"kind": "device", "value": {
        "user_agent": "x" * 500, "window": [1280, 720], "touch": False, "cookie": "secret"}})
    assert device["value"] == {"user_agent": "x" * 300, "window": [1280, 720], "touch": False}
    for bad, says in [("hidden", "expected an object"), ({"kind": "scroll"}, "kind must be"),
                      ({"kind": "shown", "seconds": -1}, "seconds must be"),
                      ({"kind": "shown", "seconds": True}, "seconds must be"),
                      ({"kind": "blur", "client_time": float("nan")}, "client_time must be"),
                      ({"kind": "device", "value": [1]}, "value must be an object")]:
        with pytest.raises(quality.SignalError, match=says):
            quality.parse(bad, 3)


def test_flags_add_up_what_the_signals_say():
    def signal(kind, seconds=None, **value):
        return SimpleNamespace(kind=kind, seconds=seconds, value=value)

    flags = quality.summarise([
        signal("device", user_agent="Chrome", window=[1280, 720]),
        signal("hidden"), signal("shown", 40.0), signal("hidden"), signal("shown", 5.25),
        signal("hidden", leaving=True),
        signal("blur"), signal("focus", 3.0), signal("idle", 30.0), signal("active", 75.0),
        signal("mashing", keys=14), signal("device", user_agent="Chrome", window=[390, 844]),
    ])
    assert flags == {"hidden_seconds": 45.2, "hidden_count": 2, "focus_losses": 1,
                     "unfocused_seconds": 3.0, "idle_periods": 1, "idle_seconds": 75.0,
                     "mashing": 1, "devices": ["Chrome"], "small_window": True}
    assert quality.summarise([])["hidden_seconds"] == 0.0


def test_periods_never_closed_still_count():
    """Idle when the page was left, and a window that never got focus back: the idle
    periods count what their idle signals said, the focus loss until the last signal."""
    def signal(kind, seconds=None, client_time=None):
        return SimpleNamespace(kind=kind, seconds=seconds, value={}, client_time=client_time)

    flags = quality.summarise([
        signal("idle", 30.7, 100.0), signal("idle", 30.1, 200.0), signal("active", 45.1, 215.0),
        signal("blur", None, 300.0), signal("idle", 30.0, 340.0), signal("device", None, 352.5),
    ])
    assert flags["idle_periods"] == 3 and flags["idle_seconds"] == 105.8
    assert flags["focus_losses"] == 1 and flags["unfocused_seconds"] == 52.5


def test_quality_rules_are_off_unless_the_study_file_sets_them():
    flags = {"hidden_seconds": 90.0, "focus_losses": 4, "mashing": 2}
    assert exclusion.quality_reason(ExclusionRules(), flags) is None
    assert exclusion.quality_reason(ExclusionRules(max_hidden_seconds=60), flags) == (
        "tab hidden for 90 s during play (at most 60 s allowed)")
    assert exclusion.quality_reason(ExclusionRules(max_focus_losses=3), flags) == (
        "window left 4 times during play (at most 3 allowed)")
    assert exclusion.quality_reason(ExclusionRules(max_mashing=1), flags) == (
        "2 bursts of key-mashing (at most 1 allowed)")
    assert exclusion.quality_reason(ExclusionRules(max_hidden_seconds=90), flags) is None
    rules = make_definition(exclusion={"max_hidden_seconds": 30, "max_focus_losses": 0}).exclusion
    assert (rules.max_hidden_seconds, rules.max_focus_losses, rules.max_mashing) == (30.0, 0, None)
    with pytest.raises(DefinitionError, match="exclusion.max_focus_losses: expected an integer"):
        make_definition(exclusion={"max_focus_losses": "few"})


@pytest.fixture
def app(tmp_path):
    app = study_app(tmp_path / "quality.db", exclusion={"max_focus_losses": 1})
    yield app
    shutdown(app)


def send(client, signals, episode_id=None):
    token = re.search(r'data-csrf="([^"]+)"', client.get("/study/pilot/flow").text).group(1)
    form = {"csrf_token": token, "signals": signals if isinstance(signals, str) else json.dumps(signals)}
    if episode_id is not None:
        form["episode_id"] = str(episode_id)
    return client.post("/study/pilot/signals", data=form)


def stored(app):
    with app.extensions["gridstudy.store"].session() as db:
        return db.exec(select(Signal).order_by(Signal.id)).all()


def test_the_signal_route_stores_good_signals_and_refuses_bad_ones_whole(app):
    client = app.test_client()
    assert client.post("/study/pilot/signals", data={}).status_code == 400  # no CSRF token
    client.get(ENTRY)
    reply = send(client, [{"kind": "device", "value": {"window": [1280, 720]}},
                          {"kind": "blur", "client_time": 1.7e9}])
    assert reply.status_code == 200 and reply.json == {"stored": 2}
    for garbage, says in [("not json", "signals not stored"),
                          ([{"kind": "blur"}, {"kind": "nope"}], "signal 1: kind must be"),
                          ({"kind": "blur"}, "expected a list"),
                          ([{"kind": "blur"}] * 51, "at most 50"),
                          ([{"kind": "blur"}], "not this participant's")]:
        reply = send(client, garbage, episode_id=999 if says.startswith("not this") else None)
        assert reply.status_code == 400 and says in reply.json["error"], reply.json
    rows = stored(app)
    assert [(r.kind, r.stage, r.episode_id, r.study_id) for r in rows] == [
        ("device", "consent", None, "pilot"), ("blur", "consent", None, "pilot")]
    assert rows[0].value == {"window": [1280, 720]} and rows[1].client_time == 1.7e9
    # what Python's JSON parser reads and no browser sends: a pair holding Infinity
    # answered 500, and a NaN reached a JSON column PostgreSQL refuses
    reply = send(client, '[{"kind": "device", "value": {"window": [Infinity, 720], '
                         '"screen": [NaN, 1], "pixel_ratio": NaN, "touch": 1e999}}]')
    assert reply.status_code == 200 and reply.json == {"stored": 1}, reply.json
    assert stored(app)[-1].value == {"window": None, "screen": None, "pixel_ratio": None,
                                     "touch": None}


def test_a_participant_stores_no_more_signals_than_a_page_sends(app):
    """A made-up participant posting 50 signals a request as fast as answered stored
    1,800 rows a second: the budget is SIGNALS_AHEAD and SIGNALS_PER_SECOND more for
    every second of the visit, and a request beyond it is refused whole."""
    client = app.test_client()
    client.get(ENTRY)
    replies = [send(client, [{"kind": "blur"}] * 50) for _ in range(6)]
    assert [r.status_code for r in replies] == [200] * 4 + [400] * 2
    # the seconds named are the visit's so far, which a loaded machine lengthens
    assert re.search(r"more signals than a page sends: 250 within \d+ s",
                     replies[4].json["error"])
    assert len(stored(app)) == quality.SIGNALS_AHEAD
    with app.extensions["gridstudy.store"].session() as db:  # a minute into the visit
        participant = db.exec(select(Participant)).one()
        participant.created_at -= timedelta(minutes=1)
    assert send(client, [{"kind": "focus"}]).status_code == 200


def test_signals_sent_all_at_once_keep_to_the_same_budget(tmp_path):
    """Forty requests of 50 signals sent together by one participant to a real server:
    the budget holds (200 stored, the rest refused whole). Before, each request counted
    what was stored before any of the others had stored theirs: 900 rows in a second."""
    import sqlite3
    from contextlib import closing

    import httpx

    from tests.consent.helpers import at_once, serving_demo_study

    with serving_demo_study(tmp_path) as (url, db), \
            httpx.Client(base_url=url, timeout=60, follow_redirects=True) as browser:
        browser.get("/study/demo?PROLIFIC_PID=5f0123456789abcdef012345&STUDY_ID=s1"
                    "&SESSION_ID=x9")
        token = re.search(r'data-csrf="([^"]+)"', browser.get("/study/demo/flow").text).group(1)
        form = {"csrf_token": token, "signals": json.dumps([{"kind": "blur"}] * 50)}
        answers = at_once(40, lambda: browser.post("/study/demo/signals", data=form))
    assert sorted(a.status_code for a in answers) == [200] * 4 + [400] * 36
    assert all("more signals than a page sends" in a.json()["error"]
               for a in answers if a.status_code == 400)
    with closing(sqlite3.connect(db)) as raw:
        assert raw.execute("SELECT count(*) FROM signal").fetchone() == (quality.SIGNALS_AHEAD,)


def test_an_attempt_left_too_often_is_excluded_with_its_flags_kept(app):
    client = app.test_client()
    client.get(ENTRY)
    while current(app, client).stage.name != "task":
        answer(app, client)
    page = current(app, client)
    episode_id = page.context["episode_id"]
    send(client, [{"kind": "blur"}, {"kind": "focus", "seconds": 4},
                  {"kind": "blur"}, {"kind": "focus", "seconds": 2}], episode_id)
    send(client, [{"kind": "blur"}])  # not during the game: not this attempt's
    answer(app, client)
    with app.extensions["gridstudy.store"].session() as db:
        row = db.get(EpisodeRow, episode_id)
        assert row.info["quality"]["focus_losses"] == 2
        assert (row.included, row.exclusion_reason) == (
            False, "window left 2 times during play (at most 1 allowed)")
    while current(app, client).stage is not None:
        answer(app, client)
    with app.extensions["gridstudy.store"].session() as db:
        participant = db.exec(select(Participant)).one()
    assert participant.status == "complete"
    assert participant.data["quality"]["focus_losses"] == 3
    assert participant.data["quality"]["unfocused_seconds"] == 6.0


def test_leaving_on_a_wrong_device_ends_with_its_own_code(tmp_path):
    app = study_app(tmp_path / "device.db", codes={"wrong_device": "DEVICE42"})
    try:
        client = app.test_client()
        client.get(ENTRY)
        token = re.search(r'name="csrf_token" value="([^"]+)"',
                          client.get("/study/pilot/flow").text).group(1)
        assert client.post("/study/pilot/leave", data={"csrf_token": token,
                                                       "reason": "bored"}).status_code == 400
        client.post("/study/pilot/leave", data={"csrf_token": token, "reason": "wrong-device"})
        page = client.get("/study/pilot/flow").text
        assert "DEVICE42" in page and "needs a computer with a keyboard" in page
        with app.extensions["gridstudy.store"].session() as db:
            participant = db.exec(select(Participant)).one()
        assert (participant.status, participant.code) == ("wrong-device", "DEVICE42")
    finally:
        shutdown(app)
