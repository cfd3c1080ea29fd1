"""An engine double for the worker's own tests: no CLI, no model — what RedisWorker asks of an engine.

`KitDouble.build` makes an `EngineDouble` per take and keeps every one in `engines` (shared by every
worker given the kit: RedisWorker copies the kit, not the list), so a test sees all holders of a run.

The double asks one question when it starts, then waits; it ends when a test calls `finish()` (done),
on a stop intent (stopped), or when cancelled (died for "shutdown"). With a log it behaves like the
durable-intents engine: at start it replays `log.unsettled()`, it dedupes by iid, and it settles only
what a finished "turn" made durable (`turn_done()`), like an engine at a step's end. `stubborn`
ignores the first cancel for `stubborn_s` seconds (a CLI that will not hang up).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adapters.transport.base import RunEnd, RunSink
from adapters.transport.intents import Intent, IntentReply, Op, Settled
from adapters.transport.plan import RunPlan
from flower_core import Event

QUESTION = "Tabs or spaces?"


class EngineDouble:
    holder = ""

    def __init__(self, run_id: str, plan: RunPlan, sink: RunSink, log: Any, *, stubborn_s: float = 0.0) -> None:
        self.run_id, self.plan, self.sink, self.log = run_id, plan, sink, log
        self.applied: list[Intent] = []  # every intent this holder applied, in order (replays included)
        self.stubborn_s = stubborn_s
        self.cancelled = ""  # the reason of the cancel it got
        self._seen: set[str] = set()
        self._unsettled: list[str] = []
        self._finish = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._main())

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    async def _main(self) -> None:
        state = "done"
        try:
            self.sink.on_event(Event("ask", text=QUESTION, payload={"id": "q1", "state": "asked"}))
            if self.log is not None:
                for intent in self.log.unsettled():
                    await self.apply(intent)
            await self._finish.wait()
        except asyncio.CancelledError:
            if self.stubborn_s > 0:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(self.stubborn_s)  # a CLI that takes its time to hang up
            state = "died" if self.cancelled == "shutdown" else "stopped"
        await self.sink.ended(RunEnd(state))

    def finish(self) -> None:
        self._finish.set()

    def cancel(self, reason: str) -> bool:
        if self._task is None or self._task.done():
            return False
        self.cancelled = reason
        self._task.cancel()
        return True

    async def apply(self, intent: Intent) -> IntentReply:
        if intent.iid in self._seen:
            return IntentReply()
        self._seen.add(intent.iid)
        self.applied.append(intent)
        if intent.op is Op.STOP:
            self.cancel("stopped")
            return IntentReply(ok=True)
        self._unsettled.append(intent.iid)
        if intent.op is Op.SEND:
            return IntentReply(mail=f"m-{intent.iid[:6]}")
        if intent.op is Op.INTERRUPT:
            return IntentReply(in_flight=True)
        if intent.op is Op.ORACLE:
            return IntentReply(answer=f"about {intent.text}")
        return IntentReply(ok=True)

    def turn_done(self) -> list[str]:
        """What was applied is durable now: settle it (the iids settled)."""
        done, self._unsettled = self._unsettled, []
        for iid in done:
            self.log.settle(iid, Settled.DONE)
        return done

    def emit(self, text: str) -> None:
        self.sink.on_event(Event("text", text=text))


@dataclass
class KitDouble:
    """An EngineKit's shape (RedisWorker replaces adopt/may_park and reads runtime_options)."""

    factory: Any = None
    env: Any = None
    runtime_options: dict[str, Any] = field(default_factory=dict)
    park_after_s: float | None = None
    may_park: Callable[[], bool] | None = None
    oracle: bool = False
    adopt: bool = False
    engines: list[EngineDouble] = field(default_factory=list)
    stubborn_s: float = 0.0

    def build(self, run_id: str, plan: RunPlan, sink: RunSink, *, log: Any = None) -> EngineDouble:
        engine = EngineDouble(run_id, plan, sink, log, stubborn_s=self.stubborn_s)
        self.engines.append(engine)
        return engine

    def of(self, run_id: str) -> list[EngineDouble]:
        return [e for e in self.engines if e.run_id == run_id]
