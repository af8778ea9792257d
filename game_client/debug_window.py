"""The author's debugger window (``gridstudy play PROGRAM --debug``): the grid, and beside it
the program's variables, the objects drawn at the selected cell and any error.

Keys, beyond play's (arrows, click, R restart, space pause, ``.`` one tick, +/-, Esc):
Backspace or ``,`` goes back one tick; F5 reloads the file (saving it does too); ``W``
writes the actions so far for ``--actions`` (a reproducible bug report). A right click
selects a cell to inspect without acting; a left click acts and selects.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pygame

from game_client.debugger import DebugSession
from game_client.layout import GAP, MARGIN, Layout
from game_client.play import PygameClient
from game_client.render import BACKGROUND, draw_grid, draw_text
from tasks.autumn.errors import window

PANEL_WIDTH = 460
MIN_HEIGHT = 600
HINT_WIDTH = 560
"""The key hint along the window's bottom is this wide."""
LINE = 18
HEADING = (150, 200, 255)
SELECTED = (255, 255, 255)
ERROR_FILL = (120, 20, 28)
MAX_LINES_PER_VALUE = 3
KEYS_HINT = "space pause | . step | , back | F5 reload | W write actions | right-click inspect"


class DebugClient(PygameClient):
    """A :class:`PygameClient` on a :class:`DebugSession`, with the state panel."""

    def __init__(self, session: DebugSession, *, scale: int = 32, realtime: bool = True) -> None:
        super().__init__(session, scale=scale, realtime=realtime,
                         title=f"gridstudy debug: {session.path.name}")
        self.session = session
        self.selected: tuple[int, int] | None = None
        self.notice = ""

    def window_size(self, layout: Layout) -> tuple[int, int]:
        width = max(_panel_left(layout) + PANEL_WIDTH, HINT_WIDTH + 2 * MARGIN)
        return width, max(layout.window[1] + 2 * LINE, MIN_HEIGHT)

    @property
    def panel_rect(self) -> tuple[int, int, int, int]:
        return (_panel_left(self.layout), MARGIN, PANEL_WIDTH - MARGIN,
                self.screen.get_height() - 3 * MARGIN - LINE)

    # -- input --------------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        if event.type == pygame.KEYDOWN:
            key = pygame.key.name(event.key)
            if key in ("backspace", ","):
                self.session.rewind()
                return
            if key == "f5":
                self.notice = "reloaded" if self.session.reload() else "reload failed"
                return
            if key == "w":
                self.notice = f"actions written to {self.session.save_actions()}"
                return
        if event.type == pygame.MOUSEBUTTONDOWN and event.button in (1, 3):
            cell, _ = self.layout.hit(*event.pos)
            if cell is not None:
                self.selected = cell
            if event.button == 3:
                return
        super().handle(event)

    def post_right_click(self, x: int, y: int) -> None:
        """Post a right click on cell ``(x, y)`` (inspect only)."""
        pos = self.layout.cell_centre(x, y)
        pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=3, pos=pos))

    # -- drawing ------------------------------------------------------------------------

    def draw(self, font: pygame.font.Font) -> None:
        self.screen.fill(BACKGROUND)
        draw_grid(self.screen, self.session.frame(), self.layout.grid)
        if self.selected is not None:
            x, y = self.selected
            left, top, _, _ = self.layout.grid
            cell = pygame.Rect(left + x * self.scale, top + y * self.scale, self.scale, self.scale)
            pygame.draw.rect(self.screen, SELECTED, cell, 2)
        status = self.session.status_line() + (f" | {self.notice}" if self.notice else "")
        draw_text(self.screen, font, status, self.layout.status)
        bottom = self.screen.get_height() - MARGIN - LINE
        draw_text(self.screen, font, KEYS_HINT, (MARGIN, bottom, HINT_WIDTH, LINE))
        self.draw_panel(font)

    def draw_panel(self, font: pygame.font.Font) -> None:
        left, top, width, height = self.panel_rect
        y = top
        for title, lines in self.session.panel(self.selected).items():
            if title == "Error":
                rows = _error_rows(font, lines, width - 8)
            else:
                rows = [(part, 0) for line in lines for part in _wrap(font, line, width - 8)
                        [:MAX_LINES_PER_VALUE if title == "Variables" else None]]
            block = LINE * (len(rows) + 1) + GAP // 3
            if title == "Error":
                y = max(y, top + height - block)  # the error sits at the bottom, always seen
                self.screen.fill(ERROR_FILL, pygame.Rect(left - 4, y - 2, width + 4, block))
            elif y + block > top + height - 6 * LINE:
                rows = rows[: max(0, (top + height - 6 * LINE - y) // LINE - 1)] + [("...", 0)]
            draw_text(self.screen, font, title, (left, y, width, LINE), HEADING)
            y += LINE
            for line, dx in rows:
                draw_text(self.screen, font, line, (left + 8 + dx, y, width, LINE))
                y += LINE
            y += GAP // 3


def _panel_left(layout: Layout) -> int:
    left, _, width, _ = layout.grid
    return left + width + GAP


QUOTE_INDENT = 12
"""Pixels a quoted source line (and its caret) is indented in the error box."""
CARET = re.compile(r" *\^")


def _error_rows(font: pygame.font.Font, lines: list[str], width: int) -> list[tuple[str, int]]:
    """The error's lines as (text, pixels from the left) rows: a message is wrapped, a
    quoted source line is kept whole (the part around the caret that fits) with the caret
    drawn under its column, measured in the font's own widths."""
    rows: list[tuple[str, int]] = []
    for k, line in enumerate(lines):
        following = lines[k + 1] if k + 1 < len(lines) else ""
        if CARET.fullmatch(line):
            continue  # drawn with the line it points into
        if not CARET.fullmatch(following) or not line.startswith("    "):
            rows += [(part, 0) for part in _wrap(font, line, width)]
            continue
        source, column = line[4:], len(following) - 5
        room = len(source)
        shown, caret = source, column
        while room > 8 and font.size(shown)[0] > width - QUOTE_INDENT:
            room -= 4
            shown, caret = window(source, column, room)
        rows += [(shown, QUOTE_INDENT), ("^", QUOTE_INDENT + font.size(shown[:caret])[0])]
    return rows


def _wrap(font: pygame.font.Font, text: str, width: int) -> list[str]:
    """``text`` cut into pieces that fit ``width`` pixels (on spaces when it can)."""
    pieces, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if font.size(candidate)[0] <= width:
            line = candidate
            continue
        if line:
            pieces.append(line)
        while font.size(word)[0] > width:  # a word longer than the line: cut it
            cut = max(1, len(word) * width // font.size(word)[0])
            pieces.append(word[:cut])
            word = word[cut:]
        line = word
    return pieces + ([line] if line else [])


def debug(path: str | Path, *, seed: int = 0, actions: list[str] = (), fps: int | None = None,
          scale: int = 32) -> DebugSession:
    """Open the debugger window on the program at ``path`` until it is closed."""
    session = DebugSession(path, seed=seed, actions=actions, fps=fps)
    try:
        DebugClient(session, scale=scale).run()
    except KeyboardInterrupt:
        pass  # Ctrl-C in the terminal closes the window, as Escape does
    return session

