"""The agent turn: a model (or any program) plays one action per reply, with no clock.

:class:`AgentTurns` is that rule, once, for both agent drivers: the in-process runner
(``game_client.runner``) and the server's agent API (``study_server.agent_api``). One
turn takes the action a reply named and either applies it to the episode or, when it
names none or one not available now, reports it as an invalid turn without stepping the
environment (grounding accuracy, docs/metrics.md). The attempt ends:

* ``done`` when the episode ends;
* ``abandoned`` after ``max_invalid`` invalid turns in a row, or after ``max_turns``
  turns without an end;
* ``error`` when applying an action raised (an environment's runtime error, or a step
  over its limit: :class:`tasks.limits.StepLimitExceeded`, whose reason says so), or when
  the driver says so (the model's provider could not answer);
* ``interrupted`` when the driver stops it (the operator pressed Ctrl-C, a batch budget
  ran out, the provider refused the key);
* ``abandoned`` when the driver ends it for the model (it gave up, or spent its attempt's
  budget).

An attempt that did not finish scores 0 (:attr:`Episode.final_score`). One ended by its
driver for a cause outside the model (the provider, the operator) is ``resumable``:
:meth:`AgentTurns.reopen` continues it where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tasks.limits import StepLimitExceeded
from tasks.worldtest.episode import Episode, Step
from tasks.worldtest.protocol import GRIDSTUDY, Protocol
from tasks.worldtest.tick import AUTO, Sink

MAX_INVALID = 5
"""Invalid turns in a row that end an attempt."""
MAX_TURNS = 1000
"""Turns after which an unfinished attempt is abandoned."""
ACTIVE, DONE, ABANDONED, ERROR, INTERRUPTED = "active", "done", "abandoned", "error", "interrupted"
FINISHED = (DONE, ABANDONED)
"""Statuses of an attempt that is over for good: it counts, and a rerun leaves it."""
AGENT = "agent"
"""The ``source`` of every event an agent turn writes."""


def _frame_shown(step: Step) -> dict[str, Any]:
    """One of a turn's stacked frames: its tick, the action that led to it, its text."""
    return {"tick": step.index, "action": step.action, "text": step.observation.text}


def holds_its_place(status: str, info: dict[str, Any] | None) -> bool:
    """Whether a stored attempt holds its place (its run index) in its agent run: over
    for good, being played, or to be continued. Otherwise (an error that cannot be
    resumed) a new attempt takes its run index."""
    return status in (*FINISHED, ACTIVE) or resumable(status, info)


def resumable(status: str, info: dict[str, Any] | None) -> bool:
    """Whether a rerun continues a stored attempt: one interrupted (unless it says it
    cannot be continued: a model on the real-time clock), or ended by a failure outside
    the model that said so (its provider's, not the environment's)."""
    info = info or {}
    if status == INTERRUPTED:
        return info.get("resumable") is not False
    return status == ERROR and bool(info.get("resumable"))


@dataclass
class TurnResult:
    """What one turn did: the applied action's canonical text and step, or why the reply
    was not applied."""

    applied: bool
    action: str | None = None
    error: str | None = None
    step: Step | None = None


class AgentTurns:
    """One attempt played turn by turn; counts turns, invalid turns and the current
    streak of invalid ones (a rebuilt attempt starts from its stored counts)."""

    def __init__(
        self,
        episode: Episode,
        sink: Sink | None = None,
        *,
        max_invalid: int = MAX_INVALID,
        max_turns: int = MAX_TURNS,
        turns: int = 0,
        invalid: int = 0,
        streak: int = 0,
        status: str = ACTIVE,
        reason: str | None = None,
        resumable: bool = False,
        protocol: Protocol = GRIDSTUDY,
        interaction_turns: int = 0,
    ) -> None:
        if max_invalid < 1 or max_turns < 1:
            raise ValueError("max_invalid and max_turns must be positive")
        self.episode = episode
        self.sink = sink
        self.protocol = protocol
        self.interaction_turns = interaction_turns
        """Turns taken in the interaction phase (the profile's cap counts them)."""
        self.stacked: list[dict[str, Any]] = []
        """The frames the last turn produced, when the profile stacks them."""
        self.max_invalid = protocol.max_invalid or max_invalid
        self.max_turns = max_turns
        self.turns, self.invalid, self.streak = turns, invalid, streak
        self.status, self.reason = status, reason
        self.resumable = resumable

    @property
    def ended(self) -> bool:
        return self.status != ACTIVE

    def take(self, action: Any, *, error: str | None = None, raw_reply: str | None = None,
             **fields: Any) -> TurnResult:
        """One turn: ``action`` is the text the reply named (None: it named none, and
        ``error`` says why). ``fields`` are the turn's model fields (tokens, cost,
        latency). Raises ``ValueError`` once the attempt has ended."""
        if self.ended:
            raise ValueError(f"the attempt is over ({self.status}); start another")
        self.turns += 1
        phase = self.episode.phase
        self.interaction_turns += phase == "interaction"
        self.stacked = []
        action = self.protocol.canonical(action, self.episode)
        why = self.why_invalid(action, error)
        stand_in = self.protocol.unparsed(self.episode) if action is None else None
        if stand_in is not None:  # the profile plays a reply without an action as noop
            self.invalid += 1
            result = self._apply(stand_in, raw_reply, {**fields, "parse_valid": False})
        elif why is None and self.protocol.does_nothing(action, self.episode):
            result = self._invalid(action, raw_reply, f"{action} does nothing in this test",
                                   fields)
        else:
            result = self._invalid(action, raw_reply, why, fields) if why else \
                self._apply(action, raw_reply, fields)
        self._follow_up(result, phase)
        self._check_limits()
        return result

    def applied_elsewhere(self) -> None:
        """A turn whose action the driver applied itself (the real-time clock applies a
        model's action at its tick, ``game_client.realtime``): counted, the streak of
        invalid turns ends, and the turn limit applies."""
        self.turns += 1
        self.streak = 0
        self._check_limits()

    def refused_elsewhere(self, action: Any, raw_reply: str | None, why: str,
                          fields: dict[str, Any]) -> TurnResult:
        """A turn whose action the driver could not apply (:meth:`why_invalid`, or its
        clock refused it): counted, recorded and limited as any invalid turn."""
        self.turns += 1
        result = self._invalid(action, raw_reply, why, fields)
        self._check_limits()
        return result

    def why_invalid(self, action: Any, reported: str | None = None) -> str | None:
        """Why ``action`` cannot be applied now, or None."""
        if action is None:
            return str(reported or "the reply names no action")
        if not isinstance(action, str) or not self.episode.is_allowed(action):
            allowed = ", ".join(self.protocol.offered(self.episode))
            return f"{action} is not available now; available: {allowed}"
        return self.protocol.refusal(action, self.episode)

    def _follow_up(self, result: TurnResult, phase_before: str) -> None:
        """What the profile applies after the model's action (stacked no-ops, the submit
        after an option, the test at the interaction cap), as automatic steps."""
        if self.ended:
            return
        applied = result.action or ""
        if not result.applied and self.protocol.cap_reached(self.episode, self.interaction_turns):
            follow = ["go-to-test"]
        elif result.applied:
            follow = self.protocol.follow_up(self.episode, applied, phase_before,
                                             self.interaction_turns)
        else:
            follow = []
        if result.step is not None and self.protocol.stack_frames and follow[:1] == ["noop"]:
            self.stacked.append(_frame_shown(result.step))
        for text in follow:
            step = self.episode.apply(text)
            if self.sink is not None:
                self.sink.applied(step, source=AUTO)
            if text == "noop" and self.protocol.stack_frames:
                self.stacked.append(_frame_shown(step))
            if step.done:
                self.end(DONE)
                return

    def _apply(self, action: str, raw_reply: str | None, fields: dict[str, Any]) -> TurnResult:
        phase = self.episode.phase
        try:
            step = self.episode.apply(action)
        except Exception as error:  # an environment's runtime error ends this attempt only
            message = f"{type(error).__name__}: {error}"
            if self.sink is not None:
                self.sink.failed(action, phase=phase, source=AGENT, error=message,
                                 raw_reply=raw_reply, parse_valid=True, **fields)
            plain = error.plain if isinstance(error, StepLimitExceeded) else "the environment failed"
            self.end(ERROR, f"{plain} on {action}: {message}")
            return TurnResult(False, error=message)
        if fields.get("parse_valid", True):
            self.streak = 0
        if self.sink is not None:
            self.sink.applied(step, source=AGENT, raw_reply=raw_reply,
                              **{"parse_valid": True, **fields})
        if step.done:
            self.end(DONE)
        return TurnResult(True, step.action, step=step)

    def _invalid(self, action: Any, raw_reply: str | None, why: str,
                 fields: dict[str, Any]) -> TurnResult:
        self.invalid += 1
        self.streak += 1
        if self.sink is not None:
            reply = raw_reply or (action if isinstance(action, str) else "")
            self.sink.invalid(phase=self.episode.phase, raw_reply=reply, error=why, **fields)
        if self.streak >= self.max_invalid:
            self._check_limits()
        return TurnResult(False, error=why)

    def end(self, status: str, reason: str | None = None, *, resumable: bool = False) -> None:
        """End the attempt (once): ``done``, ``abandoned``, ``error`` or ``interrupted``,
        with a reason; ``resumable`` when a rerun may continue it."""
        if self.ended:
            return
        self.status, self.reason, self.resumable = status, reason, resumable
        if self.sink is not None:
            info: dict[str, Any] = {"turns": self.turns, "invalid": self.invalid,
                                    "resumable": resumable}
            if reason:
                info["reason"] = reason
            if self.protocol is not GRIDSTUDY:
                info["protocol"] = self.protocol.name
                info["protocol_score"] = self.protocol.score(self.episode)
                # the harness's own reading: its clock counts every test turn, the submit's
                answered = self.turns - self.interaction_turns - 1
                info["protocol_score_as_run"] = self.protocol.score(self.episode, answered)
            self.sink.finished(self.episode, status=status, info=info)

    def reopen(self) -> None:
        """Continue an attempt that was ended ``resumable``, from where it stopped. One
        whose record already reaches its end (its process died after the last turn and
        before the attempt was marked ended) ends now, as that turn would have ended it."""
        if self.status in FINISHED:
            raise ValueError(f"the attempt is over ({self.status}) and cannot be resumed")
        self.status, self.reason, self.resumable = ACTIVE, None, False
        if self.sink is not None:
            self.sink.reopened()
        if self.episode.done:
            self.end(DONE)
        self._check_limits()

    def _check_limits(self) -> None:
        why = None if self.ended else self.limit_reached()
        if why:
            self.end(ABANDONED, why)

    def limit_reached(self) -> str | None:
        """Why the model's turns are over (too many invalid replies in a row, or turns
        without an end), or None."""
        if self.streak >= self.max_invalid:
            return f"{self.streak} invalid replies in a row"
        if self.turns >= self.max_turns:
            return f"no end after {self.max_turns} turns"
        cap = self.protocol.test_step_cap
        if cap and self.episode.phase != "interaction" and \
                self.turns - self.interaction_turns >= cap:
            return f"no end after {cap} turns of the test (the {self.protocol.name} profile's cap)"
        return None

    def state(self) -> dict[str, Any]:
        """What the agent is shown: the episode's view, the observation's ``text`` and
        ``info``, the ``actions`` allowed now (as patterns; none once ended), ``ended``,
        and the ``attempt``'s :meth:`summary`. The agent API sends exactly this."""
        episode = self.episode
        state = {**episode.view(), "text": episode.observation.text,
                 "actions": [] if self.ended else self.protocol.offered(episode),
                 "info": episode.observation.info, "ended": self.ended,
                 "attempt": self.summary(), "protocol": self.protocol.name,
                 "goal_format": "full" if self.protocol.planning_full_goal else "masked"}
        if self.stacked:
            state["stacked"] = self.stacked
        return state

    def summary(self) -> dict[str, Any]:
        """How the attempt stands: status, reason, whether a rerun may continue it,
        turns, invalid turns and its score (0 for an attempt that did not finish)."""
        return {"status": self.status, "reason": self.reason, "resumable": self.resumable,
                "turns": self.turns, "invalid": self.invalid, "score": self.episode.final_score}
