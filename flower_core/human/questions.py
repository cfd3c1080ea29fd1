"""Questions: what a HumanChannel knows about its asks, shared by the channel and its two collaborators.

    HumanChannel  ask · answer · decline · next_ask ──┐
    Approver      approve · pending        (approval.py) ├─▶ Questions: one lock over the asks, their waiters,
    Parking       park · settled · restore (parked.py)  ┘    the claimed, the parked, the keepers, the count

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
