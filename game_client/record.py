"""Writing a locally played or agent-played run to the store, exactly as the server does.

Every event goes through :func:`study_server.store.event_from_step`, the one mapping from a
step to an event record, so a run recorded here has the same columns as one recorded by
the real-time server or the agent API. Turns that were not applied (a model reply that
did not parse, or named an action not available) are events with ``action=None`` or the
whole reply in ``raw_reply``, ``applied=False``, ``parse_valid=False`` and no tick.
"""

from __future__ import annotations

import time
from typing import Any

from study_server.store import Store, event_from_invalid_turn, event_from_step
from tasks.worldtest.episode import DONE


def finish_status(driver: Any) -> str:
    """``done`` when the episode reached its end, ``abandoned`` otherwise."""
    return "done" if driver.phase == DONE else "abandoned"


class EpisodeRecorder:
    """Writes one episode's events; shared by the local client and the agent runner."""

    def __init__(
        self,
        store: Store,
        driver: Any,
        *,
        agent_run_id: int | None = None,
        participant_id: int | None = None,
        study_id: str | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.driver = driver
        self.problem = driver.problem
        self.ids = {"agent_run_id": agent_run_id, "participant_id": participant_id,
                    "study_id": study_id}
        self.episode_id = store.start_episode(problem=self.problem, info=info, **self.ids)
        self.seq = 0
        self.finished = False

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq - 1

    def on_step(self, step: Any, *, source: str, client_time: float | None = None,
                **model_fields: Any) -> None:
        """Record one applied step."""
        self.store.write_event(event_from_step(
            step, episode_id=self.episode_id, seq=self._next_seq(), problem_id=self.problem.id,
            source=source, client_time=client_time, **self.ids, **model_fields,
        ))

    def on_invalid(self, *, raw_reply: str, error: str, **model_fields: Any) -> None:
        """Record a turn that was not applied (grounding failure): no tick, no frame."""
        self.store.write_event(event_from_invalid_turn(
            episode_id=self.episode_id, seq=self._next_seq(), problem_id=self.problem.id,
            phase=self.driver.phase, raw_reply=raw_reply, error=error, **self.ids, **model_fields,
        ))

    def on_raw(self, text: str, *, status: str, reason: str,
               client_time: float | None = None) -> None:
        """Record an input that arrived but was not applied (dropped or rejected)."""
        self.store.write_raw_input({
            "episode_id": self.episode_id, "participant_id": self.ids["participant_id"],
            "received_at": time.time(), "client_time": client_time, "text": text,
            "status": status, "reason": reason,
        })

    def on_finish(self, driver: Any, *, status: str | None = None,
                  info: dict[str, Any] | None = None) -> None:
        """Write how the episode ended (once)."""
        if self.finished:
            return
        self.finished = True
        score = driver.score
        if driver.phase != DONE and driver.problem.challenge != "sandbox":
            score = 0.0  # an attempt that never finished scores 0 (METRICS.md)
        self.store.finish_episode(
            self.episode_id, status=status or finish_status(driver), phase=driver.phase,
            score=score, info={**driver.outcome(), **(info or {})},
        )
