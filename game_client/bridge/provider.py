"""Any OpenAI-compatible chat-completions endpoint, over httpx.

OpenAI, vLLM, Ollama, llama.cpp's server and OpenRouter all answer
``POST {base_url}/chat/completions``. :class:`ChatProvider` sends one conversation and
returns the reply with its token usage, cost, reasoning content and finish reason.

What can go wrong, and what happens:

* rate limits (429), server errors (5xx), timeouts, dropped connections and replies with
  status 200 that are not a chat completion (an HTML page, ``{}``, a cut-off body) are
  retried with exponential backoff and jitter, waiting at least what a ``Retry-After``
  header asks; a 429 holds every request to the same endpoint (:class:`Limiter`), not
  only the one that met it; after the retries, :class:`ProviderError`;
* a refused key (401, 403) or an unknown model (404, or a 400 that says so) is
  :class:`FatalProviderError`: every later request would fail the same way, so a batch
  stops at the first;
* a request longer than the model's context window is :class:`ContextTooLong`: the agent
  leaves out older turns and asks again;
* any other error fails at once with the server's message.

Cost comes from a :class:`PriceTable` of per-million-token prices; a model without a
price has no cost (None), never 0.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from records.remote import Backoff, NotWhole, WaitTooLong, request_whole, retry_after_seconds
from records.schema import is_number, storable_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ProviderError(RuntimeError):
    """The endpoint could not give a reply (after the retries, when retrying made sense)."""


class FatalProviderError(ProviderError):
    """Every request would fail the same way (a refused key, an unknown model)."""


class ContextTooLong(ProviderError):
    """The request was longer than the model's context window."""


class Cancelled(ProviderError):
    """The request was abandoned because the batch is stopping."""


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
    def load(cls, source: str | Path) -> PriceTable:
        """Read ``{"model": {"input": 3.0, "output": 15.0}, ...}`` (dollars per million
        tokens) given inline (text starting with ``{``) or from a JSON file."""
        inline = isinstance(source, str) and source.lstrip().startswith("{")
        where = "the inline price table" if inline else str(source)
        try:
            data = json.loads(source if inline else Path(source).read_text())
            table = cls({name: Prices(float(p["input"]), float(p["output"]))
                         for name, p in data.items()})
        except OSError as error:
            raise ValueError(f"{where}: {error.strerror}; give a JSON file's path or the "
                             'table itself, like {"gpt-4o": {"input": 2.5, "output": 10.0}}') from None
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"{where}: not a price table ({type(error).__name__}: {error}); expected JSON "
                'like {"gpt-4o": {"input": 2.5, "output": 10.0}} (dollars per million tokens)'
            ) from None
        for name, prices in table.prices.items():
            if not all(math.isfinite(p) and p >= 0 for p in (prices.input, prices.output)):
                raise ValueError(f"{where}: the prices of {name!r} must be numbers of dollars "
                                 f"of at least 0, not {prices.input} and {prices.output}")
        return table

    def cost(self, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        prices = self.prices.get(model)
        if prices is None or prompt_tokens is None or completion_tokens is None:
            return None
        return prices.cost(prompt_tokens, completion_tokens)


@dataclass(frozen=True)
class Completion:
    """One reply: its text, token usage, cost (None if unpriced), seconds taken, the
    reasoning content and finish reason the provider gave, and requests retried."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    latency: float
    retries: int = 0
    reasoning: str | None = None
    finish_reason: str | None = None


class Limiter:
    """What every request to one endpoint shares: at most ``per_minute`` requests a
    minute (None: no limit), and a hold after a 429 that delays all of them.

    ``wait`` sleeps with ``sleep`` (a function that may return early when the batch
    stops, returning True then) and says whether to go on."""

    def __init__(self, per_minute: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.clock = clock
        self.next_slot = 0.0
        self.held_until = 0.0
        self.lock = threading.Lock()

    def hold(self, seconds: float) -> None:
        """Delay every request to this endpoint by ``seconds`` from now."""
        with self.lock:
            self.held_until = max(self.held_until, self.clock() + seconds)

    def wait(self, sleep: Callable[[float], Any]) -> bool:
        """Wait for this request's turn; False when ``sleep`` was cut short."""
        with self.lock:
            now = self.clock()
            start = max(now, self.next_slot, self.held_until)
            self.next_slot = start + self.interval
        delay = start - now
        return not (delay > 0 and sleep(delay))


_LIMITERS: dict[str, Limiter] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter_for(base_url: str, per_minute: float | None = None) -> Limiter:
    """The one :class:`Limiter` of an endpoint in this process (made on first use)."""
    with _LIMITERS_LOCK:
        found = _LIMITERS.get(base_url.rstrip("/"))
        if found is None or (per_minute and not found.interval):
            found = _LIMITERS[base_url.rstrip("/")] = Limiter(per_minute)
        return found


PARAMETERS = ("temperature", "max_tokens", "max_completion_tokens", "top_p", "seed",
              "reasoning_effort", "stop", "presence_penalty", "frequency_penalty")
"""Request fields a run may set (``--param``); anything else is refused as a likely typo."""


class ChatProvider:
    """Chat completions from one model at one endpoint.

    ``params`` are sent with every request (``temperature``, ``seed``, ``top_p``,
    ``max_completion_tokens``, ``reasoning_effort`` ...) and kept in the run's config.
    ``sleep`` waits between retries; it may return True to say the batch is stopping,
    and the request then ends with :class:`Cancelled`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        params: dict[str, Any] | None = None,
        timeout: float = 120.0,
        backoff: Backoff | None = None,
        prices: PriceTable | None = None,
        limiter: Limiter | None = None,
        seed: int | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        unknown = sorted(set(params or {}) - set(PARAMETERS))
        if unknown:
            raise ValueError(f"unknown request parameter {unknown[0]!r}; known: "
                             f"{', '.join(PARAMETERS)}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.params = {k: v for k, v in (params or {}).items() if v is not None}
        self.has_key = bool(api_key)
        self.backoff = backoff or Backoff()
        self.prices = prices or PriceTable()
        self.limiter = limiter or limiter_for(self.base_url)
        self.rng = random.Random(seed)
        self.sleep = sleep
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @classmethod
    def from_env(cls, model: str, **options: Any) -> ChatProvider:
        """Endpoint and key from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""
        options.setdefault("base_url", os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        options.setdefault("api_key", os.environ.get("OPENAI_API_KEY"))
        return cls(model, **options)

    @property
    def priced(self) -> bool:
        return self.model in self.prices.prices

    def config(self) -> dict[str, Any]:
        """What an AgentRun row keeps about this provider (never the key)."""
        return {"base_url": self.base_url, "model": self.model, "params": dict(self.params)}

    def close(self) -> None:
        self.client.close()

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """The model's reply to ``messages``; :class:`ProviderError` when it cannot be had."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.params}
        started = time.monotonic()
        for attempt in range(self.backoff.retries + 1):
            if not self.limiter.wait(self.sleep):
                raise Cancelled("the batch is stopping")
            response, problem = self._post(body)
            retry_after = None
            if response is not None and response.status_code == 200:
                completion = self._completion(response, time.monotonic() - started, attempt)
                if completion is not None:
                    return completion
                problem = (f"{self.base_url} answered 200 without a chat completion: "
                           f"{response.text[:300]!r}")
            elif response is not None:
                problem = _http_problem(response, self.base_url)
                _raise_if_final(response, problem)
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if attempt == self.backoff.retries:
                break
            try:
                delay = self.backoff.delay(attempt, self.rng, retry_after)
            except WaitTooLong as error:
                raise ProviderError(f"{problem}; {error}: run the command again later") from None
            if response is not None and response.status_code == 429:
                self.limiter.hold(delay)  # the next wait sleeps it, with every other request
            elif self.sleep(delay):
                raise Cancelled("the batch is stopping")
        raise ProviderError(f"{problem} (gave up after {self.backoff.retries + 1} attempts)")

    def _post(self, body: dict[str, Any]) -> tuple[httpx.Response | None, str]:
        """The response to one request, read whole within ``timeout`` seconds
        (:func:`records.remote.request_whole`), or None and what went wrong."""
        try:
            return request_whole(self.client, "POST", f"{self.base_url}/chat/completions",
                                 timeout=self.timeout, json=body), ""
        except NotWhole as error:
            return None, f"{self.base_url} {error}"
        except httpx.TimeoutException:
            return None, f"{self.base_url} did not answer within {self.timeout:g}s"
        except httpx.TransportError as error:
            return None, f"could not reach {self.base_url}: {error}"
        except httpx.DecodingError as error:
            return None, f"{self.base_url} sent a reply that could not be decoded: {error}"

    def _completion(self, response: httpx.Response, latency: float,
                    retries: int) -> Completion | None:
        """The reply in a 200 response; None when the body is not a chat completion."""
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice["message"]
            text, thought = _content(message.get("content"))
            reasoning = message.get("reasoning_content") or message.get("reasoning") or thought
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return None
        if not text and isinstance(message.get("refusal"), str):
            text = message["refusal"]  # a model's refusal is what it answered: kept, shown
        # a lone surrogate (a reply cut inside an emoji) can be neither stored nor sent
        # back in the history: the stand-in is what the record and the model both see
        text = storable_text(text)
        reasoning = storable_text(reasoning) if isinstance(reasoning, str) else None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt, completion = _counts(usage)
        finish = choice.get("finish_reason")
        return Completion(text, prompt, completion,
                          self.prices.cost(self.model, prompt, completion), latency, retries,
                          reasoning or None,
                          storable_text(finish[:100]) if isinstance(finish, str) else None)


def _content(content: Any) -> tuple[str, str | None]:
    """A reply's text, and the reasoning its parts give: ``content`` is text or null (the
    chat completion's own), or a list of parts (some compatible endpoints), whose
    ``text`` parts are the reply and whose ``thinking`` parts the reasoning. TypeError
    for anything else, which is no chat completion.

    >>> _content("up"), _content(None)
    (('up', None), ('', None))
    >>> _content([{"type": "thinking", "thinking": [{"type": "text", "text": "Left is a wall."}]},
    ...           {"type": "text", "text": "<action>up</action>"}])
    ('<action>up</action>', 'Left is a wall.')
    """
    if content is None or isinstance(content, str):
        return content or "", None
    if not isinstance(content, list) or not all(isinstance(part, dict) for part in content):
        raise TypeError(f"content is {type(content).__name__}")
    text = "".join(_texts([p for p in content if p.get("type") == "text"]))
    thoughts = [p.get("thinking") for p in content if p.get("type") == "thinking"]
    thought = "".join(t if isinstance(t, str) else "".join(_texts(t)) for t in thoughts
                      if isinstance(t, str | list))
    return text, thought or None


def _texts(parts: list[Any]) -> list[str]:
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _counts(usage: dict[str, Any]) -> tuple[int | None, int | None]:
    """The prompt and completion tokens a reply's ``usage`` gives; one it leaves out is
    the ``total_tokens`` less the other, when the total is given (some endpoints send the
    prompt's count and the total only)."""
    prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    total = _count(usage, "total_tokens")
    if total is not None and (prompt is None) != (completion is None):
        known = prompt if completion is None else completion
        if known <= total:
            prompt, completion = (prompt, total - known) if completion is None else \
                (total - known, completion)
    return prompt, completion


def _count(usage: dict[str, Any], name: str) -> int | None:
    """A token count the reply gives, or None when it gives none a row can hold (a
    provider's count of 2**70 or -5 ended its attempt as an error, its turn unstored)."""
    value = usage.get(name)
    return value if is_number(value) and isinstance(value, int) and value >= 0 else None


def _retriable(status: int) -> bool:
    return status == 429 or 500 <= status < 600


CONTEXT_TOO_LONG = re.compile(r"context[ _-]?(length|window)|maximum context|too many tokens|"
                              r"prompt is too long|input is too long|reduce the length", re.I)
UNKNOWN_MODEL = re.compile(r"model[ _-]?not[ _-]?found|(model|deployment) .{0,80}(does not exist|"
                           r"not found|unknown)|unknown model|invalid model", re.I)


def _raise_if_final(response: httpx.Response, problem: str) -> None:
    """Raise for a response that retrying cannot change."""
    status = response.status_code
    if _retriable(status):
        return
    if status in (401, 403):
        raise FatalProviderError(f"the provider refused the key: {problem}")
    if status in (400, 413) and CONTEXT_TOO_LONG.search(response.text):
        raise ContextTooLong(problem)
    if status == 404 or (status == 400 and UNKNOWN_MODEL.search(response.text)):
        raise FatalProviderError(f"unknown model or endpoint: {problem}")
    raise ProviderError(problem)


def _http_problem(response: httpx.Response, base_url: str) -> str:
    return f"{base_url} answered {response.status_code}: {response.text[:300]}"
