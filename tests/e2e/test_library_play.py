"""End to end: five library programs modelled on published examples (gravity, paint,
sokoban, particles, magnets) play in the browser preview: keys and a click reach the
server as inputs, ticks advance, the canvas is redrawn, and the page logs no error."""

from __future__ import annotations

import pytest

from tasks import registry
from tasks.core import frame_hash
from tests.e2e.test_play import GAME, act, inputs, open_problem, press, tick_of

LIBRARY_PROBLEMS = ("tilt_box/mfp", "paint_cycle/mfp", "crate_push/mfp", "spark_jar/mfp",
                    "magnet_rail/mfp")
"""Each changes its frame under ``left``, ``up`` and a click on the centre cell."""


def grid_image(page) -> str:
    return page.eval_on_selector("canvas[data-gs=grid]", "canvas => canvas.toDataURL()")


def click_cell(page, x: int, y: int, width: int) -> None:
    grid = page.locator("canvas[data-gs=grid]")
    cell = grid.bounding_box()["width"] / width
    grid.click(position={"x": cell * x + cell / 2, "y": cell * y + cell / 2})


def _is_error(message) -> bool:
    """A console error, except the browser's own request for a favicon the app has not."""
    return message.type == "error" and not message.location.get("url", "").endswith(
        "/favicon.ico")


@pytest.mark.parametrize("problem_id", LIBRARY_PROBLEMS)
def test_a_library_program_plays_in_the_browser(problem_id, page, make_live_server):
    live = make_live_server()
    errors: list[str] = []
    page.on("console", lambda message: _is_error(message) and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    problem = registry.get_problem(problem_id)
    width, height = registry.make(problem.env_id).size
    episode_id = open_problem(page, live, problem_id)
    first_tick, first_image = tick_of(page), grid_image(page)
    press(page, "ArrowLeft")
    press(page, "ArrowUp")
    act(page, lambda: click_cell(page, width // 2, height // 2, width))
    act(page, lambda: None, ticks=2)
    events = live.events(episode_id)
    assert inputs(events) == ["left", "up", f"click {width // 2} {height // 2}"]
    assert all(e.applied and e.error is None for e in events)
    assert tick_of(page) >= first_tick + 8
    assert page.get_attribute(GAME, "data-phase") == "interaction"
    start = frame_hash(registry.make(problem.env_id).reset(problem.seed).frame)
    assert events[-1].frame_hash != start
    assert grid_image(page) != first_image
    assert errors == []
