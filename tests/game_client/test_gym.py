"""Every problem as a Gymnasium environment: registration, Gymnasium's own checker on all
of them, same-seed determinism, the spaces, the WorldTest phases as one episode, and the
record written through the same rows as people's and models' attempts."""

from __future__ import annotations

import os
import re
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from sqlmodel import select

import game_client.gym
from analysis.load import load
from analysis.readings import base_agent
from game_client.gym import RecordEpisodes, gym_id
from game_client.gym.spaces import PALETTE, ActionTable
from records.models import AgentRun, EpisodeRow, Event
from records.store import Store
from tasks import registry

PROBLEMS = [spec.id for spec in registry.list_problems()]


def test_every_problem_is_registered():
    registered = {i for i in gymnasium.registry if i.startswith("gridstudy/")}
    assert registered == {gym_id(p) for p in PROBLEMS}
    assert any(p.startswith("dagmap/") for p in PROBLEMS)  # task-DAG maps too


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_check_env_and_same_seed_rollouts(problem_id):
    env = gymnasium.make(gym_id(problem_id), render_mode="rgb_array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning of the checker fails the test
        check_env(env.unwrapped)
    assert rollout(gym_id(problem_id), seed=3) == rollout(gym_id(problem_id), seed=3)


def rollout(env_id: str, seed: int, steps: int = 60) -> list[bytes]:
    """A random agent's observations (allowed actions only), seeded by ``seed``."""
    env = gymnasium.make(env_id)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    seen = [obs.tobytes()]
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(
            env.action_space.sample(mask=info["action_mask"]))
        seen.append(obs.tobytes())
        if terminated or truncated:
            break
    return seen


def test_make_with_the_module_and_no_import():
    env = gymnasium.make("game_client.gym:gridstudy/lamp_grid-planning-v0")
    assert env.unwrapped.problem.id == "lamp_grid/planning"


def test_the_spaces_of_a_problem():
    env = gymnasium.make("gridstudy/lamp_grid-mfp-v0").unwrapped
    width, height = env.episode.size
    options = len(env.problem.params["options"])
    assert env.action_space.n == 5 + width * height + 7 + options
    assert env.observation_space.shape == (height, width)
    assert env.observation_space.high.max() == len(PALETTE) - 1
    table = env.table
    assert [table.text(i) for i in (0, 4, 5, 5 + width + 2)] == ["noop", "right", "click 0 0",
                                                                   "click 2 1"]
    assert table.text(len(table) - 1) == f"choose_option_{options - 1}"
    with pytest.raises(ValueError, match="outside this problem's 0..") as error:
        table.text(len(table))
    assert str(len(table) - 1) in str(error.value)


def test_change_detection_has_a_frame_per_test_step():
    problem = registry.get_problem("lamp_grid/cd")
    table = ActionTable.for_problem(problem, (5, 5))
    assert table.frames == int(problem.params["horizon"]) + 1
    assert table.text(len(table) - 1) == f"choose_frame_{table.frames - 1}"


def index_of(env, text: str) -> int:
    return next(i for i in range(env.action_space.n) if env.unwrapped.table.text(i) == text)


def test_interaction_then_test_then_the_score_as_reward():
    env = gymnasium.make("gridstudy/lamp_grid-planning-v0")
    obs, info = env.reset(seed=0)
    assert (info["phase"], info["tick"], "question" in info) == ("interaction", 0, False)
    obs, reward, terminated, truncated, info = env.step(index_of(env, "submit"))
    assert info["invalid"] is not None and info["tick"] == 0  # not allowed: nothing happened
    assert info["action_mask"][index_of(env, "go-to-test")] == 1
    obs, reward, terminated, truncated, info = env.step(index_of(env, "go-to-test"))
    assert (info["phase"], info["tick"], info["invalid"]) == ("test", 1, None)
    assert info["question"]["goal_cells"] == env.unwrapped.problem.params["goal_cells"]
    assert info["action_mask"][index_of(env, "go-to-test")] == 0
    for text in env.unwrapped.problem.params["plan"]:
        obs, reward, terminated, truncated, info = env.step(index_of(env, text))
        if terminated:
            break
    assert (reward, terminated, truncated, info["status"]) == (1.0, True, False, "done")
    assert not info["action_mask"].any()
    with pytest.raises(RuntimeError, match=r"the episode is over \(done\); call reset\(\)"):
        env.unwrapped.step(0)


@pytest.mark.parametrize("steps", [-1, "10", 2.5, True, None])
def test_interaction_steps_no_episode_can_use_are_refused_in_words(steps):
    with pytest.raises(ValueError, match=r"interaction_steps must be a whole number of 0 or "
                                         rf"more, not {re.escape(repr(steps))}"):
        gymnasium.make("gridstudy/dagmap-high-n4-v0", interaction_steps=steps)


def test_the_time_limit_truncates():
    env = gymnasium.make("gridstudy/dagmap-high-n4-v0", interaction_steps=0)
    limit = env.unwrapped.time_limit
    env.reset(seed=0)
    invalid = index_of(env, "go-to-test")  # no interaction phase: never allowed
    for turn in range(1, limit + 1):
        _, reward, terminated, truncated, info = env.step(invalid)
        assert terminated is False and truncated is (turn == limit)
    assert (reward, info["status"]) == (0.0, "abandoned")


def test_the_rgb_picture_is_the_one_vision_models_get():
    from game_client.bridge.images import frame_png

    env = gymnasium.make("gridstudy/lamp_grid-planning-v0", render_mode="rgb_array")
    env.reset(seed=0)
    picture = env.render()
    width, height = env.unwrapped.episode.size
    assert picture.shape == (height * 17 + 1, width * 17 + 1, 3)
    png = frame_png(env.unwrapped.episode.observation.frame)
    assert int.from_bytes(png[16:20], "big") == picture.shape[1]


def test_bad_arguments_say_what_is_expected(tmp_path):
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        gymnasium.make("gridstudy/lamp_grid-planning-v0").unwrapped.step(0)
    with pytest.raises(ValueError, match="render_mode 'ansi' is not supported"), \
            pytest.warns(UserWarning, match="not in the possible render_modes"):
        gymnasium.make("gridstudy/lamp_grid-planning-v0", render_mode="ansi")
    env = gymnasium.make("gridstudy/lamp_grid-planning-v0")
    env.reset(seed=0)
    last = env.action_space.n - 1
    for wrong in (1.7, "up", None, np.array([3])):  # int() read 1.7 as action 1
        with pytest.raises(TypeError, match=rf"a whole number of this problem's 0..{last}, not"):
            env.unwrapped.step(wrong)
    assert env.unwrapped.turns.turns == 0  # none of them took a turn
    for right in (np.int64(0), np.array(0)):
        assert env.unwrapped.step(right)[4]["action"] == "noop"
    with pytest.raises(ValueError, match="must be written rl:NAME"):
        RecordEpisodes(env, db=f"sqlite:///{tmp_path / 'r.db'}", agent="qlearning")


def test_recorded_episodes_are_attempts_of_an_rl_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    env = RecordEpisodes(gymnasium.make("gridstudy/lamp_grid-planning-v0"), db=url,
                         agent="rl:tester", config={"alpha": 0.5})
    env.reset(seed=0)
    env.step(index_of(env, "submit"))  # an invalid turn
    env.step(index_of(env, "go-to-test"))
    for text in env.unwrapped.problem.params["plan"]:
        *_, terminated, _, _ = env.step(index_of(env, text))
        if terminated:
            break
    env.reset(seed=1)
    env.step(index_of(env, "up"))
    env.close()  # the second episode ends abandoned
    with Store(url) as store, store.session() as session:
        runs = session.exec(select(AgentRun)).all()
        episodes = session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
        events = session.exec(select(Event).where(Event.episode_id == episodes[0].id)
                              .order_by(Event.seq)).all()
    assert [(r.agent_kind, r.model, r.config["alpha"]) for r in runs] == [("rl", "tester", 0.5)]
    assert [(e.status, e.score) for e in episodes] == [("done", 1.0), ("abandoned", 0.0)]
    assert (events[0].applied, events[0].raw_reply) == (False, "submit")
    assert [e.action for e in events[1:3]] == ["go-to-test",
                                               env.unwrapped.problem.params["plan"][0]]
    assert [(base_agent(e), e.agent_kind) for e in load(url)] == [("rl:tester", "rl")] * 2


def test_the_same_hyper_parameters_are_one_run_and_others_are_said_in_words(tmp_path):
    """A training script started twice with {"layers": (64, 64), "lr": np.float32(...)}:
    a tuple never equalled the list the row kept, so each start made a run of its own, and
    a NumPy float failed as the row was inserted, with its SQL."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    config = {"layers": (64, 64), "lr": np.float32(0.25), "seeds": np.arange(3)}
    runs = []
    for _ in range(2):
        env = RecordEpisodes(gymnasium.make("gridstudy/lamp_grid-planning-v0"), db=url,
                             agent="rl:ppo", config=config)
        runs.append(env.agent_run_id)
        env.close()
    assert runs[0] == runs[1]
    with Store(url) as store, store.session() as session:
        [row] = session.exec(select(AgentRun)).all()
    assert {k: row.config[k] for k in config} == {"layers": [64, 64], "lr": 0.25, "seeds": [0, 1, 2]}
    with pytest.raises(TypeError, match="config: object .* cannot be kept as JSON"):
        RecordEpisodes(gymnasium.make("gridstudy/lamp_grid-planning-v0"), db=url,
                       agent="rl:ppo", config={"policy": object()})


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_environments(mode):
    envs = gymnasium.make_vec("gridstudy/lamp_grid-planning-v0", num_envs=3,
                              vectorization_mode=mode)
    obs, info = envs.reset(seed=5)
    assert obs.shape == (3, *envs.single_observation_space.shape)
    obs, reward, terminated, truncated, info = envs.step(np.zeros(3, dtype=np.int64))
    assert list(info["tick"]) == [1, 1, 1] and list(reward) == [0.0, 0.0, 0.0]
    envs.close()


def test_problems_added_later_register_too(test_problems):
    ids = [gym_id(problem.id) for problem in test_problems.values()]
    try:
        registered = game_client.gym.register_all()  # (other tests' problems too)
        assert set(ids) <= set(registered)
        assert game_client.gym.register_all() == []  # each once
        for env_id in ids:
            check_env(gymnasium.make(env_id).unwrapped)
    finally:
        for env_id in ids:
            gymnasium.registry.pop(env_id, None)


def test_gym_id_refuses_what_gymnasium_cannot_take():
    with pytest.raises(ValueError, match="'my lib/a b' has no Gymnasium id: rename it"):
        gym_id("my lib/a b")


def test_problems_list_prints_the_gym_ids():
    from click.testing import CliRunner

    from study_server.cli import main

    result = CliRunner().invoke(main, ["problems", "list", "--gym", "--challenge", "explore"])
    assert result.exit_code == 0, result.output
    explore = [s.id for s in registry.list_problems(challenge="explore")]
    assert result.output.split() == [gym_id(p) for p in explore]
    assert "gridstudy/dagmap-low-n4-v0" in result.output.split()


def test_the_qlearning_example_learns_and_is_recorded(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    from analysis.tables import score_cost

    path = Path(__file__).resolve().parents[2] / "examples" / "rl_qlearning.py"
    spec = importlib.util.spec_from_file_location("rl_qlearning", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    url = f"sqlite:///{tmp_path / 'rl.db'}"
    scores = example.train(example.PROBLEM, 100, db=url, seed=0)
    assert np.mean(scores[-25:]) > np.mean(scores[:25])  # late episodes beat early ones
    assert "episodes   81-100  mean score" in capsys.readouterr().out
    table = {row["agent"]: row for row in score_cost(load(url))}
    assert (table["rl:qlearning"]["attempts"], table["rl:qlearning"]["score"]) == \
        (100, pytest.approx(np.mean(scores)))


def test_a_user_library_problem_is_made_with_no_import(tmp_path):
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shipped = Path(registry.__file__).parent / "library" / "lamp_grid"
    folder = tmp_path / "lib" / "autumnbench" / "my_lamps"
    (folder / "problems").mkdir(parents=True)
    shutil.copy(shipped / "program.sexp", folder / "program.sexp")
    problem = json.loads((shipped / "problems" / "planning.json").read_text())
    problem.update(id="autumnbench/my_lamps/planning", env_id="autumnbench/my_lamps")
    (folder / "problems" / "planning.json").write_text(json.dumps(problem))
    script = ("import gymnasium\n"
              "env = gymnasium.make('game_client.gym:gridstudy/autumnbench-my_lamps-planning-v0')\n"
              "obs, info = env.reset(seed=0)\n"
              "print(env.unwrapped.problem.id, obs.shape, info['phase'])\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "GRIDSTUDY_LIBRARY": str(tmp_path / "lib")},
                            cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["autumnbench/my_lamps/planning", "(5,", "5)", "interaction"]


def test_a_recorded_vector_keeps_one_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'v.db'}"
    envs = gymnasium.make_vec("gridstudy/dagmap-high-n4-v0", num_envs=2,
                              vectorization_mode="sync",
                              wrappers=[lambda env: RecordEpisodes(env, db=url, agent="rl:vec")])
    envs.single_action_space.seed(0)
    _, info = envs.reset(seed=0)
    ended = 0
    for _ in range(60):
        actions = [envs.single_action_space.sample(mask=m.astype(np.int8))
                   for m in info["action_mask"]]
        _, _, terminated, truncated, info = envs.step(np.array(actions))
        ended += int(np.sum(terminated | truncated))
    envs.close()
    with Store(url) as store, store.session() as session:
        runs = session.exec(select(AgentRun)).all()
        statuses = [e.status for e in session.exec(select(EpisodeRow)).all()]
    assert [(r.agent_kind, r.model) for r in runs] == [("rl", "vec")]
    assert statuses.count("done") == ended and len(statuses) == ended + 2  # 2 left open
    assert statuses.count("abandoned") == 2


def test_the_benchmark_prints_a_rate_per_way_of_playing(capsys, monkeypatch):
    import sys

    from bench import gym as bench_gym

    monkeypatch.setattr(sys, "argv", ["bench.gym", "dagmap/high-n4", "--steps", "16"])
    bench_gym.main()
    header, row = capsys.readouterr().out.strip().splitlines()
    assert header.split()[:4] == ["problem", "interpreter", "gym", "x1"]
    name, *rates = row.split()
    assert name == "dagmap/high-n4" and len(rates) == 3 and all(float(r) > 0 for r in rates)


@pytest.mark.parametrize("name", ["game_client.gym.spaces", "game_client.gym.record",
                                  "tasks.worldtest.problem"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


STOPPED = """
import os, sys, gymnasium, game_client.gym
from game_client.gym import RecordEpisodes
from tests.game_client.test_gym import index_of
env = RecordEpisodes(gymnasium.make("gridstudy/lamp_grid-planning-v0"), db=sys.argv[1],
                     agent="rl:stopped")
env.reset(seed=0)
env.step(index_of(env, "go-to-test"))
for text in env.unwrapped.problem.params["plan"]:
    if env.step(index_of(env, text))[2]:
        break
env.reset(seed=1)
env.step(index_of(env, "up"))
env.store.flush(timeout=30)
os._exit(0)  # a process that stops without closing: a kill after its rows were written
"""
INTERRUPTED = """
import sys, gymnasium, game_client.gym
from game_client.gym import RecordEpisodes
from tests.game_client.test_gym import index_of
with RecordEpisodes(gymnasium.make("gridstudy/lamp_grid-planning-v0"), db=sys.argv[1],
                    agent="rl:interrupted") as env:
    env.reset(seed=0)
    env.step(index_of(env, "up"))
    raise KeyboardInterrupt  # Ctrl-C inside the with block
"""


LEFT_OPEN = """
import sys, gymnasium, game_client.gym
from game_client.gym import RecordEpisodes
from tests.game_client.test_gym import index_of
env = RecordEpisodes(gymnasium.make("gridstudy/lamp_grid-planning-v0"), db=sys.argv[1],
                     agent="rl:left-open")
env.reset(seed=0)
for _ in range(3):
    env.step(index_of(env, "up"))
if sys.argv[2] == "fails":
    raise RuntimeError("the training script's own bug")
if sys.argv[2] == "is stopped":
    print("stepping", flush=True)
    while True:  # training on, until its scheduler stops the job (SIGTERM)
        env.step(index_of(env, "noop"))
"""


def test_a_training_script_that_ends_without_closing_its_environment_ends_its_episode(
        tmp_path):
    """Most training scripts never close their environment: one that returns, fails, or
    is stopped by its scheduler (SIGTERM) mid-episode ends that episode abandoned, saying
    why, with every step written. Before, it was left active for good."""
    import signal
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'rl.db'}"
    for how, code in (("returns", 0), ("fails", 1)):
        done = subprocess.run([sys.executable, "-c", LEFT_OPEN, url, how], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == code, done.stderr
    assert "the training script's own bug" in done.stderr
    stopped = subprocess.Popen([sys.executable, "-c", LEFT_OPEN, url, "is stopped"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert stopped.stdout.readline() == "stepping\n"
    stopped.terminate()  # SIGTERM
    _, err = stopped.communicate(timeout=60)
    assert stopped.returncode == 128 + signal.SIGTERM, err
    with Store(url) as store, store.session() as session:
        rows = session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
        steps = list(session.exec(select(Event.episode_id).order_by(Event.id)).all())
    assert [(row.status, row.info["reason"]) for row in rows] == \
        [("abandoned", "the process ended before the episode did")] * 3
    assert sorted(steps[:6]) == [rows[0].id] * 3 + [rows[1].id] * 3
    assert steps.count(rows[2].id) == rows[2].info["turns"] >= 3


def test_an_episode_its_training_process_left_unfinished_is_said_as_such(tmp_path):
    """A training process that stops mid-episode without closing its environment leaves
    the episode active: the report leaves it out of the scores and says why, without
    sending the researcher to `gridstudy agent run` (which resumes model runs, not
    Gymnasium episodes); one interrupted inside a ``with`` block is recorded abandoned.
    Before, the report told the researcher to run `gridstudy agent run` again."""
    import signal
    import subprocess
    import sys

    from click.testing import CliRunner

    from analysis.cli import report

    url = f"sqlite:///{tmp_path / 'rl.db'}"
    for script, code in ((STOPPED, 0), (INTERRUPTED, -signal.SIGINT)):  # as a Ctrl-C ends it
        done = subprocess.run([sys.executable, "-c", script, url], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == code, done.stderr
    assert "KeyboardInterrupt" in done.stderr
    with Store(url) as store, store.session() as session:
        rows = session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
    assert [row.status for row in rows] == ["done", "active", "abandoned"]
    result = CliRunner().invoke(report, ["--db", url, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("Warning")]
    [said] = [line for line in warnings if "rl:" in line]
    assert said.startswith("Warning: rl:stopped has 1 of 2 episodes unfinished (1 active); "
                           "they are not in its scores. An active one's training process")
    assert "nothing resumes a Gymnasium episode" in said
    assert not any("agent run" in line for line in warnings), warnings
