"""The frames an attempt shows, as hashes: what a participant's browser reports as it
plays, and what the server recomputes from the same inputs to check the browser's word.

In browser play the participant's page runs this package (the very same files, under
Pyodide): a :class:`tasks.worldtest.tick.TickEngine` reporting to a :class:`PlayLog`,
whose entries (every applied action with the hash of the frame it showed, every input
refused) the page sends to the server in batches; the server replays the actions on its
own engine with the same seed and compares the hashes (``study_server.browser_play``),
so the record stays the server's. :func:`frame_hashes` is that replay, for both sides;
:func:`first_difference` says where two runs part.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tasks import registry
from tasks.core import frame_hash
from tasks.worldtest.episode import EnvFactory, Episode
from tasks.worldtest.problem import Problem


def played(problem: Problem, actions: Iterable[str],
           make_env: EnvFactory = registry.make) -> Iterator[tuple[str, float]]:
    """The hash of the frame ``problem`` starts on, then of the frame after each of
    ``actions`` (applied in order to a fresh episode; a refused action raises
    ``ValueError``, as :meth:`Episode.apply` does), each with the seconds its step took
    (0 for the start)."""
    episode = Episode(problem, make_env)
    yield frame_hash(episode.observation.frame), 0.0
    for action in actions:
        began = time.perf_counter()
        frame = episode.apply(action).observation.frame
        took = time.perf_counter() - began
        yield frame_hash(frame), took


def frame_hashes(problem: Problem, actions: Iterable[str],
                 make_env: EnvFactory = registry.make) -> list[str]:
    """The hashes of the frames :func:`played` shows."""
    return [shown for shown, _ in played(problem, actions, make_env)]


def first_difference(expected: Sequence[str], reported: Sequence[str]) -> int | None:
    """The first index where the two runs' hashes differ (a missing hash differs), or
    ``None`` when they agree throughout."""
    for index in range(max(len(expected), len(reported))):
        if index >= len(expected) or index >= len(reported) or expected[index] != reported[index]:
            return index
    return None


class PlayLog:
    """The sink a browser's tick engine reports to: one entry per applied action
    (``{"n", "tick", "action", "source", "hash", "t"}``), per failed step (``"error"``
    instead of ``"hash"``) and per refused input (``{"n", "refused", "text", "reason",
    "t"}``), numbered by ``n`` from 0 in the order they happened. ``take`` hands over
    the entries not yet taken (the next batch to send); ``entries`` keeps them all
    (a reload sends none twice: the server skips what it has)."""

    def __init__(self, first: int = 0) -> None:
        self.first = first
        """The number of the first entry (a page that rebuilt its attempt from the server's
        record numbers on from what the server holds)."""
        self.entries: list[dict[str, Any]] = []
        self.sent = 0
        self.ended: dict[str, Any] | None = None

    def _add(self, **entry: Any) -> None:
        self.entries.append({"n": self.first + len(self.entries), **entry})

    def since(self, number: int, most: int) -> list[dict[str, Any]]:
        """At most ``most`` entries from number ``number`` on (what the server has not
        acknowledged yet)."""
        start = max(0, number - self.first)
        return self.entries[start:start + most]

    def take(self) -> list[dict[str, Any]]:
        batch, self.sent = self.entries[self.sent:], len(self.entries)
        return batch

    def acknowledged(self, text: str, **_: Any) -> None:
        """Applied at the next local tick: nothing to say until then."""

    def applied(self, step: Any, *, source: str, client_time: float | None = None,
                **_: Any) -> None:
        self._add(tick=step.index, action=step.action, source=source,
                  hash=frame_hash(step.observation.frame), t=client_time)

    def failed(self, action: str, *, source: str, error: str,
               client_time: float | None = None, **_: Any) -> None:
        self._add(tick=None, action=action, source=source, error=error, t=client_time)

    def refused(self, text: str, *, status: str, reason: str,
                client_time: float | None = None, **_: Any) -> None:
        self._add(refused=status, text=text, reason=reason, t=client_time)

    def invalid(self, **_: Any) -> None:
        raise TypeError("a person's play log has no model turns")

    def finished(self, episode: Any, *, status: str, info: dict[str, Any]) -> None:
        self.ended = {"status": status}

    def reopened(self) -> None:
        self.ended = None


def replay_jobs(jobs: str) -> str:
    """Each job of the JSON list ``jobs`` (``{"problem": id, "actions": [...]}``) replayed
    here: its hashes and the mean time of one step in microseconds, as JSON (the mean:
    a browser rounds its clock to a tenth of a millisecond or coarser). The
    entry point a JavaScript host (Node or a browser) calls to compare this engine's
    frames with the server's."""
    out = []
    for job in json.loads(jobs):
        run = list(played(registry.get_problem(job["problem"]), job["actions"]))
        steps = len(run) - 1
        out.append({"problem": job["problem"], "hashes": [shown for shown, _ in run],
                    "mean_step_us": round(sum(took for _, took in run) / steps * 1e6, 1)
                    if steps else None})
    return json.dumps(out)


class LocalPlay:
    """An attempt ticked in the participant's browser: the problem's episode under a
    :class:`~tasks.worldtest.tick.TickEngine` reporting to a :class:`PlayLog`, the same
    tick rule as the server's (an input is applied at the next tick, an automatic
    ``noop`` otherwise). The page calls it through Pyodide with text in and JSON out.

    ``record`` (JSON: the actions the server already holds, in order, and ``next``, the
    number of its next entry) rebuilds an attempt the page left (a reload): its actions
    are applied again, and the log numbers on from ``next``."""

    def __init__(self, problem_id: str, record: str = "", clock: Any = time.time) -> None:
        from tasks.worldtest.tick import TickEngine

        held = json.loads(record) if record else {"actions": [], "next": 0}
        self.episode = Episode(registry.get_problem(problem_id))
        for action in held["actions"]:
            self.episode.apply(action)
        self.log = PlayLog(first=held["next"])
        self.engine = TickEngine(self.episode, self.log, clock=clock)

    def admit(self, text: str, client_time: float) -> str:
        """Queue an input for the next tick: ``queued`` or why it was refused."""
        return self.engine.admit(text, client_time)

    def tick(self, count: int = 1) -> str:
        """``count`` ticks (more than one: those a page's slowed timer missed, see
        ``game.js``), fewer if the attempt ends; then the view to draw (JSON), as the
        server would send it."""
        for _ in range(max(1, count)):
            if self.engine.tick().done:
                break
        return json.dumps(self.engine.view())

    def view(self) -> str:
        return json.dumps(self.engine.view())

    def since(self, number: int, most: int) -> str:
        """The log's entries from ``number`` on, at most ``most`` (JSON)."""
        return json.dumps(self.log.since(number, most))

    def logged(self) -> int:
        """The number the next entry will have."""
        return self.log.first + len(self.log.entries)
