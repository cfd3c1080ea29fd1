"""Questions: what a HumanChannel knows about its asks, shared by the channel and its two collaborators.

    HumanChannel  ask · answer · decline ───────────────┐
    Pullers       next_ask (pull mode, below)           ├─▶ Questions: one lock over the asks, their waiters,
    Approver      approve · pending        (approval.py) │    the claimed, the parked, the keepers, the count
    Parking       park · settled · restore (parked.py)  ┘

An outcome is decided once: ``claim`` lets the first caller through and refuses every later one (an
answer racing a timeout, a click racing a withdraw). Answers arrive from any thread, so every field is
read and written under ``lock``, which guards the channel's mail as well. No I/O and no events here:
the channel applies an outcome (``HumanChannel._finish``) and tells the front ends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flower_core.human.ask import Ask

# keep(state, answer): makes a parked ask's outcome durable before it is applied (HumanChannel.keep_outcomes).
Keeper = Callable[[str, str], None]
# settle(ask_id, state, answer) -> bool: decide an outcome from any thread; False when no longer waiting.
Settle = Callable[[str, str, str], bool]
# finish(ask, state, answer): apply a decided outcome on the ask's loop (record, release, log, emit).
Finish = Callable[[Ask, str, str], None]


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def release(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


@dataclass(eq=False)
class Questions:
    """The asks of one channel and what is decided about them. Hold ``lock`` to read or change any field."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    asks: list[Ask] = field(default_factory=list)
    futures: dict[str, asyncio.Future[None]] = field(default_factory=dict)  # the waiter of each waiting ask
    claimed: set[str] = field(default_factory=set)  # asks whose outcome is decided (maybe not yet applied)
    parked: set[str] = field(default_factory=set)  # asks taken off their tool call (the CLI was closed); never shrinks
    keepers: dict[str, Keeper] = field(default_factory=dict)
    counted: int = 0  # asks counted against max_asks

    def new(self, question: str, options: list[str], *, kind: str = "", facts: dict[str, Any] | None = None,
            asked_at: float | None = None, restored: bool = False) -> Ask:
        """A new ask, numbered after the last ("q1", "q2", …), appended; asked now unless ``asked_at`` says."""
        with self.lock:
            ask = Ask(id=f"q{len(self.asks) + 1}", question=question, options=options, kind=kind,
                      facts=dict(facts or {}), restored=restored)
            if asked_at is not None:
                ask.asked_at = asked_at
            self.asks.append(ask)
            return ask

    def find(self, ask_id: str) -> Ask | None:
        with self.lock:
            return next((a for a in self.asks if a.id == ask_id), None)

    def open(self, ask_id: str) -> bool:
        """Waiting, and nobody has decided its outcome yet."""
        with self.lock:
            return ask_id not in self.claimed and ask_id in self.futures

    def claim(self, ask_id: str) -> bool:
        """Decide an outcome exactly once: the first caller wins, every later one gets False."""
        with self.lock:
            if not self.open(ask_id):
                return False
            self.claimed.add(ask_id)
            return True

    def waiting(self) -> list[Ask]:
        """Asks still waiting for an outcome, oldest first."""
        with self.lock:
            return [a for a in self.asks if a.state == "asked" and a.id not in self.claimed]


class Pullers:
    """Pull mode (``HumanChannel.next_ask``): each waiting ask goes to one puller; a new ask wakes them all."""

    def __init__(self, questions: Questions) -> None:
        self._questions = questions
        self._pulled: set[str] = set()
        self._waiters: list[asyncio.Future[None]] = []

    async def next(self, timeout: float | None = None) -> Ask | None:
        """The next waiting ask not yet pulled; None if none came within ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        lock = self._questions.lock
        while True:
            with lock:
                for a in self._questions.waiting():
                    if a.id not in self._pulled:
                        self._pulled.add(a.id)
                        return a
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append(waiter)
            left = None if deadline is None else deadline - loop.time()
            try:
                if left is not None and left <= 0:
                    return None
                await asyncio.wait({waiter}, timeout=left)
            finally:
                with lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
            if not waiter.done():
                return None

    def wake(self) -> None:
        """A question is waiting: every puller looks again (each on its own loop)."""
        with self._questions.lock:
            waiters, self._waiters = self._waiters, []
        here = running_loop()
        for w in waiters:
            loop = w.get_loop()
            if loop is here:
                release(w)
            else:
                try:
                    loop.call_soon_threadsafe(release, w)
                except RuntimeError:
                    pass
