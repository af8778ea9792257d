"""The registered task-DAG environments and explore problems."""

from __future__ import annotations

from tasks import registry
from tasks.dagmap import PRESETS, generate
from tasks.dagmap.oracle import solve
from tasks.worldtest import TEST, Episode


def test_every_preset_has_three_seeds_in_both_namings():
    ids = {spec.id for spec in registry.list_envs() if spec.id.startswith("dagmap/")}
    expected = {
        f"dagmap/{p}{n}-s{s}" for p in PRESETS for n in ("", "-semantic") for s in (0, 1, 2)
    }
    assert ids == expected


def test_one_explore_problem_per_preset_and_naming():
    problems = {spec.id: spec for spec in registry.list_problems(challenge="explore")}
    assert set(problems) >= {f"dagmap/{p}" for p in PRESETS} | {f"dagmap/{p}-semantic" for p in PRESETS}
    problem = registry.get_problem("dagmap/high-n8")
    assert (problem.env_id, problem.seed, problem.difficulty) == ("dagmap/high-n8-s0", 0, "high")


def test_a_registered_env_plays_the_map_of_its_seed():
    env = registry.make("dagmap/low-n4-s2")
    env.reset(123)
    assert env.map.nodes == generate("low-n4", 2).nodes
    semantic = registry.make("dagmap/low-n4-semantic-s2")
    semantic.reset(0)
    assert semantic.map.cells == env.map.cells and semantic.map.goal.startswith("Finished ")


def test_an_explore_episode_starts_in_the_test_phase_and_scores_success():
    problem = registry.get_problem("dagmap/medium-n6")
    episode = Episode(problem)
    assert episode.phase == TEST
    dagmap = generate("medium-n6", 0)
    steps = [episode.apply(move) for move in solve(dagmap)]
    assert (steps[-1].done, steps[-1].score) == (True, 1.0)
    assert [s.done for s in steps[:-1]] == [False] * (len(steps) - 1)
    outcome = episode.outcome()
    assert (outcome["steps"], outcome["test_success"]) == (len(steps), True)
    assert set(outcome["test_achieved"]) == set(dagmap.nodes) and dagmap.goal in outcome["test_achieved"]


def test_an_episode_replays_to_the_same_frames():
    problem = registry.get_problem("dagmap/high-n6-semantic")
    actions = ["noop", "up", "left", "noop", "down", "right", "right", "down"]
    first = Episode.replay(problem, actions)
    second = Episode.replay(problem, actions)
    assert first.observation.frame == second.observation.frame
    assert first.observation.text == second.observation.text
