"""The WorldTest protocol: problems, episodes, challenges and their scores (002 Sec. 3)."""

from tasks.worldtest.challenge import Challenge, challenges, register
from tasks.worldtest.episode import DONE, INTERACTION, PHASES, SELECT, TEST, Episode, Step
from tasks.worldtest.problem import Problem
from tasks.worldtest.scoring import cd_score

__all__ = [
    "Challenge", "DONE", "Episode", "INTERACTION", "PHASES", "Problem", "SELECT", "Step",
    "TEST", "cd_score", "challenges", "register",
]
