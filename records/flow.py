"""The participant flow of one study, read from its participants' statuses: the steps a
Methods section reports, from arrival to inclusion, each with who left there and why.

It lives beside the record because two rooms read it: the report's flow section
(``analysis.flow``) and the dashboard's flow figure (``study_server.dashboard``). A
participant's ``status`` says how the visit ended (``records.schema.PARTICIPANT``);
excluded participants carry their ``exclusion_reason``. The steps follow the flow's
order (``consent.stages``): consent, the device check, colour screening, the
reservation of problems (a full study), the comprehension quiz, the time limit, the end
of the visit, then exclusion. Each step keeps those who did not leave at it, so the last
count is the participants included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

ACTIVE = "active"
"""The status of a participant still taking part (who has not left the flow)."""

DROPS = (
    ("consented", "declined", "declined consent"),
    ("on a suitable device", "wrong-device", "ended on a device the study cannot be played on"),
    ("on a fast enough connection", "slow-connection",
     "ended because the connection's round trip stayed above the study's limit"),
    ("passed screening", "screened-out", "failed the colour-vision screening"),
    ("given problems", "full", "the study was full"),
    ("passed the quiz", "failed-quiz", "failed the comprehension quiz"),
    ("passed the attention checks", "failed-attention", "ended at a failed attention check"),
    ("finished in time", "timed-out", "ran out of the study's time limit"),
    ("finished", ACTIVE, "still taking part"),
)
"""(step reached by those who stay, status of those who leave there, the reason in words),
in the flow's order; exclusion comes last, one drop per reason."""
COMPLETE, EXCLUDED, INCLUDED = "complete", "excluded", "included"
LEFT_OUT = (EXCLUDED, "screened-out", "failed-quiz", "wrong-device", "failed-attention")
"""Standings (:func:`standing`) whose attempts are all left out of the analysis, an
attempt included again by hand among them; a study's fill leaves them out too
(``study_server.assignment.fill_counts``)."""


def standing(status: str | None, exclusion_reason: str | None) -> str:
    """How a participant stands for the flow and for payment: their ``status``, except
    that one who completed the visit with an ``exclusion_reason`` is ``excluded``. A
    failed attention check under ``attention_failure: continue`` leaves the participant
    playing on to the end, so the status says ``complete`` and the reason says why the
    data is left out.

    >>> standing("complete", None), standing("complete", "failed 1 attention check")
    ('complete', 'excluded')
    >>> standing(None, None)
    'active'
    """
    status = status or ACTIVE
    return EXCLUDED if status == COMPLETE and exclusion_reason else status


def flow_steps(people: Iterable[tuple[str | None, str | None]]) -> list[dict[str, Any]]:
    """One study's flow from its participants' ``(status, exclusion_reason)``: per step,
    the participants still in after it (``participants``) and those who left at it
    (``dropped``) with their ``status`` and ``reason``. Steps nobody left at are kept.

    >>> steps = flow_steps([("complete", None), ("declined", None),
    ...                     ("excluded", "by hand: bot-like"), ("complete", "failed 2 checks")])
    >>> [(s["step"], s["participants"], s["reason"]) for s in steps
    ...  if s["dropped"] or s["status"] is None]
    [('arrived', 4, None), ('consented', 3, 'declined consent'), ('not excluded', 2, 'by hand: bot-like'), ('not excluded', 1, 'failed 2 checks'), ('included', 1, None)]
    """
    people = [(standing(status, reason), reason) for status, reason in people]
    statuses = Counter(status for status, _ in people)
    drops = [(step, status, why, statuses.pop(status, 0)) for step, status, why in DROPS]
    statuses.pop(COMPLETE, 0)
    statuses.pop(EXCLUDED, 0)
    reasons = Counter(reason or EXCLUDED for status, reason in people if status == EXCLUDED)
    drops += [("not excluded", EXCLUDED, why, n) for why, n in sorted(reasons.items())]
    drops += [(f"not {status}", status, f"ended as {status}", n)  # a status not listed
              for status, n in sorted(statuses.items())]
    remaining = len(people)
    steps = [_step("arrived", remaining, 0, None, None)]
    for step, status, why, n in drops:
        remaining -= n
        steps.append(_step(step, remaining, n, status, why))
    return [*steps, _step(INCLUDED, remaining, 0, None, None)]


def drop_note(step: dict[str, Any], *, why: bool = False) -> str:
    """How a figure labels those who left at ``step`` (one of :func:`flow_steps`): "-2"
    (with ``why``, "-2: failed the comprehension quiz"), or "1 still taking part" for
    those who have not finished yet, who did not leave; "" when nobody left there."""
    if not step["dropped"]:
        return ""
    if step["status"] == ACTIVE:
        return f"{step['dropped']} {step['reason']}"
    return f"-{step['dropped']}" + (f": {step['reason']}" if why else "")


def _step(step: str, remaining: int, dropped: int, status: str | None,
          reason: str | None) -> dict[str, Any]:
    return {"step": step, "participants": remaining, "dropped": dropped, "status": status,
            "reason": reason}
