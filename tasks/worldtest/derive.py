"""What the challenges' derivations share (002 App. C).

Each challenge module derives its own problems (``derive_mfp`` in
:mod:`tasks.worldtest.mfp`, ``derive_planning`` in :mod:`tasks.worldtest.planning`,
``derive_cd`` in :mod:`tasks.worldtest.cd`): it runs the real environment, checks the
challenge's guarantee and raises ``ValueError`` saying why when it cannot hold;
:func:`tasks.worldtest.check.check_problem` re-validates any problem later. How
realisations are sampled and how stochasticity is detected is documented there.

Horizons default to ``max(MIN_HORIZON, 10 x the plan's or witness's length)``: a
real-time session applies a ``noop`` on every tick without input and each counts as a
test step, so at 8 frames per second a horizon of 50 would last six seconds; 1,000 is
the paper's random-agent timeout (002 App. C).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from tasks.core import Action, Frame, frame_size, parse_action, region

MIN_HORIZON = 1000
Cells = list[tuple[int, int]]
Colours = tuple[str, ...]


def default_horizon(length: int) -> int:
    """A generous test horizon for a plan or witness of ``length`` actions."""
    return max(MIN_HORIZON, 10 * length)



def env_actions(actions: Sequence[str | Action]) -> list[str]:
    parsed = [parse_action(a) for a in actions]
    wrong = [str(a) for a in parsed if not a.is_env_action]
    if not parsed or wrong:
        raise ValueError(f"expected a non-empty list of environment actions; not ones: {wrong}")
    return [str(a) for a in parsed]


def cells_in_grid(cells: Iterable[Sequence[int]], frame: Frame) -> Cells:
    width, height = frame_size(frame)
    out = [(int(c[0]), int(c[1])) for c in cells]
    outside = [c for c in out if not (0 <= c[0] < width and 0 <= c[1] < height)]
    if not out or outside:
        raise ValueError(f"cells must be a non-empty list inside the {width}x{height} grid; "
                         f"outside: {outside}")
    return out


def deterministic_cells(finals: list[Frame]) -> set[tuple[int, int]]:
    width, height = frame_size(finals[0])
    return {(x, y) for y in range(height) for x in range(width)
            if all(f[y][x] == finals[0][y][x] for f in finals[1:])}


def require_deterministic(cells: Cells, finals: list[Frame]) -> None:
    truth = region(finals[0], cells)
    for index, frame in enumerate(finals[1:], 1):
        if region(frame, cells) != truth:
            raise ValueError(f"the region {cells} is not deterministic: sampled realisation "
                             f"{index} ends with {list(region(frame, cells))}, not {list(truth)}")


def windows(frame: Frame, shapes: Iterable[tuple[int, int]]) -> Iterator[Cells]:
    """Every rectangle of the given (width, height) shapes inside the grid, cells in
    reading order."""
    width, height = frame_size(frame)
    for w, h in shapes:
        for top in range(height - h + 1):
            for left in range(width - w + 1):
                yield [(left + i, top + j) for j in range(h) for i in range(w)]
