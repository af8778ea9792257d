"""One engine: the archive a participant's browser runs (``study_server.engine``), run
under Pyodide in Node, plays every built-in problem to the same frames as the server's
engine (CPython), through the interaction phase, a reset, the test and an answer.

The actions are drawn here at random (seeded) from what each phase allows; CPython's
hashes are the expected ones (:func:`tasks.worldtest.verify.frame_hashes`), and Node
replays the same actions through ``study_server/static/gridstudy/engine.mjs``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.browser_engine import programs, some_play
from study_server.engine import engine_archive
from tasks import registry
from tasks.worldtest.verify import first_difference, frame_hashes

ROOT = Path(__file__).resolve().parents[2]


def built_in_problems() -> list[str]:
    folders = set(programs())
    return sorted(spec.id for spec in registry.list_problems()
                  if spec.id.split("/")[0] in folders or spec.id.startswith("dagmap/"))


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("engine") / "engine.zip"
    path.write_bytes(engine_archive())
    return path


def replay_in_node(archive: Path, jobs: list[dict]) -> dict:
    done = subprocess.run(["node", str(ROOT / "bench" / "engine_node.mjs"), str(archive)],
                          input=json.dumps(jobs), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_every_built_in_problem_plays_to_the_same_frames_in_the_browser_engine(archive):
    problems = built_in_problems()
    assert len(problems) >= 90
    jobs = [{"problem": pid, "actions": some_play(pid)} for pid in problems]
    expected = {job["problem"]: frame_hashes(registry.get_problem(job["problem"]),
                                             job["actions"]) for job in jobs}
    answer = replay_in_node(archive, jobs)
    assert [r["problem"] for r in answer["results"]] == problems
    parted = {r["problem"]: first_difference(expected[r["problem"]], r["hashes"])
              for r in answer["results"]}
    assert {pid: at for pid, at in parted.items() if at is not None} == {}
    assert sum(len(job["actions"]) for job in jobs) > 90 * 40
    # an answer was reached in many attempts, so the challenges' own logic was compared
    assert sum(len(expected[pid]) < 72 for pid in problems) > 20


def test_a_changed_action_gives_a_different_frame_and_is_found(archive):
    """The comparison can fail: one click moved shows where the runs part."""
    actions = ["noop", "click 2 6", "noop", "noop", "noop"]
    tampered = ["noop", "click 5 6", "noop", "noop", "noop"]
    answer = replay_in_node(archive, [{"problem": "ant_trail/planning", "actions": tampered}])
    expected = frame_hashes(registry.get_problem("ant_trail/planning"), actions)
    assert first_difference(expected, answer["results"][0]["hashes"]) == 2
