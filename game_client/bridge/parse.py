"""Reading a model's reply: the action it chose and its scratchpad edits.

Two reply styles. AutumnBench (002 App. D.2.2) asks for ``<action>click 1 2</action>``;
the task-DAG maps (000 App. C.3) ask for one JSON object ``{"action": "up"}``. (A third,
``harness``, reads the tag exactly as the published AutumnBench harness does, for the
autumnbench profile; :func:`_harness_action`.) Either
way the action text then goes through :func:`tasks.core.parse_action`, so a reply is
valid exactly when the one action parser accepts what it names. Every failure is a
:class:`ReplyError` whose message says what was expected; the runner logs it with the
raw reply and does not step the environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from tasks.core import LONGEST_ACTION, parse_action

TAG, JSON, HARNESS = "tag", "json", "harness"
STYLES = (TAG, JSON, HARNESS)
ENV_VERBS = ("click", "left", "right", "up", "down", "noop")

_ACTION_TAG = re.compile(r"<\s*action\s*>(.*?)<\s*/\s*action\s*>", re.IGNORECASE | re.DOTALL)
_ADD_TAG = re.compile(r"<scratchpad_add>(.*?)</scratchpad_add>", re.IGNORECASE | re.DOTALL)
_DEL_TAG = re.compile(r"<scratchpad_del>(.*?)</scratchpad_del>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z]*")


class ReplyError(ValueError):
    """A reply that names no valid action (the message says why and what was expected)."""


def extract_action(reply: str, style: str = TAG, names: Iterable[str] = ()) -> str:
    """The canonical text of the action ``reply`` chooses, or :class:`ReplyError`.
    ``names`` are action names offered as they are (a protocol's ``I found the
    change!``), taken literally, whatever their case.

    >>> extract_action("I will go up. <ACTION> `Up` </ACTION>")
    'up'
    >>> extract_action('```json\\n{"action": "left"}\\n```', style="json")
    'left'
    """
    if style not in STYLES:
        raise ValueError(f"unknown reply style {style!r}: expected one of {', '.join(STYLES)}")
    if not (reply or "").strip():
        raise ReplyError("the reply was empty: it must name one action, for example "
                         + ("<action>up</action>" if style == TAG else '{"action": "up"}'))
    if style == HARNESS:
        return _short(_harness_action(reply))
    text = _short(_tagged_action(reply) if style == TAG else _json_action(reply))
    literal = {name.lower(): name for name in names}
    if text.lower() in literal:
        return literal[text.lower()]
    try:
        return str(parse_action(text))
    except ValueError as error:
        raise ReplyError(f"the reply names {text!r:.80}, which is not an action: {error}") from None


def _short(text: str) -> str:
    """``text``, unless it is longer than any action can be (:data:`LONGEST_ACTION`)."""
    if len(text) > LONGEST_ACTION:
        raise ReplyError(f"the reply names {text!r:.80}..., {len(text)} characters long, which "
                         f"is not an action: no action is longer than {LONGEST_ACTION}")
    return text


def _clean(text: str) -> str:
    """Forgive code fences, backticks, quotes and runs of blanks around an action."""
    text = _FENCE.sub("", text).strip().strip("`'\"").strip()
    return " ".join(text.split())


def _tagged_action(reply: str) -> str:
    found = _ACTION_TAG.findall(reply or "")
    if not found:
        raise ReplyError(
            "the reply has no <action>...</action> tag: expected the chosen action inside "
            "one, for example <action>click 1 2</action>"
        )
    text = _clean(found[-1])  # the final choice, when a model drafts several
    if not text:
        raise ReplyError("the <action> tag is empty: expected an action such as <action>up</action>")
    return text


_HARNESS_TAG = re.compile(r"<action>(.*?)</action>", re.DOTALL)


def _harness_action(reply: str) -> str:
    r"""The action as the published AutumnBench harness reads a reply (the autumnbench
    profile): the content of the last lower-case ``<action>`` tag, stripped of blanks and
    nothing else; of an environment action, its first line. Not checked here: the
    profile refuses what the harness would not apply.

    >>> _harness_action("<action>left\nthen up</action>"), _harness_action("<action>```up```</action>")
    ('left', '```up```')
    """
    found = _HARNESS_TAG.findall(reply)
    if not found:
        raise ReplyError("the reply has no <action>...</action> tag, written in lower case as "
                         "the published harness reads it")
    text = found[-1].strip()
    first = text.split("\n")[0].strip()
    return first if first.split(" ")[0] in ENV_VERBS else text


def _json_action(reply: str) -> str:
    for candidate in reversed(_json_objects(reply or "")):
        value = candidate.get("action")
        if isinstance(value, str) and value.strip():
            return _clean(value)
    raise ReplyError(
        'the reply has no JSON object with an "action": expected exactly one, for '
        'example {"action":"up"}'
    )


def _json_objects(text: str) -> list[dict]:
    """Every JSON object that can be decoded starting at a ``{`` in ``text``."""
    decoder, found = json.JSONDecoder(), []
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def scratchpad_edits(reply: str) -> tuple[list[str], list[str]]:
    """The lines ``reply`` adds to and deletes from the scratchpad (blank lines ignored).

    >>> scratchpad_edits("<scratchpad_add>red wall\\nblue moves</scratchpad_add>"
    ...                  "<scratchpad_del>old note</scratchpad_del>")
    (['red wall', 'blue moves'], ['old note'])
    """
    def lines(pattern: re.Pattern) -> list[str]:
        return [line.strip() for block in pattern.findall(reply or "")
                for line in block.splitlines() if line.strip()]

    return lines(_ADD_TAG), lines(_DEL_TAG)
