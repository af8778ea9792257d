"""A tabular Q-learner on one gridstudy problem, recorded beside people and models.

    python examples/rl_qlearning.py --problem lamp_grid/planning --episodes 200 \\
        --db sqlite:///rl.db
    gridstudy report --db sqlite:///rl.db --out rl-report

The state is the observation's bytes (the grid as colour indices); the actions are those
``info["action_mask"]`` allows, but ``quit``. Values start slightly optimistic
(``optimism``), so untried actions are tried before tried ones that led nowhere. Every episode is written to ``--db`` as an attempt of
the agent run ``rl:qlearning`` (``game_client.gym.RecordEpisodes``), so the report
shows it beside people and language models. The learning curve (mean score per block
of episodes) is printed as it learns.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import gymnasium
import numpy as np

import game_client.gym  # noqa: F401  (registers the problems)
from game_client.gym import RecordEpisodes
from tasks.worldtest.problem import gym_id

PROBLEM = "lamp_grid/planning"
"""Two clicks on a 5 x 5 grid reach the goal; random play rarely finds them in time."""


def train(problem: str, episodes: int, *, db: str | None = None, seed: int = 0,
          alpha: float = 0.5, gamma: float = 0.9, epsilon: float = 0.5,
          decay: float = 0.99, optimism: float = 0.1, block: int = 20) -> list[float]:
    """Learn ``problem`` over ``episodes`` episodes; each episode's score, in order."""
    env = gymnasium.make(gym_id(problem))
    config = {"alpha": alpha, "gamma": gamma, "epsilon": epsilon, "decay": decay,
              "optimism": optimism, "seed": seed}
    if db:
        env = RecordEpisodes(env, db=db, agent="rl:qlearning", config=config)
    quit_action = next(i for i in range(env.action_space.n) if env.unwrapped.table.text(i) == "quit")
    q: dict[bytes, np.ndarray] = defaultdict(lambda: np.full(env.action_space.n, optimism))
    rng = np.random.default_rng(seed)
    scores: list[float] = []
    for episode in range(episodes):
        scores.append(_episode(env, q, rng, seed + episode, alpha, gamma, epsilon, quit_action))
        epsilon *= decay
        if (episode + 1) % block == 0:
            print(f"episodes {episode + 2 - block:>4}-{episode + 1:<4} "
                  f"mean score {np.mean(scores[-block:]):.2f}  epsilon {epsilon:.2f}")
    env.close()
    return scores


def _episode(env, q, rng, seed, alpha, gamma, epsilon, quit_action) -> float:
    obs, info = env.reset(seed=seed)
    state, reward, over = obs.tobytes(), 0.0, False
    while not over:
        mask = info["action_mask"].copy()
        mask[quit_action] = 0  # it never gives up
        action = _choose(q[state], mask, rng, epsilon)
        obs, reward, terminated, truncated, info = env.step(action)
        following = obs.tobytes()
        target = reward if terminated else reward + gamma * _best(q[following], info)
        q[state][action] += alpha * (target - q[state][action])
        state, over = following, terminated or truncated
    return float(reward)


def _best(values: np.ndarray, info: dict) -> float:
    allowed = np.flatnonzero(info["action_mask"])
    return float(values[allowed].max()) if allowed.size else 0.0


def _choose(values: np.ndarray, mask: np.ndarray, rng: np.random.Generator,
            epsilon: float) -> int:
    """Epsilon-greedy among the allowed actions, ties broken at random."""
    allowed = np.flatnonzero(mask)
    if rng.random() < epsilon:
        return int(rng.choice(allowed))
    best = allowed[values[allowed] == values[allowed].max()]
    return int(rng.choice(best))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", default=PROBLEM,
                        help="a problem id (gridstudy problems list)")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--db", default=None, help="record the episodes here (a database URL)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    scores = train(args.problem, args.episodes, db=args.db, seed=args.seed)
    quarter = max(1, len(scores) // 4)
    print(f"first {quarter} episodes: mean score {np.mean(scores[:quarter]):.2f}; "
          f"last {quarter}: {np.mean(scores[-quarter:]):.2f}")


if __name__ == "__main__":
    main()
