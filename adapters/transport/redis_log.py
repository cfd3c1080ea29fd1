"""HeldLog: one held run's intent log as its engine sees it (a RunLog: one run, bound to its holder's gen).

    front ── XADD {p}:run:{id}:in ──▶ the stream (durable: that is when "ok" may be said)
                                          │ read at take time (`load`), then as entries arrive
    holder ── HeldLog.unsettled() ◀────────┘  what is in the stream and not in the settled hash
          ── HeldLog.settle() ──▶ `write` (the worker's fenced HSET into {p}:run:{id}:settled)

- `unsettled`: the stream's intents whose iid the settled hash does not name, read once when the run
  is taken; from then on kept here (new entries come through `arrived`, settles take them out). Only
  this holder settles this run's intents (its writes are fenced by its gen), so memory stays true.
- `settle`: takes the intent out here at once and hands the durable mark to `write`, which waits
  for the run's session appends before writing (nothing is recorded as consumed before the turn it
  depends on is in Redis) and is refused if another holder took over.
- `append` is the front's (RedisRun.submit): a worker never appends.

Safe from any thread: calls from elsewhere hop to the worker's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapters.hop import hop
from adapters.transport import wire
from adapters.transport.intents import Intent, Settled

if TYPE_CHECKING:
    from redis.asyncio import Redis


@dataclass(frozen=True)
class Logged:
    """An intent as it sits in the stream: `reply`, the front waits for one."""

    intent: Intent
    reply: bool = False

    @classmethod
    def of(cls, fields: dict[Any, Any]) -> Logged | None:
        intent = wire.intent_of(fields)
        if intent is None:
            return None
        return cls(intent, bool(wire.text(fields, "reply")))


class HeldLog:
    def __init__(self, run_id: str, gen: int, backlog: list[Logged], settled: set[str],
                 write: Callable[[str, Settled], None]) -> None:
        self.run_id, self.gen, self._write = run_id, gen, write
        self._open: dict[str, Logged] = {e.intent.iid: e for e in backlog if e.intent.iid not in settled}
        self._settled = set(settled)
        self._loop: asyncio.AbstractEventLoop | None = None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            pass

    @classmethod
    async def load(cls, redis: Redis, keys: wire.Keys, run_id: str, gen: int,
                   write: Callable[[str, Settled], None]) -> tuple[HeldLog, str]:
        """The log as Redis has it now, and the stream id new entries are read after."""
        async with redis.pipeline(transaction=True) as pipe:
            pipe.xrange(keys.intents(run_id), "-", "+")
            pipe.hkeys(keys.settled(run_id))
            entries, settled = await pipe.execute()
        backlog = [e for _id, fields in entries if (e := Logged.of(fields)) is not None]
        cursor = str(entries[-1][0]) if entries else "0-0"
        return cls(run_id, gen, backlog, {str(s) for s in settled}, write), cursor

    # ---- the worker's side ----------------------------------------------------------------------
    def arrived(self, logged: Logged) -> bool:
        """A new entry was read: True when it is news (not settled, not known: a retried XADD is not)."""
        iid = logged.intent.iid
        if iid in self._settled or iid in self._open:
            return False
        self._open[iid] = logged
        return True

    def backlog(self) -> list[Logged]:
        """What was unsettled when the run was taken, with how it was sent, oldest first."""
        return list(self._open.values())

    # ---- the engine's side: one run's IntentLog (append / unsettled / settle, no run id) -------------
    def append(self, intent: Intent) -> bool:
        raise RuntimeError("intents are appended by the front (RedisRun.submit), never by a worker")

    def unsettled(self) -> list[Intent]:
        return [e.intent for e in self._open.values()]

    def settle(self, iid: str, how: Settled) -> None:
        if hop(self._loop, self.settle, iid, how):
            return
        if iid in self._settled:
            return
        self._settled.add(iid)
        self._open.pop(iid, None)
        self._write(iid, Settled(how))
