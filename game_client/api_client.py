"""Playing through a running server's agent API (``study_server.agent_api``) instead of
in-process: the server keeps the episode, applies the turn rules and records the events;
this side only asks the agent and posts its decisions. :class:`RemoteAttempt` is the
attempt :func:`game_client.runner.play` drives, as it drives a local one."""

from __future__ import annotations

from typing import Any

import httpx

from game_client.agents import Agent, Decision
from game_client.runner import EpisodeResult, play
from tasks import registry
from tasks.worldtest.turn import ABANDONED, MAX_INVALID, MAX_TURNS, TurnResult


class AgentAPIError(RuntimeError):
    """The server refused a request (its message says why)."""


class AgentAPIClient:
    """A thin client of ``/api/agent``."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/") + "/api/agent", timeout=timeout,
                                 transport=transport,
                                 headers={"Authorization": f"Bearer {token}"})

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(path, json=body)
        if response.status_code >= 400:
            try:
                message = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:300]
            raise AgentAPIError(f"POST {path} answered {response.status_code}: {message}")
        return response.json()

    def create_run(self, agent_kind: str, model: str | None, config: dict[str, Any]) -> int:
        body = {"agent_kind": agent_kind, "model": model, "config": config}
        return self._post("/runs", body)["agent_run_id"]

    def start_episode(self, run_id: int, problem_id: str, max_invalid: int = MAX_INVALID,
                      max_turns: int = MAX_TURNS) -> dict[str, Any]:
        return self._post(f"/runs/{run_id}/episodes", {"problem_id": problem_id,
                                                       "max_invalid": max_invalid,
                                                       "max_turns": max_turns})

    def act(self, episode_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._post(f"/episodes/{episode_id}/actions", body)

    def end(self, episode_id: int, reason: str, status: str = ABANDONED) -> dict[str, Any]:
        return self._post(f"/episodes/{episode_id}/end", {"reason": reason, "status": status})


class RemoteAttempt:
    """An attempt whose episode lives on the server: each turn is one request."""

    def __init__(self, client: AgentAPIClient, run_id: int, problem_id: str, *,
                 max_invalid: int = MAX_INVALID, max_turns: int = MAX_TURNS) -> None:
        self.client = client
        self.problem = registry.get_problem(problem_id)
        started = client.start_episode(run_id, problem_id, max_invalid, max_turns)
        self.episode_id, self._state = started["episode_id"], started["state"]

    def state(self) -> dict[str, Any]:
        return self._state

    def take(self, decision: Decision) -> TurnResult:
        answer = self.client.act(self.episode_id, {"action": decision.action,
                                                   "error": decision.error,
                                                   **decision.model_fields()})
        self._state = answer["state"]
        return TurnResult(answer["applied"], answer["action"], answer["error"])

    def end(self, status: str, reason: str) -> None:
        self._state = self.client.end(self.episode_id, reason, status)["state"]

    def summary(self) -> dict[str, Any]:
        return self._state["attempt"]


def run_remote_episode(agent: Agent, problem_id: str, client: AgentAPIClient, run_id: int, *,
                       max_turns: int = MAX_TURNS, max_invalid: int = MAX_INVALID) -> EpisodeResult:
    """One attempt played through the API, under the server's turn rules."""
    attempt = RemoteAttempt(client, run_id, problem_id, max_invalid=max_invalid,
                            max_turns=max_turns)
    return play(agent, attempt)
