"""The engine loads in Chromium from our own server (Pyodide under ``/vendor/pyodide/``,
the archive under ``/engine/<digest>.zip``, no CDN) and plays to the server's frames;
the second load comes from the browser's cache."""

from __future__ import annotations

import httpx

from bench.browser_engine import LOAD, some_play
from study_server.engine import engine_digest
from tasks import registry
from tasks.worldtest.verify import frame_hashes

PROBLEMS = ("ant_trail/cd", "key_and_door/mfp", "cloud_burst/planning", "dagmap/high-n4")


def test_the_engine_loads_from_our_server_and_plays_to_the_same_frames(live_server, page):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{live_server.url}/login")
    jobs = [{"problem": pid, "actions": some_play(pid)} for pid in PROBLEMS]
    answer = page.evaluate(LOAD, [engine_digest(), jobs])
    for job, result in zip(jobs, answer["results"], strict=True):
        assert result["hashes"] == frame_hashes(registry.get_problem(job["problem"]),
                                                job["actions"]), job["problem"]
    assert requests and all(url.startswith(live_server.url) for url in requests)
    assert any(url.endswith("/vendor/pyodide/pyodide.asm.wasm") for url in requests)


def test_engine_files_are_named_by_version_and_nothing_else_is_served(live_server):
    digest = engine_digest()
    archive = httpx.get(f"{live_server.url}/engine/{digest}.zip")
    assert archive.status_code == 200
    assert archive.headers["content-type"] == "application/zip"
    assert "immutable" in archive.headers["cache-control"]
    assert httpx.get(f"{live_server.url}/engine/0000000000000000.zip").status_code == 404
    wasm = httpx.get(f"{live_server.url}/vendor/pyodide/pyodide.asm.wasm")
    assert wasm.status_code == 200 and wasm.headers["content-type"] == "application/wasm"
    for name in ("package.json", "..%2Fpackage.json", "console.html"):
        assert httpx.get(f"{live_server.url}/vendor/pyodide/{name}").status_code == 404
