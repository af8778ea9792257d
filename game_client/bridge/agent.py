"""The language-model agent: prompt, ask, parse, remember.

Each turn renders the current state as one user message (AutumnBench, 002 App. D.2.2;
task-DAG maps, 000 App. C.3 with the optional memory summary of App. D), sends the
system prompt, the history window and that message to the provider, applies the reply's
scratchpad edits, and returns the action the reply names, or the reason it names none.

The conversation is rebuilt from the record when an attempt is resumed: :meth:`recall`
is :meth:`decide` with the recorded reply in place of the model's.

When a request would be longer than the model's context window (declared as
``context_window`` tokens, or learned from the provider's refusal), the oldest earlier
turns are left out, and the turn records how many (``trimmed``). The task description of
the first turn is then repeated in the current message, as when a history window
scrolls it away.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from game_client.agents import Decision, Turn
from game_client.bridge import images, prompts
from game_client.bridge.memory import History, Scratchpad
from game_client.bridge.parse import HARNESS, JSON, TAG, ReplyError, extract_action
from game_client.bridge.provider import ChatProvider, Completion, ContextTooLong
from records.schema import TURN_TEXT_LIMITS, kept
from tasks.worldtest import protocol as protocols
from tasks.worldtest.challenge import TASK_DAG_PROMPT, get
from tasks.worldtest.problem import Problem

CHARS_PER_TOKEN = 4.0
"""Characters per token assumed until the provider's usage says otherwise."""
IMAGE_TOKENS = 800
"""Tokens an attached picture is assumed to cost (providers count them their own way)."""
MARGIN = 0.9
"""Share of the context window a request may fill (the estimate is rough)."""


@dataclass
class ContextWindow:
    """A model's context window in tokens (None: unknown) and the characters per token
    its replies' usage showed; shared by every attempt with the same model, so that a
    window learned from one refusal serves them all."""

    tokens: int | None = None
    chars_per_token: float = CHARS_PER_TOKEN
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def estimate(self, messages: list[dict[str, Any]]) -> int:
        return int(_chars(messages) / self.chars_per_token) + IMAGE_TOKENS * _pictures(messages)

    def fits(self, messages: list[dict[str, str]]) -> bool:
        return self.tokens is None or self.estimate(messages) <= self.tokens * MARGIN

    def learn_usage(self, messages: list[dict[str, Any]], prompt_tokens: int | None) -> None:
        text_tokens = (prompt_tokens or 0) - IMAGE_TOKENS * _pictures(messages)
        if text_tokens > 0:
            with self.lock:
                self.chars_per_token = max(1.0, _chars(messages) / text_tokens)

    def learn_refusal(self, messages: list[dict[str, str]]) -> None:
        """A request of this size was refused: the window is smaller than it."""
        with self.lock:
            refused = self.estimate(messages)
            if self.tokens is None or refused <= self.tokens:
                self.tokens = refused - 1


def _parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every content part of ``messages`` (a text content is one text part)."""
    return [part for m in messages for part in (
        m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}])]


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(p.get("text", "")) for p in _parts(messages))


def _pictures(messages: list[dict[str, Any]]) -> int:
    return sum(1 for p in _parts(messages) if p.get("type") == "image_url")


def _pattern(action: str) -> bool:
    """An offered action written as a pattern (``click [0-9] [0-9]``)."""
    return "[" in action


def _message(role: str, content: str | list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "content": content}


class LLMAgent:
    """A chat model behind :class:`ChatProvider`, with a scratchpad and a history window."""

    kind = "llm"

    def __init__(self, provider: ChatProvider, *, history: str = "full", k: int = 0,
                 prompt_variant: str = "base", summary: bool = False,
                 context: ContextWindow | None = None, observation: str = "text") -> None:
        if observation not in images.OBSERVATIONS:
            raise ValueError(f"observation must be one of {', '.join(images.OBSERVATIONS)}, "
                             f"not {observation!r}")
        self.observation = observation
        self.provider = provider
        self.history_mode, self.k = history, k
        self.prompt_variant = prompt_variant
        self.summary = summary
        self.context = context or ContextWindow()
        History(history, k)  # check the mode now, not on the first turn

    @property
    def model(self) -> str:
        return self.provider.model

    def close(self) -> None:
        self.provider.close()

    def config(self) -> dict[str, Any]:
        return {**self.provider.config(), "history": self.history_mode, "k": self.k,
                "prompt_variant": self.prompt_variant, "summary": self.summary,
                "context_window": self.context.tokens, "observation": self.observation}

    def start(self, problem: Problem) -> None:
        self.problem = problem
        self.history = History(self.history_mode, self.k)
        self.scratchpad = Scratchpad()
        self.previous_phase: str | None = None
        self.dag = get(problem.challenge).prompt_style == TASK_DAG_PROMPT
        if self.dag:
            from game_client.bridge.dag import DagPrompter

            self.dag_prompter = DagPrompter(self.prompt_variant, self.summary)
            self.system = self.dag_prompter.system_prompt()
        else:
            self.system = prompts.SYSTEM_PROMPT

    def render(self, turn: Turn) -> str:
        """The text of the user message for ``turn`` (with a picture, it says so in place
        of the text grid, or beside it with ``observation`` both)."""
        pictured = self.observation != "text"
        if self.dag:  # the observation is a sentence, never a grid: the picture is extra
            text = self.dag_prompter.turn(turn)
            return f"{text}\n\n{images.note(turn.state['frame'])}" if pictured else text
        state = turn.state
        if pictured:
            note = images.note(state["frame"])
            if self.observation == "both":  # the note after the (last) text grid
                stacked = [dict(f) for f in state.get("stacked") or ()]
                if stacked:
                    stacked[-1]["text"] += f"\n{note}"
                state = {**state, "text": f"{state['text']}\n{note}", "stacked": stacked}
            else:  # the picture in place of every text grid
                state = {**state, "text": note, "stacked": None}
        remind = bool(self.history.turns) and not self.history.shows_first_turn
        return prompts.render_turn(
            state, previous_phase=self.previous_phase, last_action=turn.last_action,
            error=turn.error, scratchpad=self.scratchpad.render(), remind_task=remind,
        )

    def content(self, turn: Turn, prompt: str) -> str | list[dict[str, Any]]:
        """The user message's content: ``prompt``, and the frame's picture when the model
        is shown pictures (OpenAI's image_url part with a PNG data URL)."""
        if self.observation == "text":
            return prompt
        return [{"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": images.data_url(turn.state["frame"])}}]

    def messages(self, content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The request for a turn whose user message holds ``content``."""
        return [_message("system", self.system), *self.history.messages(),
                _message("user", content)]

    def decide(self, turn: Turn) -> Decision:
        prompt, messages = self._fitted(turn)
        while True:
            try:
                completion = self.provider.complete(messages)
                break
            except ContextTooLong:
                self.context.learn_refusal(messages)
                if not self.history.window():
                    raise
                self.history.trim(max(1, len(self.history.window()) // 2))
                prompt, messages = self._fitted(turn)
        self.context.learn_usage(messages, completion.prompt_tokens)
        return self._answer(turn, prompt, completion)

    def recall(self, turn: Turn, recorded: Any) -> Decision:
        """:meth:`decide` with the reply the record holds (an event row: ``raw_reply``,
        ``trimmed`` and the model fields), without asking the model: how a resumed
        attempt's conversation is rebuilt."""
        self.history.trim(max(0, (recorded.trimmed or 0) - self.history.dropped))
        prompt = self.render(turn)
        completion = Completion(recorded.raw_reply or "", recorded.prompt_tokens,
                                recorded.completion_tokens, recorded.cost, recorded.latency or 0.0,
                                recorded.retries or 0, recorded.reasoning, recorded.finish_reason)
        return self._answer(turn, prompt, completion)

    def _fitted(self, turn: Turn) -> tuple[str, list[dict[str, str]]]:
        """This turn's message and request, older turns left out until it fits."""
        prompt = self.render(turn)
        messages = self.messages(self.content(turn, prompt))
        while not self.context.fits(messages) and self.history.window():
            self.history.trim(1)
            prompt = self.render(turn)
            messages = self.messages(self.content(turn, prompt))
        return prompt, messages

    def _answer(self, turn: Turn, prompt: str, completion: Completion) -> Decision:
        """Remember the exchange and read the action off the reply: off what the record
        keeps of it (its start and its end, when it is longer than a record's
        ``raw_reply`` holds), so that a resumed attempt, which reads the recorded reply
        (:meth:`recall`), reads the same action and remembers the same conversation."""
        first = not self.history.turns
        reply = kept(completion.text, TURN_TEXT_LIMITS["raw_reply"])
        self.history.add(self.content(turn, prompt), reply)
        if not self.dag:
            self.scratchpad.apply(reply)
        self.previous_phase = turn.state["phase"]
        action, error = None, None
        try:
            literal = [a for a in turn.state.get("actions", ()) if not _pattern(a)]
            style = JSON if self.dag else HARNESS if protocols.get(
                turn.state.get("protocol", "gridstudy")).strict_replies else TAG
            action = extract_action(reply, style, literal)
        except ReplyError as problem:
            error = str(problem)
            if reply != completion.text:
                error += (f" (the reply was {len(completion.text):,} characters long: its start "
                          "and its end are kept and read, its middle is not)")
            if completion.finish_reason == "length":
                error += " (the reply was cut off at the token limit: finish_reason length)"
        texts = {"raw_reply": reply, "error": error, "prompt": prompt,
                 "system_prompt": self.system if first else None,
                 "reasoning": completion.reasoning, "finish_reason": completion.finish_reason}
        texts = {name: kept(text, TURN_TEXT_LIMITS[name]) for name, text in texts.items()}
        return Decision(action, prompt_tokens=completion.prompt_tokens,
                        completion_tokens=completion.completion_tokens, cost=completion.cost,
                        latency=completion.latency, retries=completion.retries,
                        trimmed=self.history.dropped or None, **texts)
