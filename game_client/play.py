"""The pygame front end of local play: events in, frames out, the clock in between.

Everything that decides what happens lives elsewhere: :class:`~game_client.loop.GameLoop`
(ticks, one input per tick), :mod:`game_client.controls` (what a key or click means) and
:mod:`game_client.render` (drawing). This module only pumps pygame events into them and
keeps the frame rate, so a test can drive it headless (``SDL_VIDEODRIVER=dummy``) by
posting events before each frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pygame

from game_client import stopping
from game_client.controls import command_for_click, command_for_key
from game_client.layout import Layout
from game_client.loop import GameLoop
from game_client.render import draw_view

FrameHook = Callable[[int, "PygameClient"], None]


class PygameClient:
    """A window that plays one :class:`GameLoop`."""

    def __init__(self, loop: GameLoop, *, scale: int = 32, realtime: bool = True,
                 title: str = "gridstudy") -> None:
        self.loop = loop
        self.scale = scale
        self.realtime = realtime
        self.title = title
        self.running = False
        self.stopped_by: str | None = None
        """What ended play other than the window's own close (a signal), if anything."""
        self.layout: Layout | None = None
        self.screen: pygame.Surface | None = None

    def run(self, max_frames: int | None = None, before_frame: FrameHook | None = None) -> int:
        """Play until the window closes (or ``max_frames`` frames); return frames shown."""
        with stopping.caught(self._on_signal):  # before SDL, which then keeps them
            return self._run(max_frames, before_frame)

    def _run(self, max_frames: int | None, before_frame: FrameHook | None) -> int:
        pygame.display.init()  # not pygame.init(): no audio device is needed
        pygame.font.init()
        pygame.display.set_caption(self.title)
        font = pygame.font.Font(None, 22)
        clock = pygame.time.Clock()
        self.running, frames = True, 0
        try:
            while self.running and (max_frames is None or frames < max_frames):
                self._relayout()
                if before_frame is not None:
                    before_frame(frames, self)
                for event in pygame.event.get():
                    self.handle(event)
                if not self.running:
                    break
                self.loop.tick()
                self._relayout()
                self.draw(font)
                pygame.display.flip()
                frames += 1
                if self.realtime:
                    clock.tick(self.loop.fps)
        finally:
            self.loop.close(self.stopped_by or "the window was closed")
            pygame.quit()
        return frames

    def _on_signal(self, number: int, _frame: Any) -> None:
        """Ctrl-C in the terminal, ``kill`` or the terminal closing: the window closes at
        the end of this frame, and a recorded attempt says what stopped it."""
        self.stopped_by = f"stopped by {stopping.named(number)}"
        self.running = False

    def handle(self, event: Any) -> None:
        """Turn one pygame event into a loop command or an enqueued action."""
        view = self.loop.driver.view()
        if event.type == pygame.QUIT:
            self.running = False
            return
        if event.type == pygame.KEYDOWN:
            self.execute(command_for_key(pygame.key.name(event.key), view))
        elif event.type == pygame.MOUSEBUTTONDOWN and event.button == 1:
            cell, option = self.layout.hit(*event.pos)
            self.execute(command_for_click(cell, option, view))

    def execute(self, command: str | None) -> None:
        if command is None:
            return
        if command == "close":
            self.running = False
        elif command == "pause":
            self.loop.toggle_pause()
        elif command == "frame":
            if self.loop.paused:
                self.loop.step_frame()
        elif command in ("faster", "slower"):
            self.loop.change_fps(1 if command == "faster" else -1)
        else:
            self.loop.enqueue(command)

    def draw(self, font: pygame.font.Font) -> None:
        """Everything in the window for the current view."""
        draw_view(self.screen, font, self.loop.driver.view(), self.layout, self.loop.status_line())

    def window_size(self, layout: Layout) -> tuple[int, int]:
        return layout.window

    def _relayout(self) -> None:
        layout = Layout.for_view(self.loop.driver.view(), self.scale)
        size = self.window_size(layout)
        if self.screen is None or self.screen.get_size() != size:
            self.screen = pygame.display.set_mode(size)
        self.layout = layout

    # -- helpers for scripted input (tests, demos) ------------------------------------

    def post_key(self, name: str) -> None:
        """Post a key press as if typed."""
        pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=pygame.key.key_code(name)))

    def post_click(self, x: int, y: int) -> None:
        """Post a left click on cell ``(x, y)`` of the live grid."""
        pos = self.layout.cell_centre(x, y)
        pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=1, pos=pos))

    def post_option_click(self, index: int) -> None:
        """Post a left click on MFP option ``index``."""
        left, top, width, height = self.layout.options[index]
        pos = (left + width // 2, top + height // 2)
        pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=1, pos=pos))
