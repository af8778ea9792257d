"""A study of task-DAG maps (``examples/explore-study.yaml``'s kind): its practice page
tells the map's own rules and the keys a map reacts to, never the Reset and Go-to-test
bullets of the other challenges; the example file itself is a valid study."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from study_server.app import shutdown
from study_server.commands.study import study
from tests.consent.helpers import study_app
from tests.consent.test_flow import answer, current

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "explore-study.yaml"
MAPS = ["dagmap/low-n6", "dagmap/medium-n6", "dagmap/high-n6"]


def test_the_explore_practice_shows_the_maps_rules(tmp_path):
    app = study_app(tmp_path / "maps.db", problems=MAPS,
                    tutorials={"explore": "dagmap/low-n4"})
    try:
        client = app.test_client()
        client.get("/study/pilot?PROLIFIC_PID=p-map&STUDY_ID=s&SESSION_ID=x")
        while current(app, client).stage.name != "tutorial":
            answer(app, client)
        page = client.get("/study/pilot/flow").text
    finally:
        shutdown(app)
    assert "Practice: exploration" in page
    assert "You are the blue square" in page and "<li>Arrow keys move.</li>" in page
    assert "Go to test" not in page.split("<ul>")[1].split("</ul>")[0]


def test_the_explore_example_is_a_valid_study(tmp_path):
    result = CliRunner().invoke(study, ["create", str(EXAMPLE), "--db", str(tmp_path / "e.db")])
    assert result.exit_code == 0, result.output
    assert "study 'explore-demo' stored: 3 problems" in result.output
