"""Loop ratio: the share of steps an agent spends repeating itself (004 Sec. 3.2, Eq. 2-4).

A trajectory is a path through environment states ``s_0 .. s_n`` (``n`` actions). A
*cycle* ``l_ij`` leaves a state and comes back to it (``s_i = s_j``) with no nested
sub-cycle (the states ``s_i .. s_{j-1}`` are all distinct); an action that leaves the
state unchanged is a cycle of one step. A cycle is a *loop* when it starts where the
previously recorded cycle ended and repeats it exactly. ``LR = loop steps / actions``.

The default is the definition, Eq. 2-4 (``overlapping=False``, :data:`EQUATIONS`): a
cycle that starts inside the previous one (the rotation ``B A B`` within ``A B A B``) is
not a new unit, so pacing ``A B A B A`` has LR 2/4. Algorithm 1 of App. C.3 as printed
(``overlapping=True``, :data:`PRINTED_ALGORITHM`) is kept as a named variant for
reproducing the paper's code: every cycle without a nested sub-cycle becomes the
"previous cycle", the rotation included, which breaks the chain, so only repeated
one-step cycles (pressing against a wall, a no-op that changes nothing) count there and
``A B A B A`` scores 0. The report says which reading its figures used.

States must be hashable: the full interpreter state where the environment exposes
one, else :func:`tasks.core.frame_hash` of each frame.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

EQUATIONS, PRINTED_ALGORITHM = False, True
"""Values of ``overlapping``: the definition (Eq. 2-4), or Algorithm 1 as printed."""
OVERLAPPING = EQUATIONS
"""Default: the definition, Eq. 2-4 (see the module docstring)."""


def _previous_visits(states: Sequence[Hashable]) -> list[int]:
    """For each position, the last earlier position with the same state, or -1."""
    last: dict[Hashable, int] = {}
    previous = []
    for t, state in enumerate(states):
        try:
            previous.append(last.get(state, -1))
        except TypeError:
            raise ValueError(
                f"state {t} is not hashable ({type(state).__name__}); pass frame_hash(frame) "
                "or another hashable digest of each state"
            ) from None
        last[state] = t
    return previous


def cycles(
    states: Sequence[Hashable],
    actions: Sequence[Hashable] | None = None,
    overlapping: bool = OVERLAPPING,
) -> list[tuple[int, int, bool]]:
    """Every cycle Algorithm 1 records, as ``(i, j, is_loop)`` for ``l_ij``, in order.

    ``states`` are ``s_0 .. s_n``. ``actions`` (optional, ``n`` of them) make two cycles
    equal only when their actions match too, as the paper's cycles ``[s_i, a_i, ...,
    a_{j-1}, s_j]`` do; without them cycles compare by states. ``overlapping`` (default
    False, Eq. 2-4; True is Algorithm 1 as printed): whether a cycle that starts before
    the previous cycle's end is still recorded. A return to a state with a nested sub-cycle in
    between is not a cycle and is not listed.

    >>> cycles(["A", "B", "C", "B", "A"])  # A..A holds B C B: only B C B is a cycle
    [(1, 3, False)]
    """
    states = list(states)
    if actions is not None and len(actions) != max(len(states) - 1, 0):
        raise ValueError(
            f"{len(states)} states need {max(len(states) - 1, 0)} actions, got {len(actions)}"
        )
    found: list[tuple[int, int, bool]] = []
    end, prior = -1, None
    nested_before = -1  # the latest previous-visit time among positions < t
    for t, start in enumerate(_previous_visits(states)):
        if start >= 0 and nested_before < start and (overlapping or start >= end):
            cycle = _cycle(states, actions, start, t)
            found.append((start, t, start == end and cycle == prior))
            prior, end = cycle, t
        if start > nested_before:
            nested_before = start
    return found


def loop_steps(
    states: Sequence[Hashable],
    actions: Sequence[Hashable] | None = None,
    overlapping: bool = OVERLAPPING,
) -> tuple[int, int]:
    """``(loop steps, total steps)`` of one trajectory (Algorithm 1's two counters).

    Parameters as for :func:`cycles`.

    >>> loop_steps(["A", "A", "A", "A"])
    (2, 3)
    """
    states = list(states)
    loops = sum(j - i for i, j, is_loop in cycles(states, actions, overlapping) if is_loop)
    return loops, max(len(states) - 1, 0)


def _cycle(states, actions, start: int, stop: int) -> tuple:
    """The cycle ``l_{start,stop}`` as Algorithm 1 compares it (``tau[start:stop]``)."""
    if actions is None:
        return tuple(states[start:stop])
    return tuple(states[start:stop]), tuple(actions[start:stop])


def loop_ratio(
    states: Sequence[Hashable],
    actions: Sequence[Hashable] | None = None,
    overlapping: bool = OVERLAPPING,
) -> float | None:
    """Loop steps over total steps of one trajectory; ``None`` with no step.

    Parameters as for :func:`cycles`.

    >>> loop_ratio(["A", "B", "A", "B", "A"])
    0.5
    >>> loop_ratio(["A", "B", "A", "B", "A"], overlapping=PRINTED_ALGORITHM)
    0.0
    """
    loops, total = loop_steps(states, actions, overlapping)
    return loops / total if total else None


def pooled_loop_ratio(
    trajectories: Iterable[Sequence[Hashable]], overlapping: bool = OVERLAPPING
) -> float | None:
    """LR over a set of trajectories, pooled as Algorithm 1 pools them: all loop steps
    over all steps.

    Each trajectory is a sequence of states. ``None`` when there is no step at all.
    """
    loops = total = 0
    for states in trajectories:
        found, steps = loop_steps(states, overlapping=overlapping)
        loops, total = loops + found, total + steps
    return loops / total if total else None
