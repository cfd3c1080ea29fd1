"""RunPipe: one run's path to its threads — events -> RunView -> Fanout (an outbox per thread), plus the
view's timer.

`on_event` is the run's synchronous sink: it never blocks and never raises. What the view holds
back (gathered prose, a throttled status edit) is sent by a small ticker task that sleeps exactly
until `view.due_in()`, so a quiet run costs no wake-ups.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from adapters.hub.fanout import Fanout
from adapters.surface import OutMessage
from adapters.view import RunView
from flower_core import Event

log = logging.getLogger(__name__)


class RunPipe:
    def __init__(self, view: RunView, fanout: Fanout, *, observers: Iterable[Callable[[Event], object]] = ()) -> None:
        self.view, self.fanout = view, fanout
        self.observers = list(observers)  # e.g. the oracle's observe(); called first, errors swallowed
        self.errors = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kick: asyncio.Event | None = None
        self._deadline: float | None = None  # loop time the ticker sleeps until (None: idle)
        self._ticker: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        """Start the ticker on the running loop (idempotent)."""
        if self._ticker is None:
            self._loop = asyncio.get_running_loop()
            self._kick = asyncio.Event()
            self._ticker = self._loop.create_task(self._tick_loop(), name=f"view ticker {self.view.run_id}")

    # ---- producer side ------------------------------------------------------------------------
    def on_event(self, ev: Event) -> None:
        """The run's sink, on the chat loop (events cross onto it once, in the transport)."""
        try:
            for observe in self.observers:
                try:
                    observe(ev)
                except Exception:
                    self.errors += 1
            self.put(self.view.on_event(ev))
        except Exception as exc:  # never into the run
            self.errors += 1
            log.warning("run pipe %s: event dropped: %r", self.view.run_id, exc)

    def put(self, msgs: Iterable[OutMessage]) -> None:
        for m in msgs:
            self.fanout.put(m)
        self._rearm()

    def _rearm(self) -> None:
        if self._kick is None or self._loop is None or self._closed:
            return
        due = self.view.due_in()
        if due is None:
            return
        at = self._loop.time() + due
        if self._deadline is None or at < self._deadline:
            self._kick.set()

    async def _tick_loop(self) -> None:
        assert self._kick is not None and self._loop is not None
        while not self._closed:
            due = self.view.due_in()
            self._deadline = None if due is None else self._loop.time() + due
            self._kick.clear()
            if due is None:
                await self._kick.wait()
                continue
            if due > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._kick.wait(), timeout=due)
                continue
            for m in self.view.tick():
                self.fanout.put(m)
            await asyncio.sleep(0)  # let the outbox run between ticks

    # ---- shutdown -----------------------------------------------------------------------------
    async def close(self, *, drain: bool = True) -> None:
        """Stop the ticker, send what the view still holds (drain) and close the outbox."""
        self._closed = True
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if drain:
            await self.fanout.flush()
        await self.fanout.close(drain=drain)
