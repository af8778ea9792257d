"""System prompts for language-model agents on task-DAG maps (000 App. C.3 and D).

A prompt has three parts: the environment description, an optional strategy sentence
(the four variants differ only there) and the reply format. With the harness of App. D
the description also announces the memory summary (:mod:`tasks.dagmap.summary`). The
wording is ours; the content follows the paper's prompts.
"""

from __future__ import annotations

ENVIRONMENT = (
    "You control an agent in a symbolic grid world that you can only partly see. Your "
    "objective is to activate the goal state. Each turn you are told your current "
    "position, the directions you may legally move in, and any symbolic state you have "
    "just discovered on your cell. A newly discovered state may come with its "
    "prerequisites and hints about the states it leads to. You activate a state by "
    "standing on its cell once its prerequisites are satisfied. You cannot see the full "
    "map, the step budget, or states you have not discovered yet."
)
HARNESS = (
    "Each turn you also receive a summary of what you have learnt so far: the explored "
    "map, the cells you visited, the frontier cells you can reach but have not visited, "
    "the states you discovered with their prerequisites, and the states already activated."
)
STRATEGIES = {
    "base": "",
    "exploration": (
        "Favour exploration when you choose where to move: head on purpose for cells you "
        "have not visited yet and roam to uncover cells and symbolic states you have not "
        "discovered."
    ),
    "exploitation": (
        "Favour exploitation when you choose where to move: of the symbolic states you "
        "have already discovered, go first for those whose prerequisites are satisfied, "
        "along the shortest path you know, and activate them."
    ),
    "balance": (
        "Balance exploration and exploitation when you choose where to move. Exploration "
        "means heading on purpose for cells you have not visited and roaming to uncover "
        "cells and symbolic states you have not discovered. Exploitation means going for "
        "discovered states whose prerequisites are satisfied, along the shortest path you "
        "know, to activate them. Weigh the two by which moves are most likely to finish "
        "the task in the fewest steps."
    ),
}
"""Strategy sentence of each prompt variant (``base`` has none)."""
REPLY_FORMAT = (
    "Reply with exactly one JSON object holding one valid action taken from the available "
    'directions, such as {"action":"up"}, {"action":"down"}, {"action":"left"} or '
    '{"action":"right"}.'
)
VARIANTS = tuple(STRATEGIES)


def system_prompt(variant: str = "base", harness: bool = False) -> str:
    """The system prompt of one variant, with or without the memory-summary harness.

    >>> system_prompt("exploration").count("Favour exploration")
    1
    """
    if variant not in STRATEGIES:
        raise ValueError(f"unknown prompt variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    parts = [ENVIRONMENT, HARNESS if harness else "", STRATEGIES[variant], REPLY_FORMAT]
    return " ".join(part for part in parts if part)
