"""The study page's two small figures, as coordinates for inline SVG: the study's fill
over time (included attempts per problem against the target) and the participant flow
(:func:`records.flow.flow_steps`, the steps the report's flow section gives).

No plotting library: a researcher watching a study wants to look rather than read a
table, and a polyline and a few bars are drawn by the browser from these numbers
(``templates/dashboard/_study_figures.html``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, select

from records.flow import drop_note, flow_steps
from records.models import EpisodeRow, Participant
from records.schema import as_utc
from study_server import assignment

WIDTH, HEIGHT, MARGIN = 320, 120, 24
"""The fill figure's size and its left and bottom margin, in pixels."""
BAR, FLOW_LABELS, FLOW_BARS = 14, 150, 160
"""The flow figure's bar height, room for the step names, and the longest bar, in pixels."""


def fill_over_time(db: Session, study_id: str, problems: list[str], target: int) -> dict[str, Any]:
    """Per problem, the cumulative count of included finished attempts by people at each
    time one ended, scaled into the figure; the target's height; the time span."""
    rows = db.exec(select(EpisodeRow.problem_id, EpisodeRow.ended_at).where(
        EpisodeRow.study_id == study_id, assignment.counted_done(),
        EpisodeRow.problem_id.in_(problems),
        EpisodeRow.ended_at.is_not(None)).order_by(EpisodeRow.ended_at)).all()
    times = [as_utc(t).timestamp() for _, t in rows]
    start, end = (min(times), max(times)) if times else (0.0, 1.0)
    top = max([target, *_counts(rows).values()]) or 1
    x = _scale(start, end, MARGIN, WIDTH - 4)
    y = _scale(0, top, HEIGHT - MARGIN, 16)  # room above the target's label
    lines = []
    for problem in problems:
        mine = [t for (p, _), t in zip(rows, times, strict=True) if p == problem]
        points = [(x(start), y(0))] + [(x(t), y(n)) for n, t in enumerate(mine, start=1)]
        if mine:
            points.append((x(end), y(len(mine))))
        lines.append({"problem": problem, "count": len(mine),
                      "points": " ".join(f"{a:.1f},{b:.1f}" for a, b in points)})
    return {"lines": lines, "target": target, "target_y": round(y(target), 1), "top": top,
            "width": WIDTH, "height": HEIGHT, "margin": MARGIN,
            "start": _when(start) if times else "", "end": _when(end) if times else ""}


def _counts(rows: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for problem, _ in rows:
        counts[problem] = counts.get(problem, 0) + 1
    return counts


def _scale(low: float, high: float, to_low: float, to_high: float) -> Any:
    span = (high - low) or 1.0
    return lambda value: to_low + (value - low) / span * (to_high - to_low)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%d %b %H:%M UTC")


def participant_flow(db: Session, study_id: str) -> dict[str, Any]:
    """The study's flow, for a small funnel: arrival, each step someone left at, and
    inclusion, with each bar's width."""
    people = db.exec(select(Participant.status, Participant.exclusion_reason)
                     .where(Participant.study_id == study_id)).all()
    steps = [s for s in flow_steps(people) if s["dropped"] or s["status"] is None]
    arrived = steps[0]["participants"] or 1
    return {"steps": [{**s, "width": round(FLOW_BARS * s["participants"] / arrived, 1),
                       "y": i * (BAR + 2), "note": drop_note(s), "title": drop_note(s, why=True)}
                      for i, s in enumerate(steps)],
            "height": len(steps) * (BAR + 2), "bar": BAR, "label_x": FLOW_LABELS,
            "width": FLOW_LABELS + FLOW_BARS + 150}
