"""Playing through a running server's agent API (``study_server.agent_api``) instead of
in-process: the server keeps the episode and records the events; this side only asks
the agent and posts its decisions."""

from __future__ import annotations

from typing import Any

import httpx

from game_client.agents import Agent, Turn
from game_client.bridge.provider import ProviderError
from game_client.runner import EpisodeResult
from tasks import registry


class AgentAPIError(RuntimeError):
    """The server refused a request (its message says why)."""


class AgentAPIClient:
    """A thin client of ``/api/agent``."""

    def __init__(self, base_url: str, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/") + "/api/agent", timeout=timeout,
                                 transport=transport)

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

    def start_episode(self, run_id: int, problem_id: str, max_invalid: int) -> dict[str, Any]:
        return self._post(f"/runs/{run_id}/episodes", {"problem_id": problem_id, "max_invalid": max_invalid})

    def act(self, episode_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._post(f"/episodes/{episode_id}/actions", body)

    def end(self, episode_id: int, reason: str) -> dict[str, Any]:
        return self._post(f"/episodes/{episode_id}/end", {"reason": reason})


def run_remote_episode(agent: Agent, problem_id: str, client: AgentAPIClient, run_id: int, *,
                       max_turns: int = 1000, max_invalid: int = 5) -> EpisodeResult:
    """One attempt played through the API; the server counts invalid replies and ends the
    attempt after ``max_invalid`` in a row."""
    started = client.start_episode(run_id, problem_id, max_invalid)
    episode_id, state = started["episode_id"], started["state"]
    agent.start(registry.get_problem(problem_id))
    result = EpisodeResult(problem_id, "done", None, 0, 0, episode_id)
    last_action, error = None, None
    while not state["ended"]:
        if result.turns >= max_turns:
            state = client.end(episode_id, f"no end after {max_turns} turns")["state"]
            result.status = "abandoned"
            break
        try:
            decision = agent.decide(Turn(result.turns, state, last_action, error))
        except ProviderError as problem:
            state = client.end(episode_id, str(problem))["state"]
            result.status, result.reason = "error", str(problem)
            break
        answer = client.act(episode_id, {"action": decision.action, "error": decision.error,
                                         **decision.model_fields()})
        state, error = answer["state"], answer["error"]
        result.turns += 1
        result.invalid += not answer["applied"]
        result.cost += decision.cost or 0.0
        last_action = decision.action if answer["applied"] else last_action
    if state["phase"] != "done" and result.status == "done":
        result.status = "abandoned"
    result.score = state["score"] if state["phase"] == "done" else 0.0
    return result
