"""The engine in a participant's browser, measured: how long Chromium takes to load it
(cold, then from its cache) from our own server, and what one step costs there beside
CPython, per library program; the frames are checked to be the server's on the way.

    python -m bench.browser_engine [--steps 300] [--programs ant_trail gravity_4 ...]

It starts the real server (one process, a temporary SQLite file), opens a fresh
Chromium profile (Debian's, through Playwright), and plays the same random actions in
the page (Pyodide running ``study_server/engine.py``'s archive) and here.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from pathlib import Path

from game_client.agents import random_env_action
from study_server.engine import engine_digest
from tasks import registry
from tasks.core import INDEXED_VERBS
from tasks.worldtest.episode import DONE, INTERACTION, Episode
from tasks.worldtest.verify import played

CHROMIUM = "/usr/bin/chromium"
LIBRARY = Path(__file__).resolve().parent.parent / "tasks" / "library"

LOAD = """async ([digest, jobs]) => {
  const began = performance.now();
  const { loadPyodide } = await import("/vendor/pyodide/pyodide.mjs");
  const { startEngine } = await import("/static/gridstudy/engine.mjs");
  const archive = await (await fetch(`/engine/${digest}.zip`)).arrayBuffer();
  const engine = await startEngine(loadPyodide, archive, { indexURL: "/vendor/pyodide/" });
  const loaded = performance.now() - began;
  return { loaded, results: engine.replay(jobs) };
}"""
"""What a page does to load the engine and replay jobs (``{problem, actions}``): the
load time in milliseconds and, per job, the frame hashes and the mean step time."""


def programs() -> list[str]:
    """The built-in library's programs."""
    return sorted(path.name for path in LIBRARY.iterdir() if (path / "program.sexp").is_file())


def some_play(problem_id: str, seed: int = 7, interaction: int = 30, test: int = 40) -> list[str]:
    """A random attempt at ``problem_id``: ``interaction`` actions with one reset, then
    the test to its end or ``test`` actions into it (never ``quit``)."""
    rng = random.Random(f"{seed}/{problem_id}")
    episode = Episode(registry.get_problem(problem_id))
    actions: list[str] = []

    def apply(action: str) -> None:
        episode.apply(action)
        actions.append(action)

    if episode.phase == INTERACTION:
        for index in range(interaction):
            allowed = [v for v in episode.allowed_verbs() if v not in ("reset", "go-to-test")]
            apply("reset" if index == 12 else random_env_action(rng, allowed, episode.size))
        if test:
            apply("go-to-test")
    for _ in range(test):
        if episode.phase == DONE:
            break
        verb = rng.choice([v for v in episode.allowed_verbs() if v != "quit"])
        if verb == "click":
            verb = f"click {rng.randrange(episode.size[0])} {rng.randrange(episode.size[1])}"
        elif verb in INDEXED_VERBS:
            verb = f"{verb}_{rng.randrange(episode.test.choice_count(verb))}"
        apply(verb)
    return actions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.browser_engine", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300, help="steps per program (300)")
    parser.add_argument("--programs", nargs="*", help="library programs (all)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from bench.load import Server

    names = args.programs or programs()
    jobs = [{"problem": f"{name}/planning",
             "actions": some_play(f"{name}/planning", interaction=args.steps, test=0)}
            for name in names]
    here = {job["problem"]: list(played(registry.get_problem(job["problem"]), job["actions"]))
            for job in jobs}
    with tempfile.TemporaryDirectory() as folder:
        server = Server(None, "gevent", 1, Path(folder))
        try:
            with sync_playwright() as playwright:
                chromium = playwright.chromium.launch(executable_path=CHROMIUM,
                                                      args=["--no-sandbox"])
                context = chromium.new_context()
                page = context.new_page()
                page.goto(f"{server.url}/login")
                cold = page.evaluate(LOAD, [engine_digest(), jobs])
                page.reload()
                cached = page.evaluate(LOAD, [engine_digest(), []])
                chromium.close()
        finally:
            server.stop()
            server.close()
    print(f"load: cold {cold['loaded']:.0f} ms, cached {cached['loaded']:.0f} ms")
    print("mean microseconds per step (the mean: Chromium's clock is coarse)")
    print(f"{'program':<16} {'CPython':>8} {'Chromium':>9} {'ratio':>6}  frames")
    ratios, differing = [], 0
    for job, result in zip(jobs, cold["results"], strict=True):
        run = here[job["problem"]]
        cpython = statistics.mean(took for _, took in run[1:]) * 1e6
        same = [shown for shown, _ in run] == result["hashes"]
        differing += not same
        ratios.append(result["mean_step_us"] / cpython)
        print(f"{job['problem'].split('/')[0]:<16} {cpython:>8.0f} "
              f"{result['mean_step_us']:>9.0f} {ratios[-1]:>6.2f}  "
              f"{'same' if same else 'DIFFERENT'}")
    print(f"median ratio Chromium/CPython {statistics.median(ratios):.2f}; "
          f"programs with different frames: {differing} of {len(jobs)}")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
