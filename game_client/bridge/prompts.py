"""The AutumnBench text interface (002 Sec. 4.1.2, App. D.2.2, Listings D.1-D.4).

Every turn is one user message: what just happened, the observation (grids as JSON
arrays of colour names), for planning the goal and highlight mask, for masked frame
prediction the six options, the actions available at this step, the scratchpad, and the
closing instructions that ask for the action in an ``<action>`` tag. The first turn
opens with the interaction-phase welcome and the description of the task type; the
first turn of the test phase with the test-phase description. The wording follows the
paper's listings, with their typos corrected and our canonical action names.
"""

from __future__ import annotations

import json
from typing import Any

SYSTEM_PROMPT = """You are a helpful assistant currently operating as a curious agent exploring an environment that consists of a grid containing cells which can take colors.
You will be given observations and available actions to choose from at each step.
Your task is to interact with the environment efficiently and effectively and try to understand the underlying rules of the environment.

Here is a description of the actions:

- `click x y` - Click on the cell at the location (x, y) on the grid.
- `left` - Press the left arrow key.
- `right` - Press the right arrow key.
- `up` - Press the up arrow key.
- `down` - Press the down arrow key.
- `noop` - Do nothing and continue to the next step.
- `quit` - Quit the environment.
- `step` - Step through a sequence one frame at a time.
- `go-to-test` - Go to the test phase.
- `reset` - Reset the environment to the initial state.

Additional actions will be described whenever available.

Follow exactly the format when producing the action. So if the action is to click on a cell at location (1, 2), you should provide the action as <action>click 1 2</action>."""

INTERACTION_INTRO = (
    "Welcome, you are now in the interactive phase, where you can interact with the grid "
    "using the available actions.\nDuring the interactive phase your goal is to act in the "
    "environment to understand the underlying rules of the environment. You can reset the "
    "environment to its initial state at any time.\nUnderstand the environment and the "
    "dynamics of the environment well. Once you have understood the environment, you can "
    "select 'go-to-test' to go to the test phase.\nAfter the interactive phase you will be "
    "asked to use this knowledge about the environment to answer some questions about it."
)

_MFP = (
    "you will step through frames from a trajectory in this same environment you interacted "
    "with (use the 'step' action to step through the trajectory). Each frame is structured "
    "as a json object with the following fields:\n\"render\": the grid observed,\n"
    "\"video_location\": timestep at which the frame was observed,\n\"action_taken\": action "
    "taken at this timestep,\n\"is_finished\": whether the episode is finished.\nYou will "
    "step through the trajectory one frame at a time. Towards the end of the trajectory, "
    "parts of the grid will be masked (where the masked locations are marked as 'mask') and "
    "you will be given a set of choices to fill in the masked region at the final timestep. "
    "You need to choose the option that fits the masked region at the final timestep "
    "(choose_option_I), then submit. You can also use the 'rewind' action to go back to the "
    "previous frame."
)
_PLANNING = (
    "you will be given a goal state and a highlight mask of the same size as the grid where "
    "1 indicates the region to be reached and 0 indicates the region to be ignored.\nYour "
    "aim is to solve a planning task in the environment you interacted with by reaching the "
    "goal state in the highlighted region.\nNote that you can no longer reset the "
    "environment, so plan carefully. You will be given the same environment as you "
    "interacted with in the interaction phase, you need to interact with it to reach the "
    "goal state in the highlighted region.\nYour grid will be checked against the goal "
    "state and the highlight mask at every timestep. If you reach the goal state in the "
    "highlighted region, you will be given a reward. You may choose to quit at any time if "
    "you are stuck."
)
_CD = (
    "you will interact with a changed version of the environment - where one of the "
    "dynamics rules has been changed.\nYour goal is to use your understanding of the "
    "environment from the interaction phase to detect the change. The environment will "
    "start in a normal state and then at some point, the environment will transition to a "
    "defective state.\nAs soon as you detect the change, you have to select the "
    "'found-change' action to go to the next phase, wherein you have to choose exactly "
    "which frame the change occurred (choose_frame_I shows test frame I), then submit it. "
    "You may choose as many times as you want to see the frames. You will be penalized if "
    "you select 'found-change' before the change is detected."
)
TASKS = {"mfp": _MFP, "planning": _PLANNING, "cd": _CD}
"""The task-type description, completed by 'In the test phase, ' (turn 0) or 'You will
now ...' (the first test turn)."""

INSTRUCTIONS = (
    "Think step by step about the next action that should be taken. Remember, you are "
    "exploring the environment and trying to understand the underlying rules. Reflect on "
    "your action and self evaluate any potential issues before selecting the action. Output "
    "your final choice of action within a <action> tag.\nAdditionally, you can modify the "
    "contents of the scratchpad to use as memory since you can only observe the most recent "
    "states.\nPlease include the additions to the scratchpad within <scratchpad_add> tags "
    "and deletions within <scratchpad_del> tags. Output your choice of action within a "
    "<action> tag."
)


def task_description(challenge: str) -> str:
    """The '# Task Description' block for a challenge."""
    return f"# Task Description:\nIn the test phase, {TASKS[challenge]}"


def opening(state: dict[str, Any], previous_phase: str | None) -> str:
    """The header of a turn: the welcome, a phase change, or nothing."""
    challenge, phase = state["challenge"], state["phase"]
    if previous_phase is None and phase == "interaction":
        return f"{INTERACTION_INTRO}\n\n{task_description(challenge)}\n\nHere is the initial state of the grid:"
    if phase == "test" and previous_phase in (None, "interaction"):
        return f"The interaction phase is over, you have entered the test phase. Now {TASKS[challenge]}\n\nThe initial frame is:"
    if phase == "select" and previous_phase != "select":
        return ("You are now choosing the frame at which the change occurred. Choose a test "
                "frame with choose_frame_I to see it, then submit your choice.\n\nThe current frame is:")
    return "The observation is:"


def test_details(state: dict[str, Any]) -> str:
    """Goal and highlight mask (planning) or the six options (masked frame prediction)."""
    test = state.get("test") or {}
    if test.get("kind") == "planning":
        return "\n" + json.dumps(planning_goal(state["size"], test))
    if test.get("kind") == "mfp":
        return "\n" + mfp_options(test)
    return ""


def planning_goal(size: list[int], test: dict[str, Any]) -> dict[str, Any]:
    """``goal`` grid (target colours, 'ignore' elsewhere) and its 0/1 ``highlight_mask``."""
    width, height = size
    goal = [["ignore"] * width for _ in range(height)]
    mask = [[0] * width for _ in range(height)]
    for (x, y), colour in zip(test["goal_cells"], test["goal_colours"]):
        goal[y][x], mask[y][x] = colour, 1
    return {"goal": goal, "highlight_mask": mask}


def mfp_options(test: dict[str, Any]) -> str:
    """Each option as a matrix over the mask's bounding box ('n/a' for unmasked cells)."""
    xs = [x for x, _ in test["mask"]]
    ys = [y for _, y in test["mask"]]
    x0, y0 = min(xs), min(ys)
    lines = [f"The masked region spans columns {x0}-{max(xs)} and rows {y0}-{max(ys)}. The options are:"]
    for index, option in enumerate(test["options"]):
        grid = [["n/a"] * (max(xs) - x0 + 1) for _ in range(max(ys) - y0 + 1)]
        for (x, y), colour in zip(test["mask"], option):
            grid[y - y0][x - x0] = colour
        lines.append(f"choose_option_{index}: {json.dumps(grid)}")
    if test.get("chosen") is not None:
        lines.append(f"You have chosen option {test['chosen']}; submit to confirm or choose again.")
    return "\n".join(lines)


def actions_block(actions: list[str]) -> str:
    return "The following actions are available at this step: " + ",\n".join(actions)


def render_turn(state: dict[str, Any], *, previous_phase: str | None, last_action: str | None,
                error: str | None, scratchpad: str, remind_task: bool) -> str:
    """The user message of one turn.

    ``state`` is the episode state a driver reports (``challenge``, ``phase``, ``text``,
    ``actions``, ``size``, ``test``). ``error`` says why the previous reply was not
    applied; ``remind_task`` repeats the task description when the history window no
    longer holds the first turn.
    """
    parts = []
    if error:
        parts.append(f"Your previous reply was not applied, and nothing changed: {error}")
    elif last_action:
        parts.append(f"You took the action: {last_action}")
    if remind_task and previous_phase is not None:
        parts.append(task_description(state["challenge"]))
    parts.append(f"{opening(state, previous_phase)}\n{state['text']}{test_details(state)}")
    parts += [actions_block(state["actions"]), scratchpad, INSTRUCTIONS]
    return "\n\n".join(parts)
