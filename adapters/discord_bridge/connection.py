"""Keeping the gateway connection alive, whatever arrives on it.

Two faults discord.py leaves to the program that uses it:

- **A dispatch it cannot parse** (a field missing: an INTERACTION_CREATE without `token`, a
  MESSAGE_CREATE without `content`) raises inside its gateway loop and out of `Client.connect()`,
  which only catches network errors: the connection task ends, the socket stays open (the heartbeat
  thread keeps Discord satisfied), nothing reads the gateway any more, and nothing is logged.
  `guard_parsers` wraps every dispatch parser, so such a dispatch costs one warning line (the event
  and what was wrong with it, never the payload) and the next one is read as usual.
- **The connection task ending anyway** (a close code discord.py will not reconnect after, a crash in
  its loop, a frame it cannot decode). `Lifeline` watches that task: when it ends while the bridge
  is up, the death is logged as an error and the connection is made again — the process, its other
  front ends and every run go on meanwhile. The wait before each attempt is bounded: 1 s doubling to
  60 s after a crash (back to 1 s once a connection has held that long), and 15 minutes after a close
  code only a person can fix (a refused token, intents switched off in the portal), since every
  attempt identifies and Discord resets a token that identifies 1000 times in a day.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import discord

__all__ = ["FATAL_CLOSE_CODES", "Backoff", "Lifeline", "guard_parsers"]

log = logging.getLogger(__name__)

# Close codes after which discord.py closes the client instead of reconnecting (as Discord documents them).
FATAL_CLOSE_CODES = {4004: "authentication failed: DISCORD_TOKEN was refused", 4010: "invalid shard",
                     4011: "sharding required", 4012: "invalid API version", 4013: "invalid intents",
                     4014: "disallowed intents: switch MESSAGE CONTENT INTENT on in the Developer Portal"}


# ---- dispatches -------------------------------------------------------------------------------------
def guard_parsers(parsers: dict[str, Callable[[Any], None]]) -> None:
    """Wrap each of a discord.py ConnectionState's dispatch parsers (in place) so one that raises
    skips its dispatch instead of ending the connection. (discord.py has no public hook at this
    point: the gateway calls `ConnectionState.parsers[event](data)` directly.)"""
    for event, parse in list(parsers.items()):
        parsers[event] = _skipping(event, parse)


def _skipping(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(parse)
    def parse_or_skip(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:
            log.warning("discord: skipped a malformed %s dispatch: %s", event, fault(exc))
    return parse_or_skip


def fault(exc: BaseException) -> str:
    """What was wrong and where, without the values (a payload may carry an interaction token)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    if isinstance(exc, KeyError) and exc.args:
        return f"no {exc.args[0]!r} field{where}"
    return f"{type(exc).__name__}{where}"


# ---- the connection task --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backoff:
    first_s: float = 1.0  # after a crash; doubles each time, up to max_s
    max_s: float = 60.0  # also how long a connection must hold for the next crash to start at first_s again
    fatal_s: float = 900.0  # after a close code (or a refused login) that only a person can fix

    def after_crash(self, previous: float | None, lived_s: float) -> float:
        if previous is None or lived_s >= self.max_s:
            return self.first_s
        return min(previous * 2, self.max_s)


class Lifeline:
    """Owns the client's connection task once the first connection is up (`keep`), until `stop`.

    A client discord.py has closed (it does on a fatal close code) cannot be opened again, so
    `renew` is handed in: it builds a fresh client, puts it where the old one was, logs it in."""

    def __init__(self, client: discord.Client, renew: Callable[[], Awaitable[discord.Client]],
                 backoff: Backoff) -> None:
        self.client = client
        self._renew = renew
        self.backoff = backoff
        self.restarts = 0  # connections made again after a death
        self.up = asyncio.Event()  # set while a connection is ready (cleared when it dies)
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.gateway: asyncio.Task[None] | None = None  # the connection task being watched now

    @property
    def watching(self) -> bool:
        return self._task is not None and not self._task.done()

    def keep(self, first: asyncio.Task[None]) -> None:
        self.up.set()
        self._task = asyncio.create_task(self._watch(first), name="discord lifeline")
        self._task.add_done_callback(self._watch_ended)

    def _watch_ended(self, task: asyncio.Task[None]) -> None:
        """The watcher itself must not die unseen either (it returns only once stopping)."""
        if not task.cancelled() and task.exception() is not None:
            log.error("discord: the gateway watcher failed; Discord stays disconnected until a restart",
                      exc_info=task.exception())

    async def stop(self, close: Callable[[], Any], timeout: float = 10.0) -> None:
        """Stop for good: no more restarts, then `close()` the client and wait for the task to end."""
        self._stopping.set()
        await close()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _watch(self, current: asyncio.Task[None]) -> None:
        loop = asyncio.get_running_loop()
        delay: float | None = None
        began = loop.time()
        while True:
            self.gateway = current
            error = await _outcome(current)
            self.up.clear()
            if self._stopping.is_set():
                return
            fatal = _fatal(error)
            if fatal is not None:
                wait = self.backoff.fatal_s
            else:
                wait = delay = self.backoff.after_crash(delay, loop.time() - began)
            self._report(error, fatal, wait)
            await self._drop_socket()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait)
            if self._stopping.is_set():
                return
            self.restarts += 1
            began = loop.time()
            current = asyncio.create_task(self._connect_again(), name="discord gateway")

    async def _connect_again(self) -> None:
        if self.client.is_closed():  # discord.py closed it (a fatal close code): a fresh one
            if self._stopping.is_set():
                return
            self.client = await self._renew()
        client = self.client
        if self._stopping.is_set():  # stop() came during the login: close what it opened
            await client.close()
            return
        ready = asyncio.ensure_future(client.wait_for("ready"))
        ready.add_done_callback(self._said_ready)
        try:
            await client.connect(reconnect=True)
        finally:
            ready.cancel()

    def _said_ready(self, ready: asyncio.Future[Any]) -> None:
        if not ready.cancelled() and ready.exception() is None:
            self.up.set()
            log.info("discord: connected again (restart %d); commands and buttons work again", self.restarts)

    def _report(self, error: BaseException | None, fatal: str | None, wait: float) -> None:
        again = f"connecting again in {wait:g}s"
        if fatal is not None:
            log.error("discord: the gateway connection is down: %s; %s", fatal, again)
        elif error is None:
            log.error("discord: the gateway connection ended by itself; %s", again)
        else:
            log.error("discord: the gateway connection died (%s); %s", fault(error), again, exc_info=error)

    async def _drop_socket(self) -> None:
        """A connection task that crashed leaves its socket open (and heartbeating): close it, or
        Discord keeps sending dispatches to a socket nobody reads."""
        ws = self.client.ws
        if ws is not None and ws.open:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(code=4000), 10)


async def _outcome(task: asyncio.Task[None]) -> BaseException | None:
    """How a connection task ended: None when it returned, else what it raised (a cancellation of
    this watcher itself still propagates)."""
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        return asyncio.CancelledError()
    except Exception as exc:
        return exc
    return None


def _fatal(error: BaseException | None) -> str | None:
    """Why retrying soon is pointless, when it is."""
    if isinstance(error, discord.PrivilegedIntentsRequired):
        return f"close code 4014 ({FATAL_CLOSE_CODES[4014]})"
    if isinstance(error, discord.ConnectionClosed) and error.code in FATAL_CLOSE_CODES:
        return f"close code {error.code} ({FATAL_CLOSE_CODES[error.code]})"
    if isinstance(error, discord.LoginFailure):
        return "Discord refused DISCORD_TOKEN (401 Unauthorized)"
    return None
