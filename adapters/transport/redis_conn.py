"""One way to open Redis for the transport: reconnecting, with backoff, so a Redis restart is a pause.

redis-py's own Retry re-sends a command after a dropped connection; that can repeat a write whose
reply was lost, which is why every message we write carries an id the reader deduplicates on
(`seq` for run messages, `iid` for intents).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from adapters.platform import StartRefused

log = logging.getLogger(__name__)

T = TypeVar("T")
DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


MAX_CONNECTIONS = 2000  # blocking reads and replies hold one each (a worker: one per held run)


def connect(url: str) -> Redis:
    """A client whose pool waits for a free connection rather than failing when a burst takes them all."""
    pool = BlockingConnectionPool.from_url(url, decode_responses=True, max_connections=MAX_CONNECTIONS, timeout=None,
                                           retry=Retry(ExponentialBackoff(cap=0.5, base=0.02), retries=8),
                                           retry_on_error=[RedisConnectionError, RedisTimeoutError],
                                           health_check_interval=10)
    return Redis.from_pool(pool)  # the client owns the pool: aclose() closes both


def where(url: str) -> str:
    """The URL without its credentials, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}" if host else parts.scheme


async def reachable(r: Redis, url: str, *, timeout_s: float = 5.0) -> None:
    """Fail at start, in one sentence, when Redis is not there (later outages are waited out instead)."""
    try:
        await asyncio.wait_for(r.ping(), timeout_s)
    except (*DOWN, TimeoutError) as exc:
        raise StartRefused(f"cannot reach Redis at {where(url)}: {exc or type(exc).__name__}") from None


async def ensure_group(r: Redis, stream: str, group: str) -> None:
    """Create the consumer group (and the stream) unless it exists."""
    try:
        await r.xgroup_create(stream, group, id="0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


async def persist(what: str, call: Callable[[], Awaitable[T]], *, stopping: Callable[[], bool] = lambda: False,
                  cap_s: float = 2.0) -> T:
    """Call until Redis answers (a restart, a network blip): writes that must not be lost wait instead.
    Raises CancelledError when cancelled, and the last error once `stopping()` says so."""
    delay = 0.05
    while True:
        try:
            return await call()
        except DOWN as exc:
            if stopping():
                raise
            log.warning("redis unavailable (%s): %r; retrying in %.2fs", what, exc, delay)
            await asyncio.sleep(delay)
            delay = min(cap_s, delay * 2)


async def cancel_all(tasks: Iterable[asyncio.Future[Any]], timeout: float) -> int:
    """Cancel and wait, cancelling again what is still running, for at most `timeout`; how many are left.

    Once is not enough: on Python 3.11 a task cancelled while redis-py's `asyncio.wait_for` finishes a
    write can lose the cancellation and go on (CPython gh-86296), so a loop that relies on cancel alone
    never ends, and whoever gathers it waits forever."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pending = {t for t in tasks if not t.done()}
    while pending and loop.time() < deadline:
        for task in pending:
            task.cancel()
        _done, pending = await asyncio.wait(pending, timeout=min(0.1, max(0.0, deadline - loop.time())))
    return len(pending)
