"""One engine: the archive a participant's browser runs (``study_server.engine``), run
under Pyodide in Node, plays every built-in problem to the same frames as the server's
engine (CPython), through the interaction phase, a reset, the test and an answer.

The actions are drawn here at random (seeded) from what each phase allows; CPython's
hashes are the expected ones (:func:`tasks.worldtest.verify.frame_hashes`), and Node
replays the same actions through ``study_server/static/gridstudy/engine.mjs``.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from game_client.agents import random_env_action
from study_server.engine import engine_archive
from tasks import registry
from tasks.core import INDEXED_VERBS
from tasks.worldtest.episode import DONE, INTERACTION, Episode
from tasks.worldtest.verify import first_difference, frame_hashes

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "tasks" / "library"


def built_in_problems() -> list[str]:
    folders = {path.name for path in LIBRARY.iterdir() if (path / "program.sexp").is_file()}
    return sorted(spec.id for spec in registry.list_problems()
                  if spec.id.split("/")[0] in folders or spec.id.startswith("dagmap/"))


def a_test_action(rng: random.Random, episode: Episode) -> str:
    """One action the test phase allows now, at random (never ``quit``)."""
    verbs = [verb for verb in episode.allowed_verbs() if verb != "quit"]
    verb = rng.choice(verbs)
    if verb == "click":
        return f"click {rng.randrange(episode.size[0])} {rng.randrange(episode.size[1])}"
    if verb in INDEXED_VERBS:
        return f"{verb}_{rng.randrange(episode.test.choice_count(verb))}"
    return verb


def some_play(problem_id: str, seed: int = 7) -> list[str]:
    """A random attempt: some interaction with one reset, then the test to its end (or
    40 actions into it)."""
    rng = random.Random(f"{seed}/{problem_id}")
    episode = Episode(registry.get_problem(problem_id))
    actions: list[str] = []

    def apply(action: str) -> None:
        episode.apply(action)
        actions.append(action)

    if episode.phase == INTERACTION:
        for index in range(30):
            allowed = [v for v in episode.allowed_verbs() if v not in ("reset", "go-to-test")]
            apply("reset" if index == 12 else random_env_action(rng, allowed, episode.size))
        apply("go-to-test")
    for _ in range(40):
        if episode.phase == DONE:
            break
        apply(a_test_action(rng, episode))
    return actions


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
