"""A small local HTTP server that speaks the OpenAI chat-completions API.

It stands in for the remote paid service only: the bridge, the provider and the runner
under test are the real ones, talking real HTTP to it. It replays a scripted policy:
each request takes the next entry of ``script``, which is a reply text, a
:class:`Failure` (an HTTP status with headers and any body, a 200 that is not a chat
completion included), a :class:`Stall` (answer after a delay, to provoke a client
timeout), a :class:`Trickle` (a reply preceded by whitespace sent a byte at a time, as a
provider keeps a slow request's connection open), a :class:`Drop` (the connection closed
unanswered) or a :class:`Reply` (null content, reasoning content, a finish reason). A callable entry is called with the request's
messages and returns a reply text. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: str = '{"error": {"message": "scripted failure"}}'


@dataclass
class Stall:
    seconds: float
    reply: str = "<action>noop</action>"


@dataclass
class Trickle:
    """A chat completion whose body begins with ``padding`` spaces, one every ``interval``
    seconds (JSON allows the whitespace; a provider or proxy may send it to keep a slow
    request's connection open). ``interval`` 0 sends them at once: ``padding`` then sizes the body."""

    padding: int
    interval: float
    reply: str = "<action>noop</action>"


@dataclass
class Drop:
    """Close the connection without answering."""


@dataclass
class Reply:
    """A chat completion with a chosen ``content`` (None: JSON null; a list: content
    parts, as some compatible endpoints send), reasoning content, finish reason and
    refusal (the model's refusal message, which OpenAI sends with null content)."""

    content: str | list[dict[str, Any]] | None
    reasoning: str | None = None
    finish_reason: str = "stop"
    refusal: str | None = None
    usage: dict[str, Any] | None = None
    """Fields replacing the counted ``usage`` (a provider's own numbers, right or not)."""


Entry = str | Failure | Stall | Trickle | Drop | Reply | Callable[[list[dict[str, str]]], str]


class FakeOpenAI:
    """``with FakeOpenAI(script) as fake: ... fake.base_url ...``"""

    def __init__(self, script: list[Entry]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str | None] = []
        """The Authorization header of each request."""
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_entry(self, body: dict[str, Any]) -> Entry:
        with self.lock:
            self.requests.append(body)
            if not self.script:
                return Failure(500, body='{"error": {"message": "script exhausted"}}')
            return self.script.pop(0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path != "/v1/chat/completions":
                    return self._send(404, '{"error": {"message": "not found"}}')
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                with fake.lock:
                    fake.keys.append(self.headers.get("authorization"))
                entry = fake.next_entry(body)
                if isinstance(entry, Failure):
                    return self._send(entry.status, entry.body, entry.headers)
                if isinstance(entry, Drop):
                    self.close_connection = True
                    return self.connection.shutdown(2)
                if isinstance(entry, Stall):
                    time.sleep(entry.seconds)
                    entry = entry.reply
                if isinstance(entry, Trickle):
                    return self._trickle(entry, json.dumps(completion(body, entry.reply)))
                if callable(entry):
                    entry = entry(body["messages"])
                if isinstance(entry, Reply):
                    answer = completion(body, entry.content
                                        if isinstance(entry.content, str) else "")
                    message = answer["choices"][0]["message"]
                    message["content"] = entry.content
                    if entry.reasoning is not None:
                        message["reasoning_content"] = entry.reasoning
                    if entry.refusal is not None:
                        message["refusal"] = entry.refusal
                    answer["choices"][0]["finish_reason"] = entry.finish_reason
                    answer["usage"].update(entry.usage or {})
                    return self._send(200, json.dumps(answer))
                self._send(200, json.dumps(completion(body, entry)))

            def _trickle(self, entry: Trickle, text: str) -> None:
                data = text.encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(entry.padding + len(data)))
                self.end_headers()
                try:
                    if entry.interval:
                        for _ in range(entry.padding):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(entry.interval)
                    else:
                        self.wfile.write(b" " * entry.padding)
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

            def _send(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return Handler


IMAGE_TOKENS = 85
"""Tokens the stand-in counts for a picture in a message (its low-detail price)."""


def _tokens(content: Any) -> int:
    """Whitespace-separated words of a message's content (text, or a list of parts)."""
    if isinstance(content, str):
        return len(content.split())
    return sum(len(part.get("text", "").split()) if part.get("type") == "text" else IMAGE_TOKENS
               for part in content)


def completion(body: dict[str, Any], reply: str) -> dict[str, Any]:
    """A chat-completion response; tokens counted as whitespace-separated words (and
    :data:`IMAGE_TOKENS` per picture)."""
    prompt_tokens = sum(_tokens(m["content"]) for m in body["messages"])
    completion_tokens = len(reply.split())
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": reply}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def main() -> None:
    """Serve a stand-in whose every reply is ``--reply``, each after ``--delay`` seconds,
    until interrupted; print its URL (a separate process, so that a benchmark's CPU is the
    bridge's own)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--reply", default="<action>noop</action>")
    parser.add_argument("--delay", type=float, default=0.0,
                        help="seconds before each reply (a model that thinks)")
    args = parser.parse_args()
    reply = Stall(args.delay, args.reply) if args.delay > 0 else args.reply

    class Forever(list):
        def pop(self, index: int = -1) -> Entry:
            return reply

        def __bool__(self) -> bool:
            return True

    fake = FakeOpenAI([])
    fake.script = Forever()
    fake.requests = _Discard()
    with fake:
        print(fake.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


class _Discard(list):
    """Requests are not kept (a long benchmark would fill memory)."""

    def append(self, item: Any) -> None:
        pass


if __name__ == "__main__":
    main()
