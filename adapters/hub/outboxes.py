"""Outboxes: one outbox per thread on demand, each paced by the rate budget of its platform and
channel (shared by every thread there), remembering its platform message ids in the state store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable

from adapters.hub.platforms import Platforms
from adapters.outbox import Outbox
from adapters.platform import OutMessage, ThreadRef
from adapters.ratelimit import RateBudget
from adapters.state import StateStore


class Outboxes:
    def __init__(self, platforms: Platforms, store: StateStore, *, clock: Callable[[], float] = time.monotonic,
                 sleeper: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        self.platforms, self.store, self.clock, self.sleeper = platforms, store, clock, sleeper
        self._budgets: dict[tuple[str, str], RateBudget] = {}

    def outbox(self, thread: ThreadRef, *, on_sent: Callable[[OutMessage, str], object] | None = None) -> Outbox:
        surface = self.platforms.surface(thread.platform)
        budget = self._budgets.setdefault((thread.platform, thread.channel), RateBudget(surface.limits, self.clock))
        return Outbox(surface, thread, clock=self.clock, sleeper=self.sleeper, store=self.store, budget=budget,
                      on_sent=on_sent)

    async def say(self, thread: ThreadRef, msgs: Iterable[OutMessage]) -> None:
        """Messages for a thread no live run feeds (a run that is asleep): sent, then the outbox closed."""
        outbox = self.outbox(thread)
        for msg in msgs:
            outbox.put(msg)
        await outbox.flush()
        await outbox.close(drain=True)
