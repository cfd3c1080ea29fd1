"""Fanout: one run's messages to every thread that shows it — its home thread and its mirrors.

Each thread has its own Outbox (its own queue, worker and the rate budget of its platform and
channel), so a platform shedding load (a Discord 429 storm) delays only its own threads: `put`
hands a message to every outbox at once and never waits on any of them.

A mirror has a scope: "all" (a followed thread: everything the home thread gets) or one message
key (a direct message to the owner carrying one ask card: only that card, then its outcome).
A message with `only_in` set (a receipt for mail written in one thread) goes to that thread alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from adapters.outbox import Outbox, OutboxStats
from adapters.platform import OutMessage, ThreadRef

log = logging.getLogger(__name__)

ALL = "all"


@dataclass
class Target:
    thread: ThreadRef
    outbox: Outbox
    scope: str = ALL

    def wants(self, msg: OutMessage) -> bool:
        if msg.only_in and msg.only_in != str(self.thread):
            return False
        return self.scope == ALL or msg.key == self.scope


class Fanout:
    """Duck-types the slice of Outbox a RunPipe uses (put / flush / close), over many outboxes."""

    def __init__(self, home: Target) -> None:
        self.home = home
        self._targets: dict[str, Target] = {str(home.thread): home}
        self._closing: set[asyncio.Task[None]] = set()

    # ---- targets ------------------------------------------------------------------------------
    @property
    def targets(self) -> list[Target]:
        return list(self._targets.values())

    def has(self, thread: ThreadRef) -> bool:
        return str(thread) in self._targets

    def add(self, target: Target, catch_up: Iterable[OutMessage] = ()) -> None:
        """Start showing the run in one more thread; `catch_up` is what it must show first (the
        status card, the open questions)."""
        old = self._targets.get(str(target.thread))
        if old is not None and old.scope == target.scope:
            return
        if old is not None:
            self._retire(old)
        self._targets[str(target.thread)] = target
        for msg in catch_up:
            if target.wants(msg):
                target.outbox.put(msg)

    def remove(self, thread: ThreadRef) -> bool:
        """Stop showing the run there (the home thread stays); what is queued for it still goes out."""
        target = self._targets.get(str(thread))
        if target is None or target is self.home:
            return False
        del self._targets[str(thread)]
        self._retire(target)
        return True

    def _retire(self, target: Target) -> None:
        task = asyncio.get_running_loop().create_task(target.outbox.close(drain=True))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    # ---- the Outbox slice -----------------------------------------------------------------------
    @property
    def stats(self) -> OutboxStats:
        """The home thread's outbox figures."""
        return self.home.outbox.stats

    def put(self, msg: OutMessage) -> None:
        for target in list(self._targets.values()):
            if target.wants(msg):
                target.outbox.put(msg)

    async def flush(self) -> None:
        await asyncio.gather(*(t.outbox.flush() for t in self.targets))

    async def close(self, *, drain: bool = True) -> None:
        await asyncio.gather(*(t.outbox.close(drain=drain) for t in self.targets), *self._closing,
                             return_exceptions=True)

