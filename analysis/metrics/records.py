"""Reading the event record the way every metric here needs it.

The metrics take either plain action texts or event-like records, so that the same
function serves a test's hand-written list, an export row (a mapping) and a store row
(an object with attributes):

* a **plain text** (``"click 3 4"``) is taken to be an interaction-phase action that
  was applied: the caller has already selected the phase;
* a **record** is read through :func:`field` (mapping key or attribute). Only records
  whose ``phase`` is ``"interaction"`` count; a record with no action text (a model
  reply that did not parse) or with ``applied`` false (a turn that was refused) is
  skipped, because the environment never saw it.

Texts go through :func:`tasks.core.parse_action` once per distinct text, so ``Click 3  4``
and ``click 3 4`` are one symbol and malformed text is a ``ValueError`` naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.core import MOVES, parse_action

INTERACTION = "interaction"

CLICK, DIRECTIONAL, NOOP, RESET, GO_TO_TEST = "click", "directional", "noop", "reset", "go-to-test"
KINDS = (CLICK, DIRECTIONAL, RESET, NOOP)
"""The action types of 002 Fig. 5, in the paper's order."""

_KIND_OF_VERB = {"click": CLICK, **dict.fromkeys(MOVES, DIRECTIONAL), "noop": NOOP,
                 "reset": RESET, "go-to-test": GO_TO_TEST}


def field(record: Any, name: str, default: Any = None) -> Any:
    """``record[name]`` for a mapping, ``record.name`` for an object, else ``default``."""
    if type(record) is dict or isinstance(record, Mapping):  # dict first: it is the common, fast case
        return record.get(name, default)
    return getattr(record, name, default)


def derived(actions: Any, key: Any, compute: Any) -> Any:
    """``compute()``, kept with the events when they are held as columns (an episode's
    :class:`analysis.dataset.Events` remembers it under ``key``), so that the several
    metrics reading the same thing derive it once; computed afresh for anything else."""
    memo = getattr(actions, "memo", None)
    return compute() if memo is None else memo(key, compute)


def interaction_actions(actions: Iterable[Any]) -> list[str]:
    """The applied interaction-phase action texts among ``actions``, in order.

    ``actions`` may mix plain texts and records (see the module docstring).

    >>> interaction_actions(["up", {"phase": "test", "action": "down"},
    ...                      {"phase": "interaction", "action": None},
    ...                      {"phase": "interaction", "action": "click 1 2"}])
    ['up', 'click 1 2']
    """
    fast = getattr(actions, "interaction_texts", None)
    if fast is not None:  # events held as columns (analysis.dataset.Events), read once
        return list(fast())
    texts = []
    for item in actions:
        kind = type(item)
        if kind is str:
            texts.append(item)
            continue
        if kind is dict or isinstance(item, Mapping):
            phase, action, applied = item.get("phase"), item.get("action"), item.get("applied", True)
        elif isinstance(item, str):
            texts.append(item)
            continue
        else:  # a record object: read its attributes once (this loop runs per event)
            phase = getattr(item, "phase", None)
            action = getattr(item, "action", None)
            applied = getattr(item, "applied", True)
        if phase == INTERACTION and action is not None and applied is not False:
            texts.append(action)
    return texts


def classify(texts: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each distinct text mapped to ``(canonical text, kind)``.

    The kind is one of ``click``, ``directional``, ``noop``, ``reset``, ``go-to-test``.
    Any other verb cannot occur in the interaction phase and is a ``ValueError``.
    """
    out = {}
    for text in set(texts):
        known = _CLASSIFIED.get(text)
        if known is not None:
            out[text] = known
            continue
        if text in _KIND_OF_VERB and text != "click":  # already canonical: skip the parser
            out[text] = (text, _KIND_OF_VERB[text])
            continue
        action = parse_action(text)
        kind = _KIND_OF_VERB.get(action.verb)
        if kind is None:
            raise ValueError(
                f"{text!r} is not an interaction-phase action: expected noop, up, down, "
                "left, right, click X Y, reset or go-to-test (pass test-phase actions as "
                "records with their phase so that they are left out)"
            )
        out[text] = (str(action), kind)
        if len(_CLASSIFIED) >= _CLASSIFIED_MAX:
            _CLASSIFIED.clear()
        _CLASSIFIED[text] = out[text]
    return out


_CLASSIFIED: dict[str, tuple[str, str]] = {}
"""Texts already parsed, across calls: a study's actions come from a small vocabulary
(the grid's clicks and a few verbs), parsed once instead of once per episode."""
_CLASSIFIED_MAX = 100_000


def symbols(actions: Iterable[Any], include: Iterable[str] = ()) -> list[str]:
    """The canonical interaction-phase action texts that form the action alphabet.

    Directional keys and each click position are symbols; ``noop`` and ``reset`` only
    when named in ``include``; ``go-to-test`` never (it ends the phase, it explores
    nothing).
    """
    include = check_include(include)
    return derived(actions, ("symbols", tuple(sorted(include))), lambda: _symbols(actions, include))


def interaction_kinds(actions: Iterable[Any]) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The applied interaction-phase texts and :func:`classify` of them (derived once)."""
    def compute() -> tuple[list[str], dict[str, tuple[str, str]]]:
        texts = interaction_actions(actions)
        return texts, classify(texts)
    return derived(actions, "kinds", compute)


def _symbols(actions: Iterable[Any], include: tuple[str, ...]) -> list[str]:
    texts, kinds = interaction_kinds(actions)
    wanted = {CLICK, DIRECTIONAL, *include}
    chosen = {text: canonical for text, (canonical, kind) in kinds.items() if kind in wanted}
    return [chosen[t] for t in texts if t in chosen]


def check_include(include: Iterable[str]) -> tuple[str, ...]:
    """``include`` as a tuple, refusing names other than ``noop`` and ``reset``."""
    include = (include,) if isinstance(include, str) else tuple(include)
    unknown = [name for name in include if name not in (NOOP, RESET)]
    if unknown:
        raise ValueError(f"include may name noop and reset only, not {', '.join(unknown)}")
    return include
