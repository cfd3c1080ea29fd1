"""One run a worker holds: its fence (gen), its sink onto the events stream, and the engine calls.

`Held` is the worker's record of a run it holds; `HeldSink` is the run's RunSink (everything goes out
on the events stream through the worker's ordered publisher: a `Publisher`, the RedisWorker). The two
places the worker touches the engine are here, together (`build_engine`, `apply_intent`): an engine
built with the run's log (`kit.build(..., log=HeldLog)`) replays the log's unsettled intents itself
and settles each once its effect is durable (adapters/transport/applier.py); the worker hands it
every new intent (`engine.apply(intent) -> IntentReply`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from adapters.transport import wire
from adapters.transport.base import RunEnd
from adapters.transport.engine import EngineKit, RunEngine
from adapters.transport.intents import Intent, IntentReply, Op, Settled
from adapters.transport.plan import RunPlan
from adapters.transport.redis_log import HeldLog, Logged
from flower_core import Event, is_partial
from flower_core.payloads import AskPayload, BudgetPayload, PartialPayload, SystemPayload

log = logging.getLogger(__name__)

# Partial events (words being written) go out at most this often per run, each the words gathered since:
# a fleet of chatty runs does not flood the events stream, and the front shows the same words.
PARTIAL_EVERY_S = 0.25


@dataclass
class Held:
    """One run this worker holds, as holder number `gen`."""

    run_id: str
    gen: int
    entry_id: str
    engine: RunEngine | None = None
    sink: HeldSink | None = None
    log: HeldLog | None = None
    store: Any = None  # the run's fenced session store view (None: the kit has no Redis store)
    parked: bool = False
    seq: int = 0
    cursor: str = "0-0"  # the last entry of the run's intents stream this holder has applied
    spent_usd: float = 0.0  # the run's budget as it last reported it (its base included): a taker-over starts there
    spent_dirty: bool = False  # not yet written to the run's hash
    superseded: bool = False  # another holder took over: nothing more goes out from here
    ended: bool = False  # its end is written (the work entry acked)
    settles: asyncio.Queue[tuple[str, Settled]] = field(default_factory=asyncio.Queue)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)  # its intents reader and settler

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    @property
    def active(self) -> bool:
        return not (self.superseded or self.ended)


class Publisher(Protocol):
    """What a held run's sink uses of its worker (the RedisWorker)."""

    name: str

    def publish(self, held: Held, fields: dict[str, str], *, ending: bool = False) -> None:
        """Queue an entry for the events stream (the worker's ordered publisher)."""
        ...

    def room_changed(self) -> None:
        """A run parked or unparked: the worker's room for more runs changed."""
        ...

    async def ended(self, held: Held, end: RunEnd) -> None: ...


class HeldSink:
    """The RunSink of a held run: everything goes out on the events stream, in order."""

    def __init__(self, worker: Publisher, held: Held) -> None:
        self.worker, self.held = worker, held
        # What a front that starts following the run late needs to show it: see replay().
        self.step: Event | None = None
        self.park: Event | None = None
        self.asks: dict[str, Event] = {}
        self._words: Event | None = None  # partial events gathered, not yet published
        self._timer: asyncio.TimerHandle | None = None

    def on_event(self, ev: Event) -> None:
        if is_partial(ev):
            self._gather(ev)
            return
        self._flush_words()  # the words written before this event go out before it
        h = self.held
        subtype = SystemPayload.of(ev).subtype if ev.kind == "system" else ""
        total = BudgetPayload.of(ev).total if subtype == "budget" else None
        ask = AskPayload.of(ev) if ev.kind == "ask" else None
        if subtype in ("parked", "unparked"):
            h.parked = subtype == "parked"
            self.park = ev
            self.worker.room_changed()
        elif ev.kind == "step":
            self.step = ev
        elif total is not None:
            if total > h.spent_usd:  # kept with the event, so a worker taking the run over counts it
                h.spent_usd, h.spent_dirty = total, True
        elif ask is not None and ask.kind != "mail":
            if ask.state == "asked":
                self.asks[ask.id] = ev
            else:
                self.asks.pop(ask.id, None)
        self.worker.publish(h, wire.event_fields(h.run_id, h.gen, self.worker.name, h.next_seq(), ev))

    def _gather(self, ev: Event) -> None:
        """Join a partial event to the ones waiting when it continues them (same thread and block)."""
        got = self._words
        if got is not None:
            a, b = PartialPayload.of(got), PartialPayload.of(ev)
            if (a.subagent, a.parent_tool_use_id, a.index, a.requesting) == (
                    b.subagent, b.parent_tool_use_id, b.index, b.requesting):
                self._words = Event(got.kind, got.text + ev.text, payload=got.payload)
                return
            self._flush_words()
        self._words = Event(ev.kind, ev.text, payload=dict(ev.payload))
        if self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(PARTIAL_EVERY_S, self._flush_words)
            except RuntimeError:  # no loop: out now
                self._flush_words()

    def _flush_words(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        got, self._words = self._words, None
        if got is not None:
            h = self.held
            self.worker.publish(h, wire.event_fields(h.run_id, h.gen, self.worker.name, h.next_seq(), got))

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
        self._flush_words()
        await self.worker.ended(self.held, end)

    def handed_over(self, holder: str, previous: str) -> None:  # the run side is never handed over
        return None


# ---- the engine calls -------------------------------------------------------------------------------
def build_engine(kit: EngineKit, held: Held, plan: RunPlan) -> RunEngine:
    """The run's engine, given the run's log (fenced by this holder's gen)."""
    assert held.sink is not None
    return kit.build(held.run_id, plan, held.sink, log=held.log)


async def apply_intent(held: Held, logged: Logged) -> IntentReply:
    """Apply one new intent; the engine's reply."""
    assert held.engine is not None
    reply: IntentReply = await held.engine.apply(logged.intent)
    return reply


def is_slow(intent: Intent) -> bool:
    """An oracle question takes its own time: it never holds up the intents after it."""
    return intent.op is Op.ORACLE
