"""Several server processes behind nginx: ``gridstudy serve --workers N``.

Flask-SocketIO's deployment for more than one process: N gevent workers on loopback
ports, nginx in front with *sticky* routing, a Redis message queue so that an emit from
any worker reaches a client connected to another, and one PostgreSQL database. Which
worker ticks which session is decided in the database (``study_server/cluster.py``).

Routing is by a hash of the ``gridstudy_route`` cookie (every response sets one at a
browser's first visit), else of the ``Authorization`` header (an agent's token), else of
the request's id (a first visit, spread at random): one participant's pages, their
Socket.IO connection and its polling requests all reach the same worker, and one agent's
turns too. When a worker dies nginx sends its clients to another (``hash ...
consistent`` moves only that worker's share), where they join their sessions again and
the new worker rebuilds them by replay.

:func:`nginx_config` is the configuration for any set of workers, on this machine or on
several (``gridstudy serve --print-nginx-config``); :class:`Supervisor` runs the workers and
nginx on this machine, restarting a worker that dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from study_server.services import Service, die_with_parent, free_port, start_nginx, wait_for_port

ROUTE_COOKIE = "gridstudy_route"
RESTART_DELAY = 1.0
"""Seconds before a worker that died is started again."""
WORKER_COMMAND = (sys.executable, "-m", "study_server.cli", "serve", "--worker")
"""How a worker starts (the load benchmark starts its own, with its problem registered)."""
MAX_QUICK_DEATHS = 5
"""A worker that dies this many times within a minute of its start is not started again."""


def nginx_config(upstreams: Sequence[str], listen: str, folder: str | Path) -> str:
    """nginx's configuration: listen on ``listen`` (host:port) and route to the workers at
    ``upstreams`` (host:port each) by the sticky key above; logs, pid and temporary files
    under ``folder``."""
    from study_server.connections import CONNECTIONS_PER_ADDRESS as per_address

    folder = Path(folder).resolve()
    # A location that sets any header inherits none from its server: each sets them all.
    headers = "\n".join(f"            proxy_set_header {name} {value};" for name, value in (
        ("Host", "$http_host"), ("X-Forwarded-For", "$proxy_add_x_forwarded_for"),
        ("X-Forwarded-Proto", "$scheme"), ("X-Forwarded-Host", "$http_host")))
    servers = "\n".join(f"        server {address} max_fails=1 fail_timeout=5s;"
                        for address in upstreams)
    temp = "\n".join(f"    {kind}_temp_path {folder}/temp/{kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""# Written by gridstudy (study_server/workers.py).
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
{temp}
    # At most {per_address} requests at once per client address, a websocket counting for
    # its whole life, the server's own machine apart: what each worker allows in
    # connections (study_server/connections.py). One that sends no request is closed
    # after client_header_timeout (60 s).
    geo $gridstudy_counted {{
        default     1;
        127.0.0.0/8 0;
        ::1         0;
    }}
    map $gridstudy_counted $gridstudy_address {{
        0 "";
        1 $binary_remote_addr;
    }}
    limit_conn_zone $gridstudy_address zone=gridstudy_addresses:10m;
    limit_conn_log_level warn;
    # The sticky key: the participant's cookie, else the agent's token, else at random.
    map "$cookie_{ROUTE_COOKIE}|$http_authorization" $gridstudy_route {{
        "~^(?<route>[^|]+)[|]"  $route;
        "~^[|](?<token>.+)$"    $token;
        default                 $request_id;
    }}
    upstream gridstudy {{
        hash $gridstudy_route consistent;
{servers}
    }}
    server {{
        listen {listen};
        limit_conn gridstudy_addresses {per_address};
        client_max_body_size 20m;
        # A new connection per request: one to a worker that has died is refused before
        # the request is sent, and nginx may then send it, even a POST, to another.
        proxy_next_upstream error timeout;
        proxy_connect_timeout 2s;
        location /socket.io/ {{
            proxy_pass http://gridstudy;
            proxy_http_version 1.1;
{headers}
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_buffering off;
            proxy_read_timeout 3600s;
        }}
        location / {{
            proxy_pass http://gridstudy;
            proxy_http_version 1.1;
{headers}
            proxy_read_timeout 600s;
        }}
    }}
}}
"""


class Supervisor:
    """N workers (``gridstudy serve --worker``) and nginx, on this machine."""

    def __init__(self, workers: int, host: str, port: int, folder: Path,
                 worker_args: Sequence[str], env: dict[str, str] | None = None,
                 say: Callable[[str], Any] = print,
                 on_death: Callable[[int], Any] = lambda pid: None,
                 command: Sequence[str] = WORKER_COMMAND) -> None:
        self.count, self.host, self.port = workers, host, port
        self.folder = Path(folder)
        self.command = [*command, *worker_args]
        self.env = {**os.environ, **(env or {})}
        self.say, self.on_death = say, on_death
        self.ports = [free_port() for _ in range(workers)]
        self.processes: dict[int, subprocess.Popen] = {}
        self.started: dict[int, float] = {}
        self.deaths: dict[int, list[float]] = {p: [] for p in self.ports}
        self.nginx: Service | None = None
        self.stopping = False

    def start(self) -> None:
        """Start every worker, wait until each listens, then nginx in front; if any of
        them fails to start, stop the others before saying why."""
        try:
            for port in self.ports:
                self._start_worker(port)
            for port in self.ports:
                wait_for_port(port, self.processes[port], f"the worker on port {port}",
                              self.folder / f"worker-{port}.log", timeout=90)
            self.nginx = start_nginx(self.folder / "nginx", nginx_config(
                [f"127.0.0.1:{p}" for p in self.ports], f"{self.host}:{self.port}",
                self.folder / "nginx"), self.port)
        except BaseException:
            self.stop()
            raise

    def _start_worker(self, port: int) -> None:
        command = [*self.command, "--host", "127.0.0.1", "--port", str(port)]
        log = (self.folder / f"worker-{port}.log").open("ab")
        self.processes[port] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                env=self.env, preexec_fn=die_with_parent)
        self.started[port] = time.monotonic()

    def watch(self) -> None:
        """Until :meth:`stop`: restart a worker that died (its clients have already moved
        to the others), unless it keeps dying at once; nginx dying ends everything."""
        while not self.stopping:
            time.sleep(0.2)
            if self.nginx is not None and self.nginx.process.poll() is not None:
                self.say(f"nginx stopped (code {self.nginx.process.returncode}); see "
                         f"{self.nginx.log}. Stopping the workers.")
                return
            for port, process in list(self.processes.items()):
                code = process.poll()
                if code is None or self.stopping:
                    continue
                try:
                    self.on_death(process.pid)
                except Exception as error:  # the database is down too: the timeout will do
                    self.say(f"could not mark the dead worker: {error}")
                now = time.monotonic()
                recent = [t for t in self.deaths[port] if now - t < 60] + [now]
                self.deaths[port] = recent
                log = self.folder / f"worker-{port}.log"
                if len(recent) >= MAX_QUICK_DEATHS:
                    self.say(f"the worker on port {port} died {len(recent)} times within a "
                             f"minute; not restarting it (see {log})")
                    del self.processes[port]
                    continue
                self.say(f"the worker on port {port} exited (code {code}); its participants "
                         f"carry on on the others; restarting it (log: {log})")
                time.sleep(RESTART_DELAY)
                self._start_worker(port)
            if not self.processes:
                self.say("no worker is left; stopping")
                return

    def stop(self) -> None:
        """SIGTERM to every worker (each writes out its queue and leaves its leases), then
        nginx."""
        self.stopping = True
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
        if self.nginx is not None:
            self.nginx.stop()
