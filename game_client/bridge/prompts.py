"""The AutumnBench text interface (002 Sec. 4.1.2, App. D.2.2, Listings D.1-D.4).

Every turn is one user message: what just happened, the observation (grids as JSON
arrays of colour names), for planning the goal and highlight mask, for masked frame
prediction the six options, the actions available at this step, the scratchpad, and the
closing instructions that ask for the action in an ``<action>`` tag. The first turn
opens with the interaction-phase welcome and the description of the task type; the
first turn of the test phase with the test-phase description, each challenge's own
(``Challenge.model_task`` and ``model_details``). The wording follows the paper's
listings, with their typos corrected and our canonical action names.
"""

from __future__ import annotations

from typing import Any

from tasks.worldtest import mfp
from tasks.worldtest import protocol as protocols
from tasks.worldtest.challenge import get

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
    return f"# Task Description:\nIn the test phase, {get(challenge).model_task}"


def test_task(state: dict[str, Any]) -> str:
    """The test's description for this turn's model: the challenge's, in the paper's
    words, naming the frame's keys as the frames it is sent carry them (under the
    autumnbench profile, the harness's ``action_took``)."""
    task = get(state["challenge"]).model_task
    if state.get("protocol") == mfp.HARNESS_PROFILE:
        task = task.replace('"action_taken"', '"action_took"')
    return task


def opening(state: dict[str, Any], previous_phase: str | None) -> str:
    """The header of a turn: the welcome, a phase change, or nothing."""
    challenge, phase = state["challenge"], state["phase"]
    if previous_phase is None and phase == "interaction":
        task = (f"\n\n{task_description(challenge)}"
                if protocols.get(state.get("protocol", "gridstudy")).task_in_intro else "")
        return f"{INTERACTION_INTRO}{task}\n\nHere is the initial state of the grid:"
    if phase == "test" and previous_phase in (None, "interaction"):
        return f"The interaction phase is over, you have entered the test phase. Now {test_task(state)}\n\nThe initial frame is:"
    if phase == "select" and previous_phase != "select":
        return ("You are now choosing the frame at which the change occurred. Choose a test "
                "frame with choose_frame_I to see it, then submit your choice.\n\nThe current frame is:")
    return "The observation is:"


def test_details(state: dict[str, Any]) -> str:
    """What the challenge adds to a test turn (the goal grid, the options), or nothing."""
    details = get(state["challenge"]).model_details
    text = details(state) if details is not None and state.get("test") else ""
    return "\n" + text if text else ""


def observed(state: dict[str, Any]) -> str:
    """The frame's text (or the challenge's own showing of it: ``model_frame``); with
    stacked frames (the autumnbench protocol), every frame the last action produced, in the published harness's layout (its ``Observation:`` prefix
    doubled between frames included)."""
    stacked = state.get("stacked")
    if not stacked:
        frame = get(state["challenge"]).model_frame if state.get("test") else None
        return (frame(state) if frame else None) or state["text"]
    return "\n\nObservation: ".join(
        f"Frame time: {frame['tick']}\nAction took: {frame['action']}\nObservation: {frame['text']}"
        for frame in stacked)


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
    parts.append(f"{opening(state, previous_phase)}\n{observed(state)}{test_details(state)}")
    parts += [actions_block(state["actions"]), scratchpad, INSTRUCTIONS]
    return "\n\n".join(parts)
