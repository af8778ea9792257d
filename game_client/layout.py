"""Where things sit in the local client's window, in pixels (no pygame here).

The live grid is at the top left. Planning puts the goal grid to its right; masked frame
prediction puts the six options in a row under it. A status line runs along the bottom.
:meth:`Layout.hit` turns a mouse position into a grid cell or an option index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Rect = tuple[int, int, int, int]
"""``(left, top, width, height)``"""

MARGIN = 12
GAP = 24
STATUS_HEIGHT = 28
OPTION_BOX = 96
"""Largest side of one MFP option thumbnail, in pixels."""


@dataclass
class Layout:
    """Pixel geometry for one view at ``scale`` pixels per cell."""

    size: tuple[int, int]
    scale: int
    goal: bool = False
    option_count: int = 0
    option_shape: tuple[int, int] = (1, 1)
    options: list[Rect] = field(default_factory=list)

    @classmethod
    def for_view(cls, view: dict[str, Any], scale: int) -> Layout:
        test = view.get("test") or {}
        layout = cls(tuple(view["size"]), scale, goal=test.get("kind") == "planning")
        if test.get("kind") == "mfp":
            layout.option_count = len(test["options"])
            layout.option_shape = mask_box(test["mask"])[2:]
            layout.options = layout._option_rects()
        return layout

    @property
    def grid(self) -> Rect:
        width, height = self.size
        return (MARGIN, MARGIN, width * self.scale, height * self.scale)

    @property
    def goal_grid(self) -> Rect | None:
        if not self.goal:
            return None
        left, top, width, height = self.grid
        return (left + width + GAP, top, width, height)

    @property
    def option_cell(self) -> int:
        """Pixels per cell in an option thumbnail."""
        return max(2, min(self.scale, OPTION_BOX // max(self.option_shape)))

    def _option_rects(self) -> list[Rect]:
        left, top, _, height = self.grid
        cols, rows = self.option_shape
        width_px, height_px = cols * self.option_cell, rows * self.option_cell
        y = top + height + GAP
        return [(left + i * (width_px + GAP), y, width_px, height_px) for i in range(self.option_count)]

    @property
    def status(self) -> Rect:
        bottom = max(r[1] + r[3] for r in [self.grid, *self.options])
        return (MARGIN, bottom + GAP // 2, self.window[0] - 2 * MARGIN, STATUS_HEIGHT)

    @property
    def window(self) -> tuple[int, int]:
        rects = [self.grid, *self.options]
        if self.goal_grid:
            rects.append(self.goal_grid)
        right = max(r[0] + r[2] for r in rects) + MARGIN
        bottom = max(r[1] + r[3] for r in rects) + GAP // 2 + STATUS_HEIGHT + MARGIN
        return (max(right, 480), bottom)

    def hit(self, px: int, py: int) -> tuple[tuple[int, int] | None, int | None]:
        """``(cell, option)``: the live-grid cell or the option under the pointer."""
        left, top, width, height = self.grid
        if left <= px < left + width and top <= py < top + height:
            return ((px - left) // self.scale, (py - top) // self.scale), None
        for index, (x, y, w, h) in enumerate(self.options):
            if x <= px < x + w and y <= py < y + h:
                return None, index
        return None, None

    def cell_centre(self, x: int, y: int) -> tuple[int, int]:
        """The pixel at the centre of cell ``(x, y)`` (tests post clicks there)."""
        left, top, _, _ = self.grid
        return left + x * self.scale + self.scale // 2, top + y * self.scale + self.scale // 2


def mask_box(mask: list[list[int]]) -> tuple[int, int, int, int]:
    """``(x0, y0, width, height)`` of the smallest box holding every mask cell."""
    xs = [x for x, _ in mask]
    ys = [y for _, y in mask]
    return min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1
