"""Any OpenAI-compatible chat-completions endpoint, over httpx.

OpenAI, vLLM, Ollama, llama.cpp's server and OpenRouter all answer
``POST {base_url}/chat/completions``. :class:`ChatProvider` sends one conversation and
returns the reply with its token usage and cost. Rate limits (429) and server errors
(5xx), timeouts and dropped connections are retried with exponential backoff and jitter,
waiting at least what a ``Retry-After`` header asks; other errors fail at once with the
server's message. Cost comes from a :class:`PriceTable` of per-million-token prices.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ProviderError(RuntimeError):
    """The endpoint could not give a reply (after the retries, when retrying made sense)."""


@dataclass(frozen=True)
class Prices:
    """US dollars per million prompt (input) and completion (output) tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


@dataclass
class PriceTable:
    """Prices by model name; a model not in the table has no cost (None), not 0."""

    prices: dict[str, Prices] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read ``{"model": {"input": 3.0, "output": 15.0}, ...}`` from a JSON file."""
        try:
            data = json.loads(Path(path).read_text())
            return cls({name: Prices(float(p["input"]), float(p["output"])) for name, p in data.items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"{path}: not a price table ({error}); expected JSON like "
                '{"gpt-4o": {"input": 2.5, "output": 10.0}}'
            ) from None

    def cost(self, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        prices = self.prices.get(model)
        if prices is None or prompt_tokens is None or completion_tokens is None:
            return None
        return prices.cost(prompt_tokens, completion_tokens)


@dataclass(frozen=True)
class Completion:
    """One reply: its text, token usage, cost (None if unpriced) and seconds taken."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    latency: float
    attempts: int = 1


@dataclass
class Backoff:
    """Exponential backoff: ``base * 2**attempt`` capped at ``cap``, minus up to
    ``jitter`` of it at random; never less than a server's ``Retry-After``."""

    base: float = 1.0
    cap: float = 60.0
    jitter: float = 0.5
    retries: int = 5

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        wait = min(self.cap, self.base * 2 ** attempt)
        wait *= 1.0 - self.jitter * rng.random()
        return max(wait, retry_after or 0.0)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds, or an HTTP date) in seconds from now.

    >>> retry_after_seconds("2"), retry_after_seconds(None), retry_after_seconds("soon")
    (2.0, None, None)
    """
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, moment - (time.time() if now is None else now))


class ChatProvider:
    """Chat completions from one model at one endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        backoff: Backoff | None = None,
        prices: PriceTable | None = None,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.backoff = backoff or Backoff()
        self.prices = prices or PriceTable()
        self.rng = random.Random(seed)
        self.sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @classmethod
    def from_env(cls, model: str, **options: Any) -> ChatProvider:
        """Endpoint and key from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""
        options.setdefault("base_url", os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        options.setdefault("api_key", os.environ.get("OPENAI_API_KEY"))
        return cls(model, **options)

    def config(self) -> dict[str, Any]:
        """What an AgentRun row keeps about this provider (never the key)."""
        return {"base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens}

    def close(self) -> None:
        self.client.close()

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """The model's reply to ``messages``; :class:`ProviderError` when it cannot be had."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        started = time.monotonic()
        for attempt in range(self.backoff.retries + 1):
            response, problem = self._post(body)
            if response is not None and response.status_code == 200:
                return self._completion(response, time.monotonic() - started, attempt + 1)
            retry_after = None
            if response is not None:
                if not _retriable(response.status_code):
                    raise ProviderError(_http_problem(response, self.base_url))
                problem = _http_problem(response, self.base_url)
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if attempt < self.backoff.retries:
                self.sleep(self.backoff.delay(attempt, self.rng, retry_after))
        raise ProviderError(f"{problem} (gave up after {self.backoff.retries + 1} attempts)")

    def _post(self, body: dict[str, Any]) -> tuple[httpx.Response | None, str]:
        try:
            return self.client.post(f"{self.base_url}/chat/completions", json=body), ""
        except httpx.TimeoutException:
            return None, f"{self.base_url} did not answer within {self.client.timeout.read}s"
        except httpx.TransportError as error:
            return None, f"could not reach {self.base_url}: {error}"

    def _completion(self, response: httpx.Response, latency: float, attempts: int) -> Completion:
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise ProviderError(
                f"{self.base_url} answered 200 without a chat completion: {response.text[:300]!r}"
            ) from None
        usage = data.get("usage") or {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return Completion(text, prompt, completion, self.prices.cost(self.model, prompt, completion),
                          latency, attempts)


def _retriable(status: int) -> bool:
    return status == 429 or 500 <= status < 600


def _http_problem(response: httpx.Response, base_url: str) -> str:
    return f"{base_url} answered {response.status_code}: {response.text[:300]}"
