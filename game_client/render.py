"""Drawing a view (``Episode.view()`` or the server's frame message) onto a pygame surface.

Only drawing lives here; events and timing belong to :mod:`game_client.play` (local) and
:mod:`game_client.remote`. Colours are CSS names, which pygame knows; a name it does not
know is drawn magenta so the mistake is visible, and masked cells are drawn hatched.
"""

from __future__ import annotations

from typing import Any

import pygame

from game_client.layout import Layout, Rect, mask_box

BACKGROUND = (24, 24, 28)
TEXT = (230, 230, 230)
HIGHLIGHT = (255, 215, 0)
UNKNOWN = (255, 0, 255)
MASK = (90, 90, 90)
SHADE = (40, 40, 48)


def colour(name: str) -> pygame.Color:
    """The pygame colour of a CSS colour name (magenta when unknown)."""
    try:
        return pygame.Color(name)
    except ValueError:
        return pygame.Color(*UNKNOWN)


def draw_view(surface: pygame.Surface, font: pygame.font.Font, view: dict[str, Any],
              layout: Layout, status: str) -> None:
    """Draw everything for ``view``: live grid, goal or options, status line."""
    surface.fill(BACKGROUND)
    test = view.get("test") or {}
    draw_grid(surface, view["frame"], layout.grid)
    if test.get("kind") == "planning":
        draw_goal(surface, test, layout)
    if test.get("kind") == "mfp":
        draw_options(surface, font, test, layout)
    draw_text(surface, font, status + _phase_hint(view), layout.status)


def draw_grid(surface: pygame.Surface, frame: list[list[str]], rect: Rect,
              shaded: set[tuple[int, int]] | None = None) -> None:
    """Cells of ``frame`` in ``rect``; cells in ``shaded`` drawn dimmed."""
    left, top, width, height = rect
    rows, cols = len(frame), len(frame[0])
    cell_w, cell_h = width // cols, height // rows
    for y, row in enumerate(frame):
        for x, name in enumerate(row):
            cell = pygame.Rect(left + x * cell_w, top + y * cell_h, cell_w, cell_h)
            if name == "mask":
                _draw_mask(surface, cell)
                continue
            fill = colour(name)
            if shaded and (x, y) in shaded:
                fill = fill.lerp(pygame.Color(*SHADE), 0.8)
            surface.fill(fill, cell)


def _draw_mask(surface: pygame.Surface, cell: pygame.Rect) -> None:
    surface.fill(MASK, cell)
    pygame.draw.line(surface, BACKGROUND, cell.topleft, cell.bottomright)
    pygame.draw.line(surface, BACKGROUND, cell.topright, cell.bottomleft)


def draw_goal(surface: pygame.Surface, test: dict[str, Any], layout: Layout) -> None:
    """The goal as the test states it (``goal_grid``, as the browser draws it and a model
    is shown it): the target cells in their goal colours, everything else shaded."""
    targets = {(x, y) for x, y in test["goal_cells"]}
    width, height = layout.size
    shaded = {(x, y) for x in range(width) for y in range(height)} - targets
    draw_grid(surface, test["goal_grid"], layout.goal_grid, shaded)


def draw_options(surface: pygame.Surface, font: pygame.font.Font, test: dict[str, Any],
                 layout: Layout) -> None:
    """The MFP options as small grids over the mask's bounding box, numbered from 1."""
    x0, y0, cols, rows = mask_box(test["mask"])
    for index, (rect, option) in enumerate(zip(layout.options, test["options"])):
        grid = [["#202020"] * cols for _ in range(rows)]
        for (x, y), name in zip(test["mask"], option):
            grid[y - y0][x - x0] = name
        draw_grid(surface, grid, rect)
        if test["chosen"] == index:
            pygame.draw.rect(surface, HIGHLIGHT, pygame.Rect(rect).inflate(6, 6), 3)
        label = font.render(str(index + 1), True, TEXT)
        surface.blit(label, (rect[0], rect[1] + rect[3] + 2))


def draw_text(surface: pygame.Surface, font: pygame.font.Font, text: str, rect: Rect,
              colour: tuple[int, int, int] = TEXT) -> None:
    surface.blit(font.render(text, True, colour), rect[:2])


def _phase_hint(view: dict[str, Any]) -> str:
    test = view.get("test") or {}
    kind = test.get("kind")
    if kind == "mfp":
        return f" | frame {test['position']}/{test['length']}"
    if kind == "cd" and view["phase"] == "select":
        chosen = "-" if test["chosen"] is None else test["chosen"]
        return f" | frame {chosen} of 0-{test['frame_count'] - 1}"
    hint = f" | step {test['steps']}/{test['horizon']}" if kind in ("cd", "planning") else ""
    return hint + _key_hint(view)


def _key_hint(view: dict[str, Any]) -> str:
    """The challenge's keys with their buttons' labels (`` | F: Found the change``)."""
    labels = dict(view.get("buttons") or [])
    keys = view.get("keys") or {}
    return "".join(f" | {key.upper()}: {labels.get(verb, verb)}" for key, verb in keys.items())
