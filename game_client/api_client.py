"""Playing through a running server's agent API (``study_server.agent_api``) instead of
in-process: the server keeps the episode, applies the turn rules and records the events;
this side only asks the agent and posts its decisions. :class:`RemoteAttempt` is the
attempt :func:`game_client.runner.play` drives, as it drives a local one, and
:class:`AgentAPIClient` keeps a batch's runs and attempts there as
``game_client.batch.LocalRecords`` keeps them in a store, continuing the stored attempts
the server says can be resumed."""

from __future__ import annotations

import collections
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from game_client import owner
from game_client.agents import Agent, Decision
from game_client.batch import Job, StoredEpisode
from game_client.runner import EpisodeResult, Spending, play, recorded_turn
from records.rebuild import CannotResume
from records.remote import Backoff, WaitTooLong, retry_after_seconds
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
    """The server refused a request (its message says why, ``answer`` is the whole JSON
    answer when there was one)."""

    def __init__(self, message: str, status: int | None = None,
                 answer: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.answer = answer or {}


PATIENCE = 300.0
"""Seconds a client waits for a server that answered before and now does not (restarted,
killed and started again, a worker's death behind nginx, its database away) before it
gives up on a request."""
AWAY = (httpx.codes.BAD_GATEWAY, httpx.codes.SERVICE_UNAVAILABLE, httpx.codes.GATEWAY_TIMEOUT)
"""Answers that mean the server is away for a moment: nginx with no worker to send to, or
the server's storage away (guarantee 1.6)."""
AGAIN = Backoff(base=0.5, cap=5.0)
"""The waits between tries: 0.5, 1, 2, 4, then 5 s (less up to half, at random, so that
many clients do not come back at once), or what the server's ``Retry-After`` asks."""


class AgentAPIClient:
    """A thin client of ``/api/agent``. Once the server has answered, a request it does
    not answer (no connection, or :data:`AWAY`) is sent again, every few seconds, for
    up to ``patience`` seconds; every request may be sent again (the agent API answers
    one it already did as it did, ``study_server.agent_api``). ``sleep`` waits between
    tries and returns True when the caller is stopping (a batch's Ctrl-C): the request
    then fails at once."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None, *, patience: float = PATIENCE,
                 sleep: Callable[[float], bool] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.reaped: list[int] = []
        """Attempts a dead client left active, ended here to be resumed."""
        self.url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.url + "/api/agent", timeout=timeout,
                                 transport=transport,
                                 headers={"Authorization": f"Bearer {token}"})
        self.patience = patience
        self.sleep = sleep or (lambda seconds: bool(time.sleep(seconds)))
        self.say = say or _say
        self.answered = False
        """Whether the server has answered once (a wrong address is said at once)."""
        self.rng = random.Random()
        self._away: float | None = None
        """Since when (monotonic) the server has not answered, while it has not."""
        self._lock = threading.Lock()

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        started, tries = time.monotonic(), 0
        while True:
            try:
                response = self.http.request(method, path, json=body)
                why = None if response.status_code not in AWAY else \
                    f"answered {response.status_code}: {_message(response)}"
            except httpx.HTTPError as error:
                response, why = None, f"failed: {error}"
            if why is None:
                break
            if not self.answered or time.monotonic() - started >= self.patience:
                raise AgentAPIError(f"{method} {path} {why}", _status(response))
            self._gone(why)
            asked = None if response is None else \
                retry_after_seconds(response.headers.get("Retry-After"))
            try:
                pause = AGAIN.delay(tries, self.rng, asked)
            except WaitTooLong:
                raise AgentAPIError(f"{method} {path} {why}, asking to wait {asked:.0f} s",
                                    _status(response)) from None
            if self.sleep(pause):
                raise AgentAPIError(f"{method} {path} {why}; stopped while waiting for the "
                                    "server", _status(response))
            tries += 1
        self._back()
        if response.status_code >= 400:
            message = _message(response)
            if response.status_code == httpx.codes.GONE:  # ended: it cannot go on (agent_api)
                raise CannotResume(message)
            raise AgentAPIError(f"{method} {path} answered {response.status_code}: {message}",
                                response.status_code, _answer(response))
        return response.json()

    def _gone(self, why: str) -> None:
        with self._lock:
            if self._away is not None:
                return
            self._away = time.monotonic()
        patience = f"{self.patience / 60:g} min" if self.patience >= 60 else f"{self.patience:g} s"
        self.say(f"The server at {self.url} {why}; trying again for up to {patience} (its "
                 "attempts go on where they stood).")

    def _back(self) -> None:
        self.answered = True
        with self._lock:
            away, self._away = self._away, None
        if away is not None:
            self.say(f"The server at {self.url} answers again, after "
                     f"{time.monotonic() - away:.0f} s.")

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
        return Spending(body["cost"], body["tokens"], body.get("uncounted", 0))

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


def _status(response: httpx.Response | None) -> int | None:
    return None if response is None else response.status_code


def _answer(response: httpx.Response) -> dict[str, Any]:
    try:
        answer = response.json()
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _message(response: httpx.Response) -> str:
    """The server's words, or a proxy's (nginx's HTML page: its status's name)."""
    message = _answer(response).get("error")
    if isinstance(message, str):
        return message
    if response.headers.get("content-type", "").startswith("text/html"):
        return response.reason_phrase
    return response.text[:300]


def _say(line: str) -> None:
    from tqdm import tqdm

    try:  # beside a batch's progress bar
        tqdm.write(line, file=sys.stderr)
    except OSError:  # the terminal is gone (SIGHUP)
        pass


KEPT_TURNS = 200
"""The turns an attempt keeps a copy of, to send again those a server that was killed
answered but did not store (:meth:`RemoteAttempt.take`)."""


class RemoteAttempt:
    """An attempt whose episode lives on the server: each turn is one request, naming its
    index (``turn``), so that a turn sent again is never applied twice."""

    def __init__(self, client: AgentAPIClient, episode_id: int, state: dict[str, Any],
                 recorded: list[Any] | None = None) -> None:
        self.client = client
        self.episode_id, self._state = episode_id, state
        self.problem = registry.get_problem(state["problem_id"])
        self.recorded = recorded or []
        self.sent: collections.OrderedDict[int, tuple[dict[str, Any], TurnResult]] = \
            collections.OrderedDict()
        """The last :data:`KEPT_TURNS` turns sent, by index, with what each did."""

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
        body = {"action": decision.action, "error": decision.error, **decision.model_fields(),
                "turn": self._state["attempt"]["turns"]}
        try:
            return self._send(body)
        except AgentAPIError as error:
            held = error.answer.get("turns")
            if error.status != httpx.codes.CONFLICT:
                raise
            if held is None:  # ended meanwhile (the batch is stopping)
                return None
        # the server holds fewer turns than it answered: it was killed before it stored
        # the last ones; they are sent again from this copy, then this one
        missing = range(held, body["turn"])
        if any(turn not in self.sent for turn in missing):
            raise AgentAPIError(f"episode {self.episode_id}: the server lost turns {held} to "
                                f"{body['turn'] - 1}, which this client no longer holds")
        for turn in missing:
            again, result = self.sent[turn]
            if self._send(again) != result:
                raise AgentAPIError(f"episode {self.episode_id}: turn {turn} sent again did "
                                    "not do what it did the first time")
        return self._send(body)

    def _send(self, body: dict[str, Any]) -> TurnResult:
        answer = self.client.act(self.episode_id, body)
        self._state = answer["state"]
        result = TurnResult(answer["applied"], answer["action"], answer["error"])
        self.sent[body["turn"]] = (body, result)
        while len(self.sent) > KEPT_TURNS:
            self.sent.popitem(last=False)
        return result

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
