"""An Autumn program under the author's eye (``gridstudy play --debug``), without pygame.

A :class:`DebugSession` plays one program file tick by tick and keeps, for every tick, the
action applied and a snapshot of the interpreter's state, so it can:

* step and pause like the game loop (one input per tick, ``noop`` when there is none);
* rewind: go back one tick (the snapshot before it), as often as there are ticks;
* reload: read the file again when it is saved, check it statically, and replay the
  actions so far from the same seed to the same tick; a program that no longer loads or
  checks pauses the world (the old program kept, not stepped) with the message shown,
  until a save that loads;
* show the program's variables at the current tick and the objects drawn at a cell;
* stop at a runtime error with its location and the tick that raised it (the failed step
  changes nothing, so the state shown is the one the error happened in); a step over its
  step budget (the one its folder's ``env.json`` sets, else the default) is one, so an
  endless handler pauses the debugger within a second instead of freezing it;
* replay an action list (``--actions FILE``) and write one, for a reproducible bug report.

It quacks like :class:`~game_client.loop.GameLoop` (``tick``, ``enqueue``, ``paused``,
``driver.view()`` ...) so the pygame front end drives it the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from game_client.loop import Pausable, clamp_fps
from tasks.autumn import AutumnEnv, load
from tasks.autumn.errors import AutumnError
from tasks.autumn.lint import check_source, errors
from tasks.core import parse_action
from tasks.library import step_budget_of
from tasks.worldtest.tick import QUEUE_SIZE


@dataclass(frozen=True)
class Fault:
    """What went wrong, where, and at which tick (``None``: while loading)."""

    message: str
    tick: int | None = None
    action: str | None = None

    def lines(self) -> list[str]:
        head = "while loading" if self.tick is None else f"at tick {self.tick} ({self.action})"
        return [f"Error {head}:", *self.message.splitlines()]


class StaticErrors(AutumnError):
    """The static checker's errors in a program, each already a located message."""

    def _compose(self) -> str:
        return self.reason


def read_actions(path: str | Path) -> list[str]:
    """An action list: a JSON list of action texts, or one action per line (``#`` comments)."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        actions = json.loads(text)
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise ValueError(f"{path}: expected a JSON list of action texts")
    else:
        actions = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        actions = [a for a in actions if a]
    for number, action in enumerate(actions, 1):
        try:
            parse_action(action)
        except ValueError as error:
            raise ValueError(f"{path}: action {number}: {error}") from None
    return actions


class DebugSession(Pausable):
    """One program file played tick by tick, with its history kept for rewinding."""

    def __init__(self, path: str | Path, *, seed: int = 0, actions: list[str] = (),
                 fps: int | None = None) -> None:
        self.path = Path(path)
        self.seed = seed
        self.paused = False
        self.fault: Fault | None = None
        self.load_fault: Fault | None = None  # the saved file does not load: shown, paused
        self.queue: list[str] = []
        self.last_action: str | None = None
        self.source = self.path.read_text(encoding="utf-8")
        self.mtime = self._mtime()
        self.env = self._load(self.source)  # a program that cannot load stops here
        self.actions: list[str] = []
        self.snapshots = [self._start()]
        self.fps = clamp_fps(fps or self.env.frame_rate)
        self.replay(list(actions))

    # -- the program --------------------------------------------------------------------

    def _load(self, source: str) -> AutumnEnv:
        broken = errors(check_source(source, str(self.path)))
        if broken:
            raise StaticErrors("\n".join(map(str, broken)))
        try:  # the step budget its folder's env.json sets, as the library would load it
            return load(source, str(self.path), step_budget_of(self.path.parent))
        except AutumnError:
            raise
        except ValueError as error:  # env.json
            raise AutumnError(str(error), name=str(self.path)) from None

    def _start(self):
        self.env.reset(self.seed)
        return self.env.snapshot()

    def replay(self, actions: list[str]) -> int:
        """Apply ``actions`` in turn; stop at the first that fails. Returns how many applied."""
        for count, action in enumerate(actions):
            if not self.apply(action):
                return count
        return len(actions)

    def apply(self, action: str) -> bool:
        """One tick with ``action``; False (and the fault kept) when the program fails."""
        try:
            self.env.step(action)
        except AutumnError as error:
            self.fault = Fault(str(error), len(self.actions) + 1, action)
            self.paused = True  # stop where it failed, for the author to look
            return False
        self.actions.append(action)
        self.snapshots.append(self.env.snapshot())
        self.last_action = action
        self.fault = None
        return True

    def rewind(self, ticks: int = 1) -> int:
        """Go back ``ticks`` ticks (as far as the start); the tick now shown."""
        for _ in range(min(ticks, len(self.actions))):
            self.actions.pop()
            self.snapshots.pop()
        self.env.restore(self.snapshots[-1])
        self.fault = None
        self.last_action = self.actions[-1] if self.actions else None
        return self.tick_count

    def restart(self) -> None:
        """Back to tick 0 with the same seed, forgetting the actions."""
        self.rewind(len(self.actions))

    def reload(self) -> bool:
        """Read the file again and replay the actions so far; False (old program kept,
        world paused, fault shown) when the new one does not check or load. The first
        good save after a broken one lifts that pause."""
        self.mtime = self._mtime()
        source = self.path.read_text(encoding="utf-8")
        try:
            env = self._load(source)
        except AutumnError as error:
            self.load_fault = Fault(f"{error}\n(paused: the program before the edit is kept "
                                    "until a save that loads)")
            self.paused = True
            return False
        actions, self.env, self.source = list(self.actions), env, source
        self.actions, self.snapshots, self.fault = [], [self._start()], None
        if self.load_fault is not None:  # the pause was the broken save's: go on
            self.load_fault, self.paused = None, False
        self.fps = clamp_fps(self.env.frame_rate)
        applied = self.replay(actions)
        if applied < len(actions) and self.fault is not None:
            self.fault = Fault(f"{self.fault.message}\n(replayed {applied} of {len(actions)} "
                               "actions after the reload)", self.fault.tick, self.fault.action)
        return True

    def changed_on_disk(self) -> bool:
        return self._mtime() != self.mtime

    def _mtime(self) -> float | None:
        try:
            return self.path.stat().st_mtime_ns
        except OSError:
            return None

    def save_actions(self, path: str | Path | None = None) -> Path:
        """Write the actions so far, one per line, for ``--actions`` (a bug report)."""
        target = Path(path) if path else self.path.with_suffix(".actions")
        lines = [f"# {self.path.name}, seed {self.seed}, {len(self.actions)} ticks", *self.actions]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return target

    # -- what the window shows ----------------------------------------------------------

    @property
    def tick_count(self) -> int:
        return len(self.actions)

    def frame(self) -> list[list[str]]:
        return self.env.frame()

    def panel(self, cell: tuple[int, int] | None = None) -> dict[str, list[str]]:
        """The side panel's sections as text lines: the selected cell's objects (what the
        author is looking at), the variables, the fault."""
        sections = {}
        if cell is not None:
            found = self.env.objects_at(*cell)
            lines = []
            for obj in found:
                fields = " ".join(f"{k}={v}" for k, v in obj.fields)
                lines.append(f"{obj.holder}: {obj.type} @{obj.origin[0]},{obj.origin[1]} "
                             f"{fields}".rstrip() + f" ({obj.colour})")
            sections[f"Cell {cell[0]},{cell[1]}"] = lines or ["nothing drawn here"]
        sections["Variables"] = [f"{name} = {value}" for name, value in self.env.variables()]
        shown = self.load_fault or self.fault
        if shown is not None:
            sections["Error"] = shown.lines()
        return sections

    # -- the game loop's interface ------------------------------------------------------

    @property
    def driver(self) -> DebugSession:
        return self

    @property
    def done(self) -> bool:
        return False

    def view(self) -> dict[str, Any]:
        width, height = self.env.size
        return {"phase": "interaction", "tick": self.tick_count, "frame": self.frame(),
                "size": [width, height], "frame_rate": self.fps, "score": None, "test": None,
                "allowed": ["noop", "up", "down", "left", "right", "click", "reset"],
                "buttons": [], "keys": {}}

    def enqueue(self, text: str, client_time: float | None = None) -> str:
        if text == "reset":
            self.restart()
            return "queued"
        if len(self.queue) >= QUEUE_SIZE:
            return "queue full"
        self.queue.append(text)
        return "queued"

    def tick(self) -> bool | None:
        """One frame unless paused (or reloaded first, when the file was saved)."""
        if self.changed_on_disk():
            self.reload()
        if self.paused:
            return None
        return self.step_frame()

    def step_frame(self) -> bool:
        if self.load_fault is not None:  # nothing runs until the file loads again
            self.paused = True
            return False
        return self.apply(self.queue.pop(0) if self.queue else "noop")

    def status_line(self) -> str:
        parts = [f"tick {self.tick_count}", f"last {self.last_action or '-'}", f"{self.fps} fps"]
        if self.paused:
            parts.append("PAUSED")
        if self.load_fault is not None:
            parts.append("the saved file has errors")
        return " | ".join(parts)

    def close(self, reason: str = "") -> None:
        """Nothing to finish: a debug session is never recorded."""

