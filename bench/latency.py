"""Remote participants, measured: from a keypress to the frame that shows it, through a
network with a given round trip.

    python -m bench.latency [--rtt 0,100,200,300] [--seconds 20] [--mode server|browser|both]

A participant is rarely next to the server. This starts the real server (one process, a
temporary SQLite file, the load benchmark's 16x16 walker at 8 FPS), puts a TCP proxy in
front of it that holds every chunk, both ways, for half the round trip (websocket
traffic included, in order), and plays a scripted participant in Chromium (Debian's,
through Playwright) on the real game page through the proxy: an arrow key every 0.4 to
0.9 s, as a person exploring would. For each round trip it prints one line:

    rtt 300 ms: keypress-to-frame p50 212 ms p95 298 ms, late inputs 41 %

* keypress-to-frame: from the key's ``keydown`` in the page to the moment the page shows
  the frame of the tick that applied it (the page's ``data-tick`` attribute, set when a
  state is drawn), both on the page's clock;
* late inputs: the share of keys applied by a later tick than the first one after the
  key was pressed (from the record: the tick's time against the key's time on the
  server's clock); at a round trip over twice the frame period, every key is late.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.load import BENCH_PROBLEM, Server, percentile

CHROMIUM = "/usr/bin/chromium"
ARROWS = ("ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight")
WATCH = """() => {
  const panel = document.querySelector("[data-tick]") || document.querySelector(".gs-game");
  window.__keys = []; window.__shown = {};
  document.addEventListener("keydown", () => window.__keys.push(Date.now()), true);
  new MutationObserver(() => {
    const tick = panel.dataset.tick;
    if (tick !== undefined && !(tick in window.__shown)) window.__shown[tick] = Date.now();
  }).observe(panel, { attributes: true, attributeFilter: ["data-tick"] });
}"""


class DelayProxy:
    """A TCP proxy on a loopback port that delays every chunk, each way, by ``delay``
    seconds, keeping their order (a network with a round trip of twice ``delay``)."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port, self.delay = target_port, delay
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True,
                                       name="delay-proxy")
        self.thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._connect, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _connect(self, reader: Any, writer: Any) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        with contextlib.suppress(asyncio.CancelledError):  # the proxy is closing
            await asyncio.gather(self._pump(reader, upstream_writer),
                                 self._pump(upstream_reader, writer), return_exceptions=True)

    async def _pump(self, reader: Any, writer: Any) -> None:
        """Carry one direction: each chunk leaves ``delay`` after it arrived."""
        held: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await held.get()
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if chunk is None:
                    break
                writer.write(chunk)
                await writer.drain()
            with contextlib.suppress(OSError):
                writer.close()

        sender = asyncio.ensure_future(deliver())
        try:
            while chunk := await reader.read(65536):
                held.put_nowait((self.loop.time() + self.delay, chunk))
        except OSError:
            pass
        held.put_nowait((self.loop.time() + self.delay, None))
        await sender

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _shutdown(self) -> None:
        self.server.close()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        """Stop listening and drop every connection."""
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@contextlib.contextmanager
def delayed(target_port: int, rtt_ms: float) -> Iterator[DelayProxy]:
    """A :class:`DelayProxy` in front of ``target_port`` for a round trip of ``rtt_ms``."""
    proxy = DelayProxy(target_port, rtt_ms / 2000)
    try:
        yield proxy
    finally:
        proxy.close()


MODES = ("server", "browser")
BROWSER_PROBLEM = "key_and_door/planning"
"""The library problem browser play is measured on (the walker is not in the engine
archive): arrow keys move, at 6 FPS, the library's fastest."""
LOGGED = "() => document.querySelector('.gs-game').gridstudy.local.logged()"
STORED = "(n) => Number(document.querySelector('.gs-game').dataset.stored) >= n"


def play(page: Any, url: str, seconds: float, rng: random.Random, problem: str = BENCH_PROBLEM,
         mode: str = "server") -> dict[str, Any]:
    """Open ``problem``'s game page at ``url`` (played by the server or, ``mode`` browser,
    in the page) and press arrows for ``seconds``; the page's key and frame times."""
    if mode == "browser":
        page.goto(f"{url}/play/{problem}?play=browser")
        page.wait_for_selector(".gs-game[data-engine=ready]", timeout=120_000)
    else:
        page.goto(f"{url}/play/{problem}?record=1")
        page.wait_for_selector("[data-tick]", timeout=30_000)
    page.evaluate(WATCH)
    page.locator("canvas[data-gs=grid]").focus()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        page.keyboard.press(rng.choice(ARROWS))
        time.sleep(rng.uniform(0.4, 0.9))
    time.sleep(1.5)  # the last frames arrive
    if mode == "browser":  # and the log is stored
        page.wait_for_function(STORED, arg=page.evaluate(LOGGED), timeout=30_000)
    return page.evaluate("() => ({keys: window.__keys, shown: window.__shown})")


def applied_inputs(db: str) -> tuple[list[tuple[int, float, float]], float]:
    """The last episode's applied inputs as (tick, tick time, key time on the server's
    clock), in order, and its frame period (the median time between its ticks)."""
    from sqlalchemy import text

    from records.database import make_engine

    engine = make_engine(db)
    try:
        with engine.connect() as connection:
            episode = connection.execute(text("SELECT max(id) FROM episode")).scalar()
            rows = connection.execute(text(
                "SELECT tick, server_time, client_time, source, action FROM event "
                "WHERE episode_id = :e AND applied ORDER BY seq"), {"e": episode}).all()
    finally:
        engine.dispose()
    times = [row[1] for row in rows]
    period = percentile([b - a for a, b in zip(times, times[1:], strict=False)], 0.5)
    arrows = {"up", "down", "left", "right"}
    return [tuple(row[:3]) for row in rows if row[3] == "input" and row[4] in arrows], period


def figures(seen: dict[str, Any], inputs: list[tuple[int, float, float]],
            period: float, browser: bool = False) -> dict[str, float]:
    """Keypress-to-frame times (ms) and the share of late inputs, from the page's times
    and the record (the k-th key is the k-th applied input: keys are seconds apart)."""
    keys, shown = seen["keys"], {int(t): at for t, at in seen["shown"].items()}
    waits = [shown[tick + 1] - key for key, (tick, _, _) in zip(keys, inputs, strict=False)
             if tick + 1 in shown]
    if browser:  # ticked by the page: the first tick it showed after the key, its clock
        late = [tick + 1 > min((t for t, at in shown.items() if at > key), default=tick + 1)
                for key, (tick, _, _) in zip(keys, inputs, strict=False)]
    else:  # ticked by the server: the tick's time against the key's, on the server's clock
        late = [at - pressed > period + 0.002 for _, at, pressed in inputs if pressed is not None]
    return {"keys": len(keys), "applied": len(inputs), "p50": percentile(waits, 0.5),
            "p95": percentile(waits, 0.95), "late": 100 * sum(late) / max(1, len(late))}


def line(rtt: float, found: dict[str, float]) -> str:
    return (f"rtt {rtt:.0f} ms: keypress-to-frame p50 {found['p50']:.0f} ms "
            f"p95 {found['p95']:.0f} ms, late inputs {found['late']:.0f} %")


def measure(rtts: list[float], seconds: float, seed: int = 1, modes: tuple[str, ...] = ("server",),
            problem: str | None = None) -> list[dict[str, float]]:
    """One server; for each round trip and mode a fresh proxy, browser context and
    attempt (at ``problem``: the walker, or :data:`BROWSER_PROBLEM` when the browser
    plays)."""
    problem = problem or (BROWSER_PROBLEM if "browser" in modes else BENCH_PROBLEM)
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("GRIDSTUDY_PREVIEW", "open")
    rng = random.Random(seed)
    found = []
    with tempfile.TemporaryDirectory() as folder:
        server = Server(None, "gevent", 1, Path(folder))
        port = int(server.url.rsplit(":", 1)[1])
        try:
            with sync_playwright() as playwright:
                chromium = playwright.chromium.launch(executable_path=CHROMIUM,
                                                      args=["--no-sandbox"])
                for rtt in rtts:
                    for mode in modes:
                        with delayed(port, rtt) as proxy:
                            context = chromium.new_context()
                            seen = play(context.new_page(), proxy.url, seconds, rng, problem, mode)
                            context.close()
                        inputs, period = applied_inputs(server.db)
                        found.append({"rtt": rtt, "mode": mode, **figures(seen, inputs, period, mode == "browser")})
                chromium.close()
        finally:
            server.stop()
            server.close()
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtt", default="0,100,200,300",
                        help="round trips in milliseconds, comma-separated (0,100,200,300)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="seconds of play per round trip (20)")
    parser.add_argument("--mode", choices=(*MODES, "both"), default="server",
                        help="where the game ticks: the server (the default), the page "
                             "(browser play), or both, one after the other at each round trip")
    parser.add_argument("--problem", default=None,
                        help=f"the problem played (default: the 8 FPS walker; {BROWSER_PROBLEM}, "
                             "at 6 FPS, when the browser plays)")
    args = parser.parse_args(argv)
    try:
        rtts = [float(value) for value in args.rtt.split(",")]
    except ValueError:
        parser.error(f"--rtt takes milliseconds separated by commas, got {args.rtt!r}")
    if any(rtt < 0 for rtt in rtts):
        parser.error("a round trip cannot be negative")
    modes = MODES if args.mode == "both" else (args.mode,)
    for found in measure(rtts, args.seconds, modes=modes, problem=args.problem):
        print(f"{found['mode']:7}", line(found["rtt"], found),
              f"({found['keys']} keys, {found['applied']} applied)", flush=True)


if __name__ == "__main__":
    main()
