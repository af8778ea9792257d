"""DagMapEnv keeps the GridEnv contract: text, frame, budget, noop, walls, the end."""

from __future__ import annotations

import pytest

from tasks.core import GridEnv
from tasks.dagmap import DagMapEnv, generate, preset
from tasks.dagmap.oracle import solve
from tasks.dagmap.view import observation_text


def first_wall(dagmap, cell):
    return next(d for d in ("up", "down", "left", "right") if d not in dagmap.directions(cell))


def play(env, actions):
    return [env.step(a) for a in actions]


def test_it_is_a_grid_env_with_the_size_and_rate_of_its_preset():
    env = DagMapEnv("low-n8", map_seed=0)
    assert isinstance(env, GridEnv)
    assert (env.size, env.frame_rate) == ((9, 9), 4)
    assert env.available_actions() == ("noop", "up", "down", "left", "right")


def test_same_seed_and_actions_give_the_same_frames_and_texts():
    actions = ["up", "left", "noop", "down", "right", "right", "up"] * 4
    runs = []
    for _ in range(2):
        env = DagMapEnv("medium-n6")
        first = env.reset(7)
        runs.append([(first.frame, first.text)] + [(o.frame, o.text) for o in play(env, actions)])
    assert runs[0] == runs[1]


def test_reset_seed_picks_the_map_unless_the_map_seed_is_fixed():
    free, fixed = DagMapEnv("medium-n6"), DagMapEnv("medium-n6", map_seed=3)
    free.reset(1)
    assert free.map.nodes == generate("medium-n6", 1).nodes
    fixed.reset(1)
    assert fixed.map.nodes == generate("medium-n6", 3).nodes
    fixed.reset(99)
    assert fixed.map.nodes == generate("medium-n6", 3).nodes


def test_start_observation_shows_only_the_start_and_its_neighbours():
    env = DagMapEnv("low-n6", map_seed=2)
    obs = env.reset(0)
    dagmap = env.map
    x, y = dagmap.start
    assert obs.frame[y][x] == "blue"
    shown = {(cx, cy) for cy, row in enumerate(obs.frame) for cx, c in enumerate(row) if c != "black"}
    neighbours = {(x + dx, y + dy) for dx, dy in ((0, 1), (0, -1), (1, 0), (-1, 0))}
    assert shown <= neighbours | {(x, y)}
    assert obs.text == observation_text(dagmap.start, dagmap.directions(dagmap.start), 0, None)
    assert (obs.done, obs.info["steps"], obs.info["success"], obs.info["events"]) == (False, 0, False, [])


def test_noop_costs_nothing_and_changes_nothing():
    env = DagMapEnv("high-n6", map_seed=1)
    env.reset(0)
    moved = env.step(env.map.directions(env.map.start)[0])
    idle = env.step("noop")
    assert (idle.frame, idle.text, idle.info["steps"]) == (moved.frame, moved.text, 1)
    assert (idle.info["noop"], idle.info["moved"], idle.info["events"]) == (True, False, [])


def test_a_move_into_a_wall_is_refused_and_costs_a_step():
    env = DagMapEnv("high-n4", map_seed=0)
    env.reset(0)
    wall = first_wall(env.map, env.map.start)
    obs = env.step(wall)
    assert obs.info["position"] == list(env.map.start)
    assert (obs.info["rejected"], obs.info["moved"], obs.info["steps"]) == (True, False, 1)
    assert obs.text.startswith(f"OBSERVATION: You cannot move {wall}: something blocks the way.")
    assert obs.text.endswith("You spent 1 step.")


def test_the_oracle_reaches_the_goal_and_the_map_ends_with_success():
    env = DagMapEnv("medium-n8", map_seed=5)
    env.reset(0)
    moves = solve(env.map)
    observations = play(env, moves)
    assert [o.done for o in observations] == [False] * (len(moves) - 1) + [True]
    last = observations[-1]
    assert (last.info["success"], last.info["goal"], last.info["achieved"][-1]) == (True, env.map.goal, env.map.goal)
    assert "You activated the goal state. The task is complete." in last.text
    assert env.available_actions() == ()
    with pytest.raises(ValueError, match="this map is finished"):
        env.step("up")


def test_the_budget_ends_the_map_without_success():
    env = DagMapEnv(config=preset("high-n4").with_(budget_factor=0.5), map_seed=0)
    env.reset(0)
    wall = first_wall(env.map, env.map.start)
    observations = play(env, [wall] * env.map.budget)
    assert env.map.budget == len(env.map.cells) // 2
    assert [o.done for o in observations][-2:] == [False, True]
    assert observations[-1].info["success"] is False
    assert "Your step budget is spent. The task is over." in observations[-1].text


def test_discovering_a_node_tells_its_prerequisites_state_and_successors():
    env = DagMapEnv("medium-n6", map_seed=0)
    env.reset(0)
    moves = solve(env.map)
    for obs in play(env, moves):
        for event in obs.info["events"]:
            if event["kind"] == "discovered":
                facts = obs.info["node"]
                name = event["node"]
                assert facts["name"] == name and facts["new"] is True
                assert facts["prerequisites"] == [sorted(o) for o in env.map.prereq[name]]
                assert facts["leads_to"] == env.map.children[name]
                assert f"You discovered state {name}." in obs.text
                label = next(lab for lab in obs.info["labels"] if lab["name"] == name)
                x, y = env.map.nodes[name]
                assert label["cell"] == [x, y]


def test_discovered_nodes_are_coloured_by_state_under_fog():
    env = DagMapEnv("medium-n6", map_seed=0)
    env.reset(0)
    observations = play(env, solve(env.map)[:-1])
    frame = observations[-1].frame
    colours = {"achieved": "limegreen", "pending": "yellow", "blocked": "orange"}
    for label in observations[-1].info["labels"]:
        x, y = label["cell"]
        if [x, y] != observations[-1].info["position"]:
            expected = {"blocked": "red", "pending": "magenta"}[label["state"]] if label["goal"] else colours[label["state"]]
            assert frame[y][x] == expected


@pytest.mark.parametrize("action, message", [("click 1 1", "not an action of a task-DAG map"), ("jump", "unknown action")])
def test_other_actions_are_refused(action, message):
    env = DagMapEnv("medium-n4", map_seed=0)
    env.reset(0)
    with pytest.raises(ValueError, match=message):
        env.step(action)


def test_step_before_reset_is_an_error():
    with pytest.raises(ValueError, match="call reset"):
        DagMapEnv().step("up")


def test_observation_text_follows_the_paper():
    facts = {
        "name": "B4KD", "new": False, "goal": False, "prerequisites": [["Q7M2"], ["D7UX", "H2NZ"]],
        "leads_to": ["9J7T"], "activated": True, "activated_now": True,
    }
    assert observation_text((1, 2), ["up", "down", "right"], 21, facts) == (
        "OBSERVATION: You are at [1, 2]. You found state B4KD again. To activate it, you need "
        "Q7M2, or D7UX and H2NZ. It is now activated! Once it is activated, you can next pursue "
        "9J7T. Your available action is up, down, or right. You spent 21 steps."
    )
    assert observation_text((7, 0), ["up"], 3, None) == (
        "OBSERVATION: You are at [7, 0]. You found nothing here. Your available action is up. "
        "You spent 3 steps."
    )


def test_the_walls_drawn_are_every_wall_beside_a_cell_visited():
    """The frame keeps the walls the agent has seen as it goes (not found again from
    every visited cell at each step): each step, exactly the non-traversable cells of
    the grid beside a visited cell are drawn as walls, wherever the walk has been."""
    import random

    from tasks.dagmap.view import WALL

    for name, seed in (("low-n4", 0), ("medium-n6", 3), ("high-n8", 5)):
        env, moves = DagMapEnv(name), random.Random(seed)
        env.reset(seed)
        visited = {env.map.start}
        for _ in range(120):
            if env.done:
                break
            observation = env.step(moves.choice(("up", "down", "left", "right")))
            visited.add(tuple(observation.info["position"]))
            width, height = env.map.size
            seen = {(x + dx, y + dy) for x, y in visited
                    for dx, dy in ((0, 1), (0, -1), (1, 0), (-1, 0))}
            walls = {(x, y) for x, y in seen
                     if 0 <= x < width and 0 <= y < height and (x, y) not in env.map.cells}
            drawn = {(x, y) for y, row in enumerate(observation.frame)
                     for x, colour in enumerate(row) if colour == WALL}
            assert drawn == walls
