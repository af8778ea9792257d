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

import bisect
import json
import re
from collections.abc import Iterable, Iterator

from tasks.core import LONGEST_ACTION, parse_action

TAG, JSON, HARNESS = "tag", "json", "harness"
STYLES = (TAG, JSON, HARNESS)
ENV_VERBS = ("click", "left", "right", "up", "down", "noop")

_ACTION_TAG = (re.compile(r"<\s*action\s*>", re.IGNORECASE),
               re.compile(r"<\s*/\s*action\s*>", re.IGNORECASE))
_ADD_TAG = (re.compile("<scratchpad_add>", re.IGNORECASE), re.compile("</scratchpad_add>", re.IGNORECASE))
_DEL_TAG = (re.compile("<scratchpad_del>", re.IGNORECASE), re.compile("</scratchpad_del>", re.IGNORECASE))
_FENCE = re.compile(r"```[a-zA-Z]*")
LONGEST_OBJECT = 20_000
"""The most characters of a JSON object an action is read from (the task-DAG format asks
for one as short as ``{"action":"up"}``)."""


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


def _between(text: str, tags: tuple[re.Pattern, re.Pattern]) -> list[str]:
    """The text between each opening tag and the first closing tag after it, left to
    right: what ``re.findall(OPEN + "(.*?)" + CLOSE, re.DOTALL)`` finds, in one pass. (The
    regular expression tries every opening tag again up to the end of the text when no
    closing tag follows: a reply repeating ``<action>`` for 64,000 characters, as a
    model caught in a loop writes, took it 8 s.)"""
    opening, closing = tags
    found, at = [], 0
    while (start := opening.search(text, at)) is not None:
        end = closing.search(text, start.end())
        if end is None:
            break  # nor is there one after any later opening tag
        found.append(text[start.end():end.start()])
        at = end.end()
    return found


def _tagged_action(reply: str) -> str:
    found = _between(reply or "", _ACTION_TAG)
    if not found:
        raise ReplyError(
            "the reply has no <action>...</action> tag: expected the chosen action inside "
            "one, for example <action>click 1 2</action>"
        )
    text = _clean(found[-1])  # the final choice, when a model drafts several
    if not text:
        raise ReplyError("the <action> tag is empty: expected an action such as <action>up</action>")
    return text


_HARNESS_TAG = (re.compile("<action>"), re.compile("</action>"))


def _harness_action(reply: str) -> str:
    r"""The action as the published AutumnBench harness reads a reply (the autumnbench
    profile): the content of the last lower-case ``<action>`` tag, stripped of blanks and
    nothing else; of an environment action, its first line. Not checked here: the
    profile refuses what the harness would not apply.

    >>> _harness_action("<action>left\nthen up</action>"), _harness_action("<action>```up```</action>")
    ('left', '```up```')
    """
    found = _between(reply, _HARNESS_TAG)
    if not found:
        raise ReplyError("the reply has no <action>...</action> tag, written in lower case as "
                         "the published harness reads it")
    text = found[-1].strip()
    first = text.split("\n")[0].strip()
    return first if first.split(" ")[0] in ENV_VERBS else text


def _json_action(reply: str) -> str:
    for candidate in _json_objects(reply or ""):
        value = candidate.get("action")
        if isinstance(value, str) and value.strip():
            return _clean(value)
    raise ReplyError(
        'the reply has no JSON object with an "action": expected exactly one, for '
        f'example {{"action":"up"}} (of at most {LONGEST_OBJECT:,} characters)'
    )


def _json_objects(text: str) -> Iterator[dict]:
    """Every JSON object that can be decoded starting at a ``{`` in ``text`` and ending
    within :data:`LONGEST_OBJECT` characters, the last first; only those where an
    ``"action"`` key could be, since no other is wanted. Each is decoded from its own
    slice: an error's position is counted in lines from the start of the text it
    decodes, so that decoding every ``{`` of the whole text took time quadratic in its
    length (3 s for 224,000 characters of ``{"a":1,``). One nested deeper than the
    decoder can go is none."""
    decoder, start = json.JSONDecoder(), len(text)
    keys = [found.start() for found in re.finditer('"action"', text)]
    while (start := text.rfind("{", 0, start)) >= 0:
        key = bisect.bisect_left(keys, start)
        if key == len(keys) or keys[key] >= start + LONGEST_OBJECT:
            continue  # no "action" key could be in an object starting here
        try:
            value, _ = decoder.raw_decode(text[start:start + LONGEST_OBJECT])
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value


def scratchpad_edits(reply: str) -> tuple[list[str], list[str]]:
    """The lines ``reply`` adds to and deletes from the scratchpad (blank lines ignored).

    >>> scratchpad_edits("<scratchpad_add>red wall\\nblue moves</scratchpad_add>"
    ...                  "<scratchpad_del>old note</scratchpad_del>")
    (['red wall', 'blue moves'], ['old note'])
    """
    def lines(tags: tuple[re.Pattern, re.Pattern]) -> list[str]:
        return [line.strip() for block in _between(reply or "", tags)
                for line in block.splitlines() if line.strip()]

    return lines(_ADD_TAG), lines(_DEL_TAG)
