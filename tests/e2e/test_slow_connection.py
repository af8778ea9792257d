"""A study's ``max_round_trip_ms``, in Chromium on the real server through a network
that delays every packet (``bench.latency.DelayProxy``, both ways): a participant whose
round trip stays above the limit is told so at their first game and leaves with their
own code and a "return" decision; one under it plays on."""

from __future__ import annotations

from sqlmodel import select

from bench.latency import delayed
from records.models import Participant
from tests.e2e.test_endings import answer, open_study

LIMIT_MS = 150


def reach_the_practice_game(page, live, url, pid):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{url}/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x-{pid}")
    page.get_by_role("button", name="I agree to take part").click()
    answer(page, live, pid, "Continue")
    page.get_by_role("button", name="Start the practice").click()
    page.locator(".gs-game").wait_for()


def status_of(live, pid):
    with live.store.session() as db:
        return db.exec(select(Participant).where(Participant.external_id == pid)).one()


def test_a_participant_over_the_limit_leaves_with_their_code_and_one_under_plays_on(
        make_live_server, page, tmp_path):
    live = open_study(make_live_server, max_round_trip_ms=LIMIT_MS,
                      codes={"slow_connection": "END-SLOW"})
    port = int(live.url.rsplit(":", 1)[1])
    with delayed(port, 2 * LIMIT_MS) as far:
        reach_the_practice_game(page, live, far.url, "p-far")
        page.locator("[data-code]").wait_for(timeout=30_000)
        assert page.inner_text("[data-code]") == "END-SLOW"
        assert "connection to the study is too slow" in page.inner_text("body")
        page.screenshot(path=str(tmp_path / "slow-connection.png"))
    far_row = status_of(live, "p-far")
    assert (far_row.status, far_row.code) == ("slow-connection", "END-SLOW")

    from study_server.payments import payment_rows
    with live.store.session() as db:
        decided = {row.prolific_pid: row for row in payment_rows(db, "pilot")[1]}
    assert decided["p-far"].decision == "return"

    near = page.context.new_page()
    with delayed(port, LIMIT_MS / 3) as close:
        reach_the_practice_game(near, live, close.url, "p-near")
        near.wait_for_function("Number(document.querySelector('.gs-game').dataset.tick) > 24")
    assert status_of(live, "p-near").status == "active"
