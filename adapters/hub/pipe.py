"""RunPipe: one run's path to its threads — events -> RunView -> Fanout (an outbox per thread), plus the
view's timer.

`on_event` is the run's synchronous sink: it never blocks and never raises. What the view holds
back (gathered prose, a throttled status edit) is sent by one loop timer set exactly at
`view.due_in()`, so a quiet run costs no wake-ups and a waiting one no task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from adapters.hub.fanout import Fanout
from adapters.platform import OutMessage
from adapters.view import RunView
from flower_core import Event

log = logging.getLogger(__name__)


class RunPipe:
    def __init__(self, view: RunView, fanout: Fanout, *, observers: Iterable[Callable[[Event], object]] = ()) -> None:
        self.view, self.fanout = view, fanout
        self.observers = list(observers)  # e.g. the oracle's observe(); called first, errors swallowed
        self.errors = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None  # the view's next due time (None: nothing due)
        self._closed = False

    def start(self) -> None:
        """Begin keeping the view's timer on the running loop (idempotent)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._rearm()

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
        """Keep one timer at the view's next due time: a waiting run costs a timer entry, not a task."""
        if self._loop is None or self._closed:
            return
        due = self.view.due_in()
        if due is None:
            return
        at = self._loop.time() + max(due, 0.0)
        if self._timer is not None:
            if self._timer.when() <= at:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(at, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self._closed:
            return
        try:
            due = self.view.due_in()
            if due is not None and due <= 0:
                for m in self.view.tick():
                    self.fanout.put(m)
        except Exception as exc:  # never into the loop: the next event rearms
            self.errors += 1
            log.warning("run pipe %s: tick failed: %r", self.view.run_id, exc)
            return
        self._rearm()

    # ---- shutdown -----------------------------------------------------------------------------
    async def close(self, *, drain: bool = True) -> None:
        """Stop the ticker, send what the view still holds (drain) and close the outbox."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if drain:
            await self.fanout.flush()
        await self.fanout.close(drain=drain)
