"""Protocol profiles: how a model's turns are played, named and scored.

``gridstudy`` is the default: a reply that names no available action is an invalid turn
(nothing moves; :data:`tasks.worldtest.turn.MAX_INVALID` in a row abandon the attempt),
one action is one step, the actions are gridstudy's own and scores are in [0, 1].

``autumnbench`` reproduces the settings of the published AutumnBench harness
(MARAProtocol, as published; read, not copied), so that a model's numbers can be set
beside the paper's:

1. a reply with no action is played as ``noop`` where ``noop`` is allowed (the world
   moves on); no number of invalid replies ends the attempt;
2. in the interaction phase each action is followed by frame-rate minus one ``noop``
   steps, and the next turn shows all those frames (``stack_frames``);
3. the interaction phase ends after :attr:`Protocol.interaction_cap` actions (every
   action counts, invalid ones too): the test then starts without a word;
4. the harness's action names: ``I found the change!``, ``Submit choice``, every
   ``choose_frame_i`` and ``choose_option_i`` listed one by one, and ``reset`` offered in
   the change-detection test (where, as published, it does nothing);
5. in masked frame prediction only ``step`` is offered until the last frame, then
   ``rewind`` and the options; choosing an option ends the test; each frame is one
   object with the harness's ``action_took`` key, and the options are its ``choices``
   at the last frame only (``tasks.worldtest.mfp.harness_frame``);
6. the planning goal is shown as a full grid beside a 0/1 mask, in one JSON object with
   the frame each test turn (``tasks.worldtest.planning.goal_frame``);
7. scores as the harness gives them: a wrong option in masked frame prediction, and a
   change-detection answer before the change (or a change never triggered), score -1
   (:meth:`Protocol.score`; the stored ``score`` stays gridstudy's, in [0, 1], and the
   harness's is kept as ``info.protocol_score``); a change-detection answer is also
   scored as the harness's code computes it (the formula at the number of test turns
   before the submit, not at the chosen frame), kept as ``info.protocol_score_as_run``;
8. pictures for vision models are ``--observation``'s (``game_client/bridge/images.py``);
9. the interaction phase offers the harness's list in its order, ``quit`` included
   (which, as there, ends the interaction: the test follows);
10. replies are read as the harness reads them (``game_client.bridge.parse``, style
    ``harness``): the lower-case ``<action>`` tag only, its last occurrence, stripped of
    blanks and nothing else (an environment action: its first line), and an action
    counts only written exactly (``Left`` or a fenced `````left````` does nothing, as
    there: an invalid turn, nothing moves);
11. the test ends unfinished after :attr:`Protocol.test_step_cap` (501) turns, the
    harness's loop limit;
12. the interaction phase's welcome does not describe the test's task.

What items 4, 5 and 7 do for a test is its challenge's knowledge, not this module's:
each challenge names its :class:`~tasks.worldtest.challenge.HarnessRules`
(``Challenge.harness_rules``, e.g. ``tasks/worldtest/cd_harness.py``), and a profile with
``harness_tests`` plays by them.

:class:`tasks.worldtest.turn.AgentTurns` plays by a profile; the text bridge reads the
state it gives (``actions`` in the profile's names, ``stacked`` frames, the ``protocol``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tasks.core import parse_action
from tasks.worldtest.challenge import harness_rules
from tasks.worldtest.episode import INTERACTION, Episode


@dataclass(frozen=True)
class Protocol:
    name: str
    unparsed_noop: bool = False
    """A reply naming no action is played as ``noop`` where it is allowed."""
    max_invalid: int | None = None
    """Invalid turns in a row that end the attempt (None: the caller's default)."""
    stack_frames: bool = False
    interaction_cap: int | None = None
    names: dict[str, str] = field(default_factory=dict)
    """gridstudy action text -> the profile's name for it."""
    list_each_choice: bool = False
    harness_tests: bool = False
    """Each challenge's test as the published harness presents it: the challenge's own
    ``HarnessRules`` (``Challenge.harness_rules``) say what is offered, what does
    nothing and what follows an action."""
    planning_full_goal: bool = False
    negative_scores: bool = False
    """Scores as the harness gives them (the challenge's ``HarnessRules.score``)."""
    interaction_order: tuple[str, ...] = ()
    """The interaction phase's actions in the profile's order, ``quit`` among them
    (the harness's quit ends its interactive environment: the test follows, as after
    ``go-to-test``); empty: gridstudy's own list."""
    strict_replies: bool = False
    """Actions are read as the harness reads them: the lower-case ``<action>`` tag as
    written, no clean-up, an environment action as written in canonical form."""
    test_step_cap: int | None = None
    """Turns in the test after which the attempt ends unfinished (the harness's loop)."""
    task_in_intro: bool = True
    """The interaction phase's welcome describes the task of the test."""

    # -- what is offered, and in which names ---------------------------------------------

    def offered(self, episode: Episode) -> list[str]:
        """The actions the model is offered now, in this profile's names."""
        if self.name == GRIDSTUDY.name:
            return episode.allowed_actions()
        out = []
        for text in self._ours(episode):
            out.append(self.names.get(text, text))
        return out

    def _ours(self, episode: Episode) -> list[str]:
        """The gridstudy actions offered now (indexed ones written out)."""
        texts = []
        allowed = episode.allowed_actions()
        if self.interaction_order and episode.phase == INTERACTION:
            verbs = {a.split(" ")[0]: a for a in allowed} | {"quit": "quit"}
            allowed = [verbs[verb] for verb in self.interaction_order if verb in verbs]
        for pattern in allowed:
            match = re.fullmatch(r"(choose_\w+)_\[0-(\d+)\]", pattern)
            if match and self.list_each_choice:
                texts += [f"{match.group(1)}_{i}" for i in range(int(match.group(2)) + 1)]
            else:
                texts.append(pattern)
        if self.harness_tests and episode.phase != INTERACTION:
            texts = harness_rules(episode.problem.challenge).offered(
                texts, episode.test.view(episode.phase), episode.phase, self.list_each_choice)
        return texts

    def canonical(self, text: Any, episode: Episode | None = None) -> Any:
        """The gridstudy action a reply's action text names (names mapped back; the
        interaction phase's ``quit`` where the profile offers it goes to the test)."""
        if not isinstance(text, str):
            return text
        if (self.interaction_order and text == "quit" and episode is not None
                and episode.phase == INTERACTION):
            return "go-to-test"
        for ours, theirs in self.names.items():
            if text.strip() == theirs:
                return ours
        return text

    def refusal(self, text: str, episode: Episode) -> str | None:
        """Why the profile does not offer ``text`` now (None: it is offered, or the
        profile offers what gridstudy does)."""
        if self.name == GRIDSTUDY.name:
            return None
        if self.strict_replies and text not in self.names.values():
            try:
                written = str(parse_action(text))
            except ValueError:
                written = text
            if written != text:
                return (f"{text!r} is not an action as written; the harness reads "
                        f"{written!r} only written exactly so")
        theirs = self.names.get(text, text)
        if theirs in self.offered(episode) or text in self._ours(episode):
            return None
        if any(p.startswith("click [") for p in self.offered(episode)) and text.startswith("click "):
            return None
        return f"{theirs} is not available now; available: {', '.join(self.offered(episode))}"

    # -- what happens beside the model's action ------------------------------------------

    def unparsed(self, episode: Episode) -> str | None:
        """The action a reply naming none is played as (None: an invalid turn)."""
        if self.unparsed_noop and "noop" in episode.allowed_verbs() and not (
                self.harness_tests and episode.phase != INTERACTION
                and not harness_rules(episode.problem.challenge).noop_in_test):
            return "noop"
        return None

    def does_nothing(self, text: str, episode: Episode) -> bool:
        """An offered action the published harness answers with nothing (``reset`` in the
        change-detection test)."""
        return (self.harness_tests and episode.phase != INTERACTION
                and harness_rules(episode.problem.challenge).does_nothing(text))

    def follow_up(self, episode: Episode, applied: str, phase_before: str,
                  interaction_turns: int) -> list[str]:
        """Actions applied by the protocol after the model's: the stacked ``noop`` steps,
        ``submit`` after an option is chosen, ``go-to-test`` at the interaction cap."""
        if episode.done:
            return []
        if phase_before == INTERACTION and episode.phase == INTERACTION:
            if self.cap_reached(episode, interaction_turns):
                return ["go-to-test"]
            if self.stack_frames:
                return ["noop"] * (episode.frame_rate - 1)
        if self.harness_tests and episode.phase != INTERACTION:
            return harness_rules(episode.problem.challenge).follow_up(applied)
        return []

    def cap_reached(self, episode: Episode, interaction_turns: int) -> bool:
        return bool(self.interaction_cap and episode.phase == INTERACTION
                    and interaction_turns >= self.interaction_cap)

    # -- scores ---------------------------------------------------------------------------

    def score(self, episode: Episode, answered: int | None = None) -> float:
        """The attempt's score as the profile gives it (gridstudy's when the profile
        keeps scores in [0, 1]). With ``answered``, a change-detection answer is read as
        the harness's code reads it: the formula is taken at ``answered`` (the number of
        test turns before the submit) in place of the chosen frame, a quirk of the
        harness that its published numbers include."""
        score = episode.final_score
        if not self.negative_scores or not episode.done:
            return score
        # the test phase's outcome, its keys prefixed test_
        return harness_rules(episode.problem.challenge).score(score, episode.outcome(),
                                                              answered)


GRIDSTUDY = Protocol("gridstudy")
AUTUMNBENCH = Protocol(
    "autumnbench", unparsed_noop=True, max_invalid=10**9, stack_frames=True,
    interaction_cap=300,
    names={"found-change": "I found the change!", "submit": "Submit choice"},
    list_each_choice=True, harness_tests=True, planning_full_goal=True, negative_scores=True,
    interaction_order=("left", "right", "up", "down", "click", "noop", "quit", "go-to-test",
                       "reset"),
    strict_replies=True, test_step_cap=501, task_in_intro=False,
)
PROTOCOLS = {p.name: p for p in (GRIDSTUDY, AUTUMNBENCH)}


def get(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}: expected one of "
                         f"{', '.join(PROTOCOLS)}") from None
