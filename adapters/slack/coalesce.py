"""Coalescer: per key, only the latest wanted value reaches Slack, once it has held for a moment.

    put(key, v1) ──┐ quiet for window_s ┌── v2 wins, sent once (or not at all when it equals what
    put(key, v2) ──┘  (at most max_hold_s) └── was sent); put(key, v, now=True) cuts the wait short

A run that asks a question flips its status card and its agent session running → waiting → running
within a few milliseconds when the answer comes quickly. Sending each flip costs four Web API calls
that show nothing a person could see; waiting until the key has been quiet for `window_s` and sending only
the last one (skipped when it is what Slack already shows) leaves one call, or none.

One task per key while a change waits, none when idle; what stays is the last value sent per key
(bounded, least recently used first out). `send` returns whether the value reached Slack: when it
did not, it is not remembered as sent, so the next change tries again. `send` never raising is its
own job; an exception is logged and dropped. Every wait has a deadline: `flush` and `close` send
what waits at once, and `close` cancels what has not finished within its timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from adapters.lru import LRU

__all__ = ["Coalescer"]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Coalescer(Generic[K, V]):
    def __init__(self, send: Callable[[K, V], Awaitable[bool]], *, window_s: float = 1.0,
                 max_hold_s: float | None = None, max_keys: int = 4096, name: str = "coalescer") -> None:
        if window_s < 0:
            raise ValueError("window_s must be >= 0")
        self.window_s = window_s
        # A key changing all the time is still sent this often (the window restarts with each change).
        self.max_hold_s = 3 * window_s if max_hold_s is None else max(window_s, max_hold_s)
        self.name = name
        self.sent_count = 0  # values that reached Slack
        self.skipped = 0  # changes folded into a later one or equal to what was shown
        self._send = send
        self._pending: dict[K, V] = {}
        self._urgent: dict[K, asyncio.Event] = {}
        self._last_put: dict[K, float] = {}
        self._sent: LRU[K, V] = LRU(max_keys)
        self._tasks: dict[K, asyncio.Task[None]] = {}

    def put(self, key: K, value: V, *, now: bool = False) -> None:
        """Want `value` shown for `key`. Synchronous, never raises; without a running loop it is dropped."""
        if key in self._pending:
            self.skipped += 1
        self._pending[key] = value
        self._last_put[key] = time.monotonic()
        urgent = self._urgent.setdefault(key, asyncio.Event())
        if now:
            urgent.set()
        task = self._tasks.get(key)
        if task is None or task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._pending.pop(key, None)
                self._urgent.pop(key, None)
                return
            self._tasks[key] = loop.create_task(self._drain(key), name=f"{self.name} {key}")

    def shown(self, key: K) -> V | None:
        """The last value that reached Slack for `key` (None when none, or forgotten)."""
        return self._sent.get(key)

    def mark_shown(self, key: K, value: V) -> None:
        """`value` reached Slack another way (posted): a later change equal to it is not sent."""
        self._sent.put(key, value)

    def forget(self, key: K) -> None:
        """Drop what is remembered as sent for `key` (its thread is over)."""
        self._sent.discard(key)

    @property
    def waiting(self) -> int:
        """Keys with a change not sent yet."""
        return len(self._pending)

    async def flush(self, timeout: float = 10.0) -> None:
        """Send every waiting change now and wait (at most `timeout`) until all are sent or given up."""
        for event in self._urgent.values():
            event.set()
        tasks = [t for t in self._tasks.values() if not t.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    async def close(self, timeout: float = 5.0) -> None:
        """Flush (bounded by `timeout`), then cancel whatever is still under way."""
        await self.flush(timeout)
        tasks = [t for t in self._tasks.values() if not t.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._pending.clear()
        self._urgent.clear()

    async def _drain(self, key: K) -> None:
        try:
            while key in self._pending:
                urgent = self._urgent.setdefault(key, asyncio.Event())
                held_until = time.monotonic() + self.max_hold_s
                # Wait until the key has been quiet for window_s (or held max_hold_s, or urgent).
                while not urgent.is_set():
                    quiet_at = min(self._last_put.get(key, 0.0) + self.window_s, held_until)
                    wait = quiet_at - time.monotonic()
                    if wait <= 0:
                        break
                    try:
                        await asyncio.wait_for(urgent.wait(), wait)
                    except TimeoutError:
                        pass
                urgent.clear()
                value = self._pending.pop(key)
                if value == self._sent.get(key):
                    self.skipped += 1
                    continue
                try:
                    ok = await self._send(key, value)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a bug in send: log it, never stop the thread's later changes
                    log.warning("%s: sending %s failed: %r", self.name, key, exc)
                    ok = False
                if ok:
                    self._sent.put(key, value)
                    self.sent_count += 1
        finally:
            if key not in self._pending:
                self._urgent.pop(key, None)
                self._last_put.pop(key, None)
                if self._tasks.get(key) is asyncio.current_task():
                    del self._tasks[key]
