"""The live monitor at a study's size: it counts everyone playing and lists at most
``MAX_PLAYING``, those that need a researcher's look first."""

from __future__ import annotations

import re

from study_server import monitor
from study_server.app import create_app, shutdown


def row(episode_id: int, *, connected: bool = True, late: bool = False,
        idle_seconds: int | None = 3) -> dict:
    idle = idle_seconds is None or idle_seconds > monitor.IDLE_AFTER
    return {"episode_id": episode_id, "study_id": "demo", "participant_id": episode_id,
            "worker": "", "problem_id": "lamp_grid/planning", "phase": "interaction",
            "tick": 40, "connected": connected, "idle_seconds": idle_seconds, "idle": idle,
            "late_ms": 80 if late else 2, "late_mean_ms": 1, "late": late,
            "stage": "task", "stage_seconds": 60}


def test_every_row_is_listed_up_to_the_limit_then_those_that_need_a_look_first():
    few = [row(1), row(2, connected=False)]
    assert monitor.shown(few, most=2) == few
    playing = [row(1), row(2, idle_seconds=45), row(3, late=True), row(4),
               row(5, connected=False), row(6, idle_seconds=90), row(7)]
    assert [r["episode_id"] for r in monitor.shown(playing, most=3)] == [3, 5, 6]
    assert [r["episode_id"] for r in monitor.shown(playing, most=5)] == [1, 2, 3, 5, 6]


def test_four_hundred_playing_are_counted_and_a_hundred_listed(tmp_path):
    app = create_app({"DATABASE_URL": str(tmp_path / "m.db"), "TESTING": True})
    try:
        playing = [row(n) for n in range(1, 401)]
        playing[9] = row(10, connected=False)
        playing[199] = row(200, late=True)
        playing[349] = row(350, idle_seconds=None)
        data = {"storage": None, "at": 0.0, "at_text": "12:00:00 UTC", "on_pages": [],
                "finished": [], "previews": 0, "models": [], "workers": 1,
                **monitor.playing_view(playing[::-1])}
        with app.test_request_context("/dashboard/"):
            html = monitor.render(app, data)
    finally:
        shutdown(app)
    listed = [int(n) for n in re.findall(r'data-live-episode="(\d+)"', html)]
    assert len(listed) == monitor.MAX_PLAYING == 100
    assert {10, 200, 350} <= set(listed) and listed == sorted(listed)
    assert "400 playing: 1 not connected, 1 late, 1 idle." in html
    assert "Listed: 100 of them, those that most need a look first" in html
    assert len(html) < 80_000  # 250 KB when every row was listed
