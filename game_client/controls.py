"""What a key press or a click means, given what is on screen (no pygame here).

Keys are named as ``pygame.key.name`` names them (``"left"``, ``"r"``, ``"return"``,
``"space"``, ``"."``, ``"1"``). :func:`command_for_key` returns either an action text for
the game loop or one of the loop commands in :data:`LOOP_COMMANDS`; ``None`` means the
key does nothing now.

By phase:

* interaction: arrows, ``R`` reset, ``T`` go-to-test, clicks on cells;
* masked frame prediction: right/left step/rewind through the trajectory, ``1``-``6``
  (or a click on an option) choose an option, Enter submits;
* planning: arrows and clicks act on the live grid;
* change detection: arrows and clicks act; then left/right move over the test frames
  (each move is a ``choose_frame_I``; the first press shows the latest frame) and Enter
  submits;
* in any test phase, the keys the challenge declares for its verbs (``Challenge.keys``,
  sent in the view's ``keys``: ``F`` found-change);
* always: space pauses, ``.`` steps one frame while paused, ``+``/``-`` change the frame
  rate, Escape closes the window.
"""

from __future__ import annotations

from typing import Any

LOOP_COMMANDS = ("pause", "frame", "faster", "slower", "close")

_ALWAYS = {
    "space": "pause", ".": "frame", "+": "faster", "=": "faster", "[+]": "faster",
    "-": "slower", "[-]": "slower", "escape": "close",
}
_ARROWS = ("up", "down", "left", "right")
_ENTER = ("return", "enter")


def command_for_key(key: str, view: dict[str, Any]) -> str | None:
    """The action text or loop command that ``key`` stands for in ``view``."""
    key = key.lower()
    if key in _ALWAYS:
        return _ALWAYS[key]
    phase, test = view["phase"], view.get("test") or {}
    if phase == "done":
        return None
    if phase == "interaction":
        return _interaction_key(key, view)
    kind = test.get("kind")
    if kind == "mfp":
        return _mfp_key(key, test)
    if kind == "cd" and phase == "select":
        return _select_key(key, test)
    if key in _ARROWS:
        return key
    return (view.get("keys") or {}).get(key)


def command_for_click(cell: tuple[int, int] | None, option: int | None, view: dict[str, Any]) -> str | None:
    """A click on grid cell ``(x, y)`` or on MFP option ``option`` (whichever was hit)."""
    test = view.get("test") or {}
    if option is not None and test.get("kind") == "mfp":
        return f"choose_option_{option}"
    if cell is None or "click" not in view["allowed"]:
        return None
    return f"click {cell[0]} {cell[1]}"


def _interaction_key(key: str, view: dict[str, Any]) -> str | None:
    if key in _ARROWS:
        return key
    if key == "r":
        return "reset"
    if key == "t" and "go-to-test" in view["allowed"]:
        return "go-to-test"
    if key == "q" and "quit" in view["allowed"]:
        return "quit"
    return None


def _mfp_key(key: str, test: dict[str, Any]) -> str | None:
    if key == "right":
        return "step"
    if key == "left":
        return "rewind"
    if key.isdecimal() and 1 <= int(key) <= len(test["options"]):
        return f"choose_option_{int(key) - 1}"
    if key in _ENTER:
        return "submit"
    return None


def _select_key(key: str, test: dict[str, Any]) -> str | None:
    last = test["frame_count"] - 1
    if key in ("left", "right") and test["chosen"] is None:
        return f"choose_frame_{last}"  # the slider starts at the latest frame
    if key == "left":
        return f"choose_frame_{max(0, test['chosen'] - 1)}"
    if key == "right":
        return f"choose_frame_{min(last, test['chosen'] + 1)}"
    if key in _ENTER:
        return "submit"
    return None
