"""Data-quality signals and the device check, from real browser actions in Chromium: the
device reported on arrival, the window's focus lost to another tab and regained, the
tab hidden as the page is left (headless Chromium hides no tab that stays open, so a
tab switch's hidden and shown are checked through the page being left and the flags'
unit tests), key-mashing, and a phone-sized window refused politely with its own ending
code."""

from __future__ import annotations

from sqlmodel import select

from records.models import Participant, Signal
from tests.e2e.screenshots import shoot
from tests.e2e.test_study_flow import enter, start, walk_to_first_task


def signals(live, **where):
    with live.store.session() as db:
        query = select(Signal).order_by(Signal.id)
        for name, value in where.items():
            query = query.where(getattr(Signal, name) == value)
        return db.exec(query).all()


def wait_for_signal(page, live, kind, **where):
    for _ in range(50):
        found = [s for s in signals(live, **where) if s.kind == kind]
        if found:
            return found
        page.wait_for_timeout(100)
    raise AssertionError(f"no {kind} signal; stored: {[s.kind for s in signals(live)]}")


def test_focus_visibility_and_mashing_are_recorded_from_real_browser_actions(
        make_live_server, page):
    live = start(make_live_server)
    page.set_viewport_size({"width": 1280, "height": 720})
    walk_to_first_task(page, live, "signals-1")
    episode_id = int(page.get_attribute("body", "data-episode"))
    [device] = wait_for_signal(page, live, "device", episode_id=episode_id)
    assert device.stage == "task" and device.value["window"] == [1280, 720]
    assert "Chrome" in device.value["user_agent"] and device.value["touch"] is False
    # Another tab takes the focus, then the participant comes back.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setFocusEmulationEnabled", {"enabled": False})
    other = page.context.new_page()
    other.bring_to_front()
    wait_for_signal(page, live, "blur", episode_id=episode_id)
    page.wait_for_timeout(600)
    page.bring_to_front()
    [back] = wait_for_signal(page, live, "focus", episode_id=episode_id)
    assert 0.4 <= back.seconds < 10
    # Twelve keys within a second.
    page.locator(".gs-grid").focus()
    for _ in range(12):
        page.keyboard.press("ArrowLeft")
    [mashing] = wait_for_signal(page, live, "mashing", episode_id=episode_id)
    assert mashing.value["keys"] >= 10
    # Leaving the page hides it: the signal still arrives (a beacon), marked as leaving,
    # which the flags do not count as the tab hidden.
    page.goto("about:blank")
    [hidden] = wait_for_signal(page, live, "hidden", episode_id=episode_id)
    assert hidden.value == {"leaving": True}


def test_a_phone_sized_window_is_refused_politely_and_can_end_with_its_code(
        make_live_server, page, tmp_path):
    live = start(make_live_server)
    page.set_viewport_size({"width": 390, "height": 844})
    enter(page, live, "phone-1")
    notice = page.locator("[data-device-check]")
    notice.wait_for()
    assert "Please use a computer with a keyboard" in notice.inner_text()
    assert "390 by 844" in notice.inner_text()
    assert page.locator("[data-flow]").is_hidden()
    shoot(page, tmp_path, "participant-9-phone")
    [device] = wait_for_signal(page, live, "device")
    assert device.value["window"] == [390, 844]
    # A larger window brings the page back, where it was.
    page.set_viewport_size({"width": 1280, "height": 720})
    page.get_by_role("button", name="I agree to take part").wait_for()
    assert notice.is_hidden()
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("button", name="End the study on this device").click()
    assert page.locator("[data-code]").inner_text() == "SCREEN99"
    assert "needs a computer with a keyboard" in page.inner_text("body")
    with live.store.session() as db:
        participant = db.exec(select(Participant)).one()
        assert participant.status == "wrong-device"
        assert participant.data["ended_because"].startswith("a window too small")


def test_a_browser_without_javascript_is_told_before_it_agrees_and_can_end_with_its_code(
        make_live_server, browser, tmp_path):
    """A participant whose browser runs no script (turned off, or a script blocker) would
    agree, then wait before a game saying "connecting" for ever. The study's first page
    says what is wrong and how to go on, with the way out a device that cannot play has.
    Before, nothing was said."""
    live = start(make_live_server)
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        enter(page, live, "noscript-1")
        notice = page.locator("[data-no-script]")
        assert "Please turn JavaScript on" in notice.inner_text()
        assert page.get_by_role("button", name="I agree to take part").is_visible()
        assert page.locator("[data-time-left]").inner_text() in ("60:00", "59:59", "59:58")
        shoot(page, tmp_path, "participant-9-no-javascript")
        page.get_by_role("button", name="End the study on this device").click()
        assert page.locator("[data-code]").inner_text() == "SCREEN99"
        assert "JavaScript turned on" in page.inner_text("body")
        with live.store.session() as db:
            participant = db.exec(select(Participant)).one()
            assert (participant.status, participant.data["ended_because"]) == (
                "wrong-device", "no JavaScript")
    finally:
        context.close()
    with_script = browser.new_page()
    try:
        enter(with_script, live, "script-1")
        with_script.get_by_role("button", name="I agree to take part").wait_for()
        assert with_script.locator("[data-no-script]").count() == 0 or \
            with_script.locator("[data-no-script]").is_hidden()
    finally:
        with_script.close()
