"""Playing through a running server's agent API (``study_server.agent_api``) instead of
in-process: the server keeps the episode, applies the turn rules and records the events;
this side only asks the agent and posts its decisions. :class:`RemoteAttempt` is the
attempt :func:`game_client.runner.play` drives, as it drives a local one, and
:class:`AgentAPIClient` keeps a batch's runs and attempts there as
``game_client.batch.LocalRecords`` keeps them in a store, continuing the stored attempts
the server says can be resumed."""

from __future__ import annotations

from typing import Any

import httpx

from game_client import owner
from game_client.agents import Agent, Decision
from game_client.batch import Job, StoredEpisode
from game_client.runner import EpisodeResult, Spending, play, recorded_turn
from records.rebuild import CannotResume
from records.store import RunIndexTaken
from tasks import registry
from tasks.worldtest.turn import (
    ABANDONED,
    ACTIVE,
    INTERRUPTED,
    MAX_INVALID,
    MAX_TURNS,
    TurnResult,
)


class AgentAPIError(RuntimeError):
    """The server refused a request (its message says why)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AgentAPIClient:
    """A thin client of ``/api/agent``."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.reaped: list[int] = []
        """Attempts a dead client left active, ended here to be resumed."""
        self.http = httpx.Client(base_url=base_url.rstrip("/") + "/api/agent", timeout=timeout,
                                 transport=transport,
                                 headers={"Authorization": f"Bearer {token}"})

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = self.http.request(method, path, json=body)
        except httpx.HTTPError as error:
            raise AgentAPIError(f"{method} {path} failed: {error}") from None
        if response.status_code >= 400:
            try:
                message = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:300]
            if response.status_code == httpx.codes.GONE:  # ended: it cannot go on (agent_api)
                raise CannotResume(message)
            raise AgentAPIError(f"{method} {path} answered {response.status_code}: {message}",
                                response.status_code)
        return response.json()

    def create_run(self, agent_kind: str, model: str | None, config: dict[str, Any]) -> int:
        """The run with this configuration (the server makes it when new)."""
        body = {"agent_kind": agent_kind, "model": model, "config": config}
        return self._request("POST", "/runs", body)["agent_run_id"]

    def runs_like(self, kind: str, model: str | None) -> list[tuple[int, dict[str, Any]]]:
        """This token's runs of this kind and model, newest first, with their configs."""
        from urllib.parse import urlencode

        query = urlencode({"agent_kind": kind, **({"model": model} if model else {})})
        runs = self._request("GET", f"/runs?{query}")["runs"]
        return [(r["agent_run_id"], r["config"]) for r in runs]

    def episodes(self, run_id: int) -> list[StoredEpisode]:
        """The run's attempts, after ending as ``interrupted`` (to be resumed) those a
        client process left active when it died (:mod:`game_client.owner`)."""
        rows = self._request("GET", f"/runs/{run_id}/episodes")["episodes"]
        dead = [r for r in rows if r["status"] == ACTIVE
                and not owner.alive(r.get("owner"), r.get("last_seen") or 0.0)]
        for row in dead:
            self.end(row["episode_id"], owner.orphaned(row.get("owner")), INTERRUPTED)
        self.reaped += [r["episode_id"] for r in dead]
        if dead:
            rows = self._request("GET", f"/runs/{run_id}/episodes")["episodes"]
        return [StoredEpisode(r["episode_id"], r["problem_id"], r["status"],
                              {"resumable": r["resumable"], "run_index": r["run_index"]})
                for r in rows]

    def spent(self, run_id: int) -> Spending:
        """What the run's recorded turns cost, over every invocation."""
        body = self._request("GET", f"/runs/{run_id}/spending")
        return Spending(body["cost"], body["tokens"])

    def start_episode(self, run_id: int, problem_id: str, max_invalid: int = MAX_INVALID,
                      max_turns: int = MAX_TURNS, run_index: int | None = None) -> dict[str, Any]:
        """A new attempt; with ``run_index``, that run of the problem claimed for it:
        :class:`RunIndexTaken` when another client started it first (the server answers
        409)."""
        index = {} if run_index is None else {"run_index": run_index}
        try:
            return self._request("POST", f"/runs/{run_id}/episodes", {
                "problem_id": problem_id, "max_invalid": max_invalid, "max_turns": max_turns,
                **index, "owner": owner.me()})
        except AgentAPIError as error:
            if error.status == httpx.codes.CONFLICT:
                raise RunIndexTaken(str(error)) from None
            raise

    def resume(self, episode_id: int) -> dict[str, Any]:
        return self._request("POST", f"/episodes/{episode_id}/resume", {"owner": owner.me()})

    def open_attempt(self, job: Job) -> RemoteAttempt:
        """A batch's job on the server: a new attempt, or a stored one continued."""
        if job.episode_id is not None:
            return RemoteAttempt.resume(self, job.episode_id)
        problem = registry.get_problem(job.problem_id)
        return RemoteAttempt.start(self, job.run.agent_run_id, job.problem_id,
                                   max_invalid=job.run.max_invalid,
                                   max_turns=job.run.max_turns(problem), run_index=job.run_index)

    def act(self, episode_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", f"/episodes/{episode_id}/actions", body)

    def end(self, episode_id: int, reason: str, status: str = ABANDONED) -> dict[str, Any]:
        return self._request("POST", f"/episodes/{episode_id}/end",
                             {"reason": reason, "status": status})


class RemoteAttempt:
    """An attempt whose episode lives on the server: each turn is one request."""

    def __init__(self, client: AgentAPIClient, episode_id: int, state: dict[str, Any],
                 recorded: list[Any] | None = None) -> None:
        self.client = client
        self.episode_id, self._state = episode_id, state
        self.problem = registry.get_problem(state["problem_id"])
        self.recorded = recorded or []

    @classmethod
    def start(cls, client: AgentAPIClient, run_id: int, problem_id: str, *,
              max_invalid: int = MAX_INVALID, max_turns: int = MAX_TURNS,
              run_index: int | None = None) -> RemoteAttempt:
        started = client.start_episode(run_id, problem_id, max_invalid, max_turns, run_index)
        return cls(client, started["episode_id"], started["state"])

    @classmethod
    def resume(cls, client: AgentAPIClient, episode_id: int) -> RemoteAttempt:
        resumed = client.resume(episode_id)
        return cls(client, episode_id, resumed["state"],
                   [recorded_turn(row) for row in resumed["turns"]])

    def state(self) -> dict[str, Any]:
        return self._state

    def take(self, decision: Decision) -> TurnResult | None:
        try:
            answer = self.client.act(self.episode_id, {"action": decision.action,
                                                       "error": decision.error,
                                                       **decision.model_fields()})
        except AgentAPIError as error:
            if error.status == 409:  # ended meanwhile (the batch is stopping)
                return None
            raise
        self._state = answer["state"]
        return TurnResult(answer["applied"], answer["action"], answer["error"])

    def end(self, status: str, reason: str, *, resumable: bool = False) -> None:
        self._state = self.client.end(self.episode_id, reason, status)["state"]

    def summary(self) -> dict[str, Any]:
        return self._state["attempt"]


def run_remote_episode(agent: Agent, problem_id: str, client: AgentAPIClient, run_id: int, *,
                       max_turns: int = MAX_TURNS, max_invalid: int = MAX_INVALID) -> EpisodeResult:
    """One attempt played through the API, under the server's turn rules."""
    attempt = RemoteAttempt.start(client, run_id, problem_id, max_invalid=max_invalid,
                                  max_turns=max_turns)
    return play(agent, attempt)
