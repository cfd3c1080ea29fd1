"""Metrics: what one process is doing, in Prometheus's text format (prometheus-client).

Two kinds of numbers, in one registry of the process's own (never the library's global one, so a
test can build several):

- counters bumped on the hot paths through one-line hooks that never block and never raise:
  events seen (`tap` / `count_event`), platform calls and 429s (`CountingSurface` wraps the surfaces
  handed to the hub), cost spent (the main thread's `result` events, as the status card adds them);
- gauges read when Prometheus scrapes, from what the hub or worker already holds: runs by state,
  open questions and the oldest one's age, parked runs, outbox depth per platform, intents pending
  (a callable the process hands in), live CLI processes.

    metrics = Metrics(intents_pending=lambda: 0)
    hub = Hub(metrics.count_surfaces(surfaces), store, ...)
    metrics.watch_hub(hub)                          # or metrics.watch_worker(worker)
    body = metrics.render()                         # what GET /metrics answers
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from adapters.ops.procs import cli_children
from adapters.platform import LiveText, OutMessage, Surface, ThreadRef, TransientSurfaceError, provides
from adapters.transport.engine import EngineKit, RunEngine
from adapters.transport.intents import RunLog
from flower_core import Event
from flower_core.payloads import AskPayload, ResultPayload, ThreadPayload

if TYPE_CHECKING:
    from adapters.hub import Hub
    from adapters.transport.base import RunEnd, RunSink
    from adapters.transport.plan import RunPlan
    from adapters.transport.redis_worker import RedisWorker

__all__ = ["CONTENT_TYPE", "CountedKit", "CountingSurface", "Metrics", "Snapshot", "is_rate_limit"]

log = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_LATEST


@dataclass
class Snapshot:
    """What a hub or a worker holds right now, for the scrape-time gauges."""

    runs: dict[str, int] = field(default_factory=dict)  # state -> runs
    open_asks: int = 0
    oldest_ask_s: float = 0.0
    parked: int = 0
    outbox_depth: dict[str, int] = field(default_factory=dict)  # platform -> messages waiting
    routine_firings: dict[str, int] = field(default_factory=dict)  # outcome -> occurrences settled
    routine_next: dict[tuple[str, str], float] = field(default_factory=dict)  # (id, name) -> next firing (epoch)


class Metrics:
    def __init__(self, *, intents_pending: Callable[[], int] | None = None,
                 cli_processes: Callable[[], int] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.registry = CollectorRegistry()
        self.events = Counter("flower_events", "Events of runs seen by this process", registry=self.registry)
        self.platform_calls = Counter("flower_platform_calls", "Calls to a chat platform (post, update, notify)",
                                      ["platform", "call"], registry=self.registry)
        self.rate_limited = Counter("flower_platform_rate_limited", "Calls a platform refused with a rate limit "
                                    "(HTTP 429)", ["platform"], registry=self.registry)
        self.cost = Counter("flower_cost_usd", "Dollars spent by the runs this process saw", registry=self.registry)
        self.intents_pending = intents_pending or (lambda: 0)
        self._cli_processes = cli_processes or (lambda: len(cli_children()))
        self._clock = clock
        self._sources: list[Callable[[], Snapshot]] = []
        self.registry.register(_Gauges(self))

    # ---- hot-path hooks (never block, never raise) -------------------------------------------------
    def count_event(self, ev: Event) -> None:
        try:
            self.events.inc()
            if ev.kind == "result":
                cost = ResultPayload.of(ev).cost_usd
                if not ThreadPayload.of(ev).subagent and cost is not None and cost > 0:
                    self.cost.inc(cost)
        except Exception as exc:
            log.debug("metrics: event not counted: %r", exc)

    def tap(self, run_id: str, ev: Event) -> None:
        """A hub tap (see Hub.taps)."""
        self.count_event(ev)

    def count_call(self, platform: str, call: str, error: BaseException | None = None) -> None:
        try:
            self.platform_calls.labels(platform, call).inc()
            if error is not None and is_rate_limit(error):
                self.rate_limited.labels(platform).inc()
        except Exception as exc:
            log.debug("metrics: call not counted: %r", exc)

    def count_surfaces(self, surfaces: Mapping[str, Surface]) -> dict[str, Surface]:
        """The same surfaces, each wrapped so that its calls are counted."""
        for name in surfaces:
            self.rate_limited.labels(name)  # shown as 0 before the first one
        return {name: CountingSurface(s, self) for name, s in surfaces.items()}

    # ---- scrape-time sources ----------------------------------------------------------------------
    def watch(self, source: Callable[[], Snapshot]) -> None:
        self._sources.append(source)

    def watch_hub(self, hub: Hub) -> None:
        hub.taps.append(self.tap)
        self.watch(lambda: hub_snapshot(hub, self._clock()))

    def watch_worker(self, worker: RedisWorker) -> None:
        self.watch(lambda: worker_snapshot(worker, self._clock()))

    def count_kit(self, kit: EngineKit) -> CountedKit:
        """The same engine kit, whose runs' events are counted (a worker has no hub to tap)."""
        fields = {f: getattr(kit, f) for f in kit.__dataclass_fields__}
        return CountedKit(**fields, count=self.count_event)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def gauges(self) -> Iterable[Metric]:
        total = Snapshot()
        for source in self._sources:
            try:
                snap = source()
            except Exception as exc:  # a scrape shows what it can
                log.warning("metrics: a source failed: %r", exc)
                continue
            for state, n in snap.runs.items():
                total.runs[state] = total.runs.get(state, 0) + n
            for platform, n in snap.outbox_depth.items():
                total.outbox_depth[platform] = total.outbox_depth.get(platform, 0) + n
            total.open_asks += snap.open_asks
            total.oldest_ask_s = max(total.oldest_ask_s, snap.oldest_ask_s)
            total.parked += snap.parked
            for outcome, n in snap.routine_firings.items():
                total.routine_firings[outcome] = total.routine_firings.get(outcome, 0) + n
            total.routine_next.update(snap.routine_next)
        runs = GaugeMetricFamily("flower_runs", "Runs by state", labels=["state"])
        for state, n in sorted(total.runs.items()):
            runs.add_metric([state], n)
        yield runs
        yield GaugeMetricFamily("flower_open_asks", "Questions waiting for a person", value=total.open_asks)
        yield GaugeMetricFamily("flower_oldest_ask_age_seconds", "How long the oldest open question has waited",
                                value=total.oldest_ask_s)
        yield GaugeMetricFamily("flower_parked_runs", "Runs parked on a question (no CLI process)",
                                value=total.parked)
        depth = GaugeMetricFamily("flower_outbox_depth", "Messages waiting to be sent, per platform",
                                  labels=["platform"])
        for platform, n in sorted(total.outbox_depth.items()):
            depth.add_metric([platform], n)
        yield depth
        firings = CounterMetricFamily("flower_routine_firings", "Routine occurrences settled by this process, by "
                                      "outcome (started, skipped, caught_up, failed)", labels=["outcome"])
        for outcome, n in sorted(total.routine_firings.items()):
            firings.add_metric([outcome], n)
        yield firings
        following = GaugeMetricFamily("flower_routine_next_firing_timestamp_seconds", "When each routine fires next "
                                      "(Unix time; a paused one or one with none left is absent)",
                                      labels=["routine", "name"])
        for (routine_id, name), t in sorted(total.routine_next.items()):
            following.add_metric([routine_id, name], t)
        yield following
        yield GaugeMetricFamily("flower_intents_pending", "Accepted inputs not yet applied to their run",
                                value=_safe(self.intents_pending))
        yield GaugeMetricFamily("flower_cli_processes", "Live CLI processes started by this process",
                                value=_safe(self._cli_processes))


class _Gauges:
    """The registry's view of the scrape-time gauges."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return list(self.metrics.gauges())


def _safe(read: Callable[[], int]) -> float:
    try:
        return float(read())
    except Exception as exc:
        log.debug("metrics: a gauge failed: %r", exc)
        return float("nan")


def is_rate_limit(exc: BaseException) -> bool:
    """A platform's 429, as the surfaces translate it (TransientSurfaceError, with the wait when known)."""
    if not isinstance(exc, TransientSurfaceError):
        return False
    text = str(exc)
    return exc.retry_after is not None or "rate limited" in text or "HTTP 429" in text


# ---- sources -------------------------------------------------------------------------------------------
def hub_snapshot(hub: Hub, now: float) -> Snapshot:
    snap = Snapshot(outbox_depth={name: 0 for name in hub.surfaces})
    for record in hub.store.list_runs():
        snap.runs[record.status] = snap.runs.get(record.status, 0) + 1
    asked: list[float] = []
    for live in list(hub.live.values()):
        cards = live.view.open_cards()
        snap.open_asks += len(cards)
        asked += [c.asked_at for c in cards if c.asked_at is not None]
        for target in live.pipe.fanout.targets:  # one outbox per thread
            platform = target.thread.platform
            snap.outbox_depth[platform] = snap.outbox_depth.get(platform, 0) + target.outbox.depth
    snap.parked = len(hub.parked())
    snap.oldest_ask_s = max(0.0, now - min(asked)) if asked else 0.0
    snap.routine_firings = hub.query.routine_firings()
    snap.routine_next = {(r.routine_id, r.name): r.next_at for r in hub.store.list_routines()
                         if not r.paused and r.next_at is not None}
    return snap


def worker_snapshot(worker: RedisWorker, now: float) -> Snapshot:
    snap = Snapshot(runs={"running": worker.running(), "parked": worker.parked()}, parked=worker.parked())
    asked: list[float] = []
    for held in list(worker.held.values()):
        open_asks = held.sink.asks.values() if held.sink is not None else ()
        for ev in open_asks:
            snap.open_asks += 1
            at = AskPayload.of(ev).asked_at
            if at is not None:
                asked.append(at)
    snap.oldest_ask_s = max(0.0, now - min(asked)) if asked else 0.0
    return snap


class CountingSurface:
    """A surface as the hub sees it, with each call counted (and its 429s); anything else the surface
    offers is passed through untouched."""

    def __init__(self, inner: Surface, metrics: Metrics) -> None:
        self.inner, self.metrics = inner, metrics
        self.name, self.limits = inner.name, inner.limits

    def __getattr__(self, item: str) -> Any:
        got = getattr(self.inner, item)
        if item == "stream" and provides(self.inner, "stream"):  # counted too, and still its own (provides)
            async def stream(thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
                try:
                    streamed: str = await got(thread, message_id, live)
                except Exception as exc:
                    self.metrics.count_call(self.name, "stream", exc)
                    raise
                self.metrics.count_call(self.name, "stream")
                return streamed
            return stream
        return got

    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        try:
            message_id = await self.inner.post(thread, msg)
        except Exception as exc:
            self.metrics.count_call(self.name, "post", exc)
            raise
        self.metrics.count_call(self.name, "post")
        return message_id

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        try:
            await self.inner.update(thread, message_id, msg)
        except Exception as exc:
            self.metrics.count_call(self.name, "update", exc)
            raise
        self.metrics.count_call(self.name, "update")

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        try:
            await self.inner.notify(thread, user, text)
        except Exception as exc:
            self.metrics.count_call(self.name, "notify", exc)
            raise
        self.metrics.count_call(self.name, "notify")


@dataclass
class CountedKit(EngineKit):
    """An EngineKit whose engines pass every event through `count` on the way to their sink."""

    count: Callable[[Event], None] | None = None

    def build(self, run_id: str, plan: RunPlan, sink: RunSink, *, log: RunLog | None = None) -> RunEngine:
        return super().build(run_id, plan, sink if self.count is None else _CountingSink(sink, self.count), log=log)


class _CountingSink:
    def __init__(self, inner: RunSink, count: Callable[[Event], None]) -> None:
        self.inner, self.count = inner, count

    def on_event(self, ev: Event) -> None:
        self.count(ev)
        self.inner.on_event(ev)

    def step_done(self, name: str) -> None:
        self.inner.step_done(name)

    def ended(self, end: RunEnd) -> Awaitable[None]:
        return self.inner.ended(end)

    def handed_over(self, holder: str, previous: str) -> None:
        self.inner.handed_over(holder, previous)
