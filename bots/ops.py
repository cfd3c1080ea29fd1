"""The operations side of a process: its health parts, metrics and health port, wired from what it runs.

`flower-bot`: one part per front end (each says its library's connection state) and Redis with
`--redis`; metrics over its hub. `flower-worker`: Redis and the worker's own loops; metrics over the
runs it holds. Both: `--health-port` serves the endpoints on 127.0.0.1 (the web page serves them too).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from adapters.ops.health import Probe
from adapters.ops.http import HealthServer, OpsEndpoints

if TYPE_CHECKING:
    from adapters.transport.redis_worker import RedisWorker

__all__ = ["WORKER_LOOPS", "health_port", "redis_probe", "worker_loops_probe"]

log = logging.getLogger("flower.ops")

WORKER_LOOPS = ("publisher", "heartbeat", "work", "claims")


def redis_probe(client: Any) -> Probe:
    """"up" when Redis answers PING (a client from adapters/transport/redis_conn.connect), else "down"."""
    async def probe() -> str:
        if client is None:
            return "down"
        try:
            await client.ping()
        except Exception:
            return "down"
        return "up"
    return probe


def worker_loops_probe(worker: RedisWorker) -> Probe:
    """"up" while every loop of the worker (publishing, heartbeat, taking work, claiming) is alive,
    else the names of those that ended. Read from the tasks the worker named after itself."""
    async def probe() -> str:
        alive = {t.get_name() for t in asyncio.all_tasks() if not t.done()}
        dead = [loop for loop in WORKER_LOOPS if f"worker {worker.name} {loop}" not in alive]
        return "up" if not dead else "stopped: " + ", ".join(dead)
    return probe


async def health_port(endpoints: OpsEndpoints, port: int | None) -> HealthServer | None:
    """The health port's server, started (None when no port is configured)."""
    if port is None:
        return None
    server = HealthServer(endpoints, port)
    await server.start()
    return server
