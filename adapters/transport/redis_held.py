"""One run a worker holds: its fence (gen), its sink onto the events stream, and the engine calls.

`Held` is the worker's record of a run it holds; `HeldSink` is the run's RunSink (everything goes out
on the events stream through the worker's ordered publisher). The three places the worker touches
the engine are here, together (`build_engine`, `apply_intent`, `replay_legacy`):

- an engine built with a log (`kit.build(..., log=HeldLog)`) replays the log's unsettled intents
  itself and settles each once its effect is durable; the worker hands it every new intent
  (`engine.apply(intent) -> Reply`);
- an engine without one (the one-process RunEngine of today) is driven through its RunSide methods,
  and the worker settles for it: at once after applying (a stop: when the run ends), which is only
  as durable as applying in memory. An answer meant for an earlier holder is refused ("stale"): the
  front kept it on its card.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adapters.transport import wire
from adapters.transport.base import RunEnd
from adapters.transport.engine import EngineKit
from adapters.transport.intents import ANSWERED_OPS, Intent, Op, Reply, Settled
from adapters.transport.plan import RunPlan
from adapters.transport.redis_log import HeldLog, Logged
from flower_core import Event

if TYPE_CHECKING:
    from adapters.transport.redis_worker import RedisWorker

log = logging.getLogger(__name__)


@dataclass
class Held:
    """One run this worker holds, as holder number `gen`."""

    run_id: str
    gen: int
    entry_id: str
    engine: Any = None
    sink: HeldSink | None = None
    log: HeldLog | None = None
    store: Any = None  # the run's fenced session store view (None: the kit has no Redis store)
    parked: bool = False
    seq: int = 0
    superseded: bool = False  # another holder took over: nothing more goes out from here
    ended: bool = False  # its end is written (the work entry acked)
    settles: asyncio.Queue[tuple[str, Settled]] = field(default_factory=asyncio.Queue)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)  # its intents reader and settler
    stops: deque[str] = field(default_factory=deque)  # legacy: stop intents, settled when the run ends

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    @property
    def active(self) -> bool:
        return not (self.superseded or self.ended)


class HeldSink:
    """The RunSink of a held run: everything goes out on the events stream, in order."""

    def __init__(self, worker: RedisWorker, held: Held) -> None:
        self.worker, self.held = worker, held
        # What a front that starts following the run late needs to show it: see replay().
        self.step: Event | None = None
        self.park: Event | None = None
        self.asks: dict[str, Event] = {}

    def on_event(self, ev: Event) -> None:
        h = self.held
        p = ev.payload if isinstance(ev.payload, dict) else {}
        if ev.kind == "system" and p.get("subtype") in ("parked", "unparked"):
            h.parked = p.get("subtype") == "parked"
            self.park = ev
            self.worker.room_changed()
        elif ev.kind == "step":
            self.step = ev
        elif ev.kind == "ask" and p.get("kind") != "mail":
            if p.get("state") == "asked":
                self.asks[str(p.get("id", ""))] = ev
            else:
                self.asks.pop(str(p.get("id", "")), None)
        self.worker.publish(h, wire.event_fields(h.run_id, h.gen, self.worker.name, h.next_seq(), ev))

    def replay(self) -> None:
        """A front began following this run again (it restarted): say again where the run is — its
        step, whether it is parked, and the questions still open (the same ids, so the same cards)."""
        h = self.held
        for ev in [self.step, self.park if h.parked else None, *self.asks.values()]:
            if ev is not None:
                self.worker.publish(h, wire.event_fields(h.run_id, h.gen, self.worker.name, h.next_seq(), ev))

    def step_done(self, name: str) -> None:
        h = self.held
        self.worker.publish(h, wire.note_fields("step", h.run_id, h.gen, self.worker.name, h.next_seq(), name=name))

    async def ended(self, end: RunEnd) -> None:
        await self.worker.ended(self.held, end)

    def handed_over(self, holder: str, previous: str) -> None:  # the run side is never handed over
        return None


# ---- the engine calls -------------------------------------------------------------------------------
def build_engine(kit: EngineKit, held: Held, plan: RunPlan) -> Any:
    """The run's engine, given the run's log when the kit's engines take one."""
    assert held.sink is not None
    if "log" in inspect.signature(kit.build).parameters:
        return kit.build(held.run_id, plan, held.sink, log=held.log)  # type: ignore[call-arg]
    return kit.build(held.run_id, plan, held.sink)


def replays_itself(engine: Any) -> bool:
    return callable(getattr(engine, "apply", None))


async def apply_intent(held: Held, logged: Logged) -> tuple[Reply, bool]:
    """Apply one new intent; (the reply, True when it was meant for an earlier holder)."""
    engine = held.engine
    if replays_itself(engine):
        return await engine.apply(logged.intent), False
    reply, stale = await _legacy(held, logged)
    if held.log is not None and logged.intent.op is not Op.STOP:
        held.log.settle(logged.intent.iid,
                        Settled.REFUSED if stale or (logged.intent.op in ANSWERED_OPS and not reply.ok)
                        else Settled.DONE)
    return reply, stale


async def replay_legacy(held: Held) -> None:
    """For an engine that does not replay its log: apply what the previous holder left unsettled."""
    if held.log is None or replays_itself(held.engine):
        return
    for logged in held.log.backlog():
        try:
            await apply_intent(held, logged)
        except Exception as exc:  # a bad intent must never hurt the run
            log.warning("run %s: intent %s not replayed: %r", held.run_id, logged.intent.iid, exc)


def settle_stops(held: Held, how: Settled) -> None:
    """Legacy: the run ended, so the stops it was given are consumed."""
    while held.stops and held.log is not None:
        held.log.settle(held.stops.popleft(), how)


async def _legacy(held: Held, logged: Logged) -> tuple[Reply, bool]:
    engine, i = held.engine, logged.intent
    if i.op in ANSWERED_OPS:
        if logged.for_gen and logged.for_gen != str(held.gen):
            return Reply(ok=False), True
        ok = await (engine.answer(i.ask, i.text) if i.op is Op.ANSWER else engine.decline(i.ask, i.text))
        return Reply(ok=bool(ok)), False
    if i.op is Op.SEND:
        mail = await engine.send(i.text)
        return Reply(ok=mail is not None, mail="" if mail is None else str(mail)), False
    if i.op is Op.INTERRUPT:
        return Reply(in_flight=bool(await engine.interrupt(i.text))), False
    if i.op is Op.STOP:
        held.stops.append(i.iid)
        return Reply(ok=bool(engine.cancel("stopped"))), False
    try:
        return Reply(answer=str(await engine.ask_oracle(i.text))), False
    except Exception as exc:
        return Reply(ok=False, error=f"{type(exc).__name__}: {exc}"), False


def is_slow(intent: Intent) -> bool:
    """An oracle question takes its own time: it never holds up the intents after it."""
    return intent.op is Op.ORACLE
