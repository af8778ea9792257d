"""The language-model agent: prompt, ask, parse, remember.

Each turn renders the current state as one user message (AutumnBench, 002 App. D.2.2;
task-DAG maps, 000 App. C.3 with the optional memory summary of App. D), sends the
system prompt, the history window and that message to the provider, applies the reply's
scratchpad edits, and returns the action the reply names, or the reason it names none.
"""

from __future__ import annotations

from typing import Any

from game_client.agents import Decision, Turn
from game_client.bridge import prompts
from game_client.bridge.memory import History, Scratchpad
from game_client.bridge.parse import JSON, TAG, ReplyError, extract_action
from game_client.bridge.provider import ChatProvider
from tasks.worldtest.challenge import TASK_DAG_PROMPT, get
from tasks.worldtest.problem import Problem


class LLMAgent:
    """A chat model behind :class:`ChatProvider`, with a scratchpad and a history window."""

    kind = "llm"

    def __init__(self, provider: ChatProvider, *, history: str = "full", k: int = 0,
                 prompt_variant: str = "base", summary: bool = False) -> None:
        self.provider = provider
        self.history_mode, self.k = history, k
        self.prompt_variant = prompt_variant
        self.summary = summary
        History(history, k)  # check the mode now, not on the first turn

    @property
    def model(self) -> str:
        return self.provider.model

    def config(self) -> dict[str, Any]:
        return {**self.provider.config(), "history": self.history_mode, "k": self.k,
                "prompt_variant": self.prompt_variant, "summary": self.summary}

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
        """The user message for ``turn``."""
        if self.dag:
            return self.dag_prompter.turn(turn)
        remind = bool(self.history.turns) and not self.history.shows_first_turn
        return prompts.render_turn(
            turn.state, previous_phase=self.previous_phase, last_action=turn.last_action,
            error=turn.error, scratchpad=self.scratchpad.render(), remind_task=remind,
        )

    def decide(self, turn: Turn) -> Decision:
        prompt = self.render(turn)
        messages = [{"role": "system", "content": self.system}, *self.history.messages(),
                    {"role": "user", "content": prompt}]
        completion = self.provider.complete(messages)
        self.history.add(prompt, completion.text)
        if not self.dag:
            self.scratchpad.apply(completion.text)
        self.previous_phase = turn.state["phase"]
        action, error = None, None
        try:
            action = extract_action(completion.text, JSON if self.dag else TAG)
        except ReplyError as problem:
            error = str(problem)
        return Decision(action, completion.text, error, completion.prompt_tokens,
                        completion.completion_tokens, completion.cost, completion.latency)
