"""RedisWorker: the run side of scale-out — holds runs handed out over Redis, up to its own limit.

- Work: an entry of the work stream (consumer group `workers`) is read only when this worker has
  room (runs with a CLI < max_runs; parked runs do not count) and stays in its pending-entry list
  until the run ends, when it is acked in the same transaction that publishes the end.
- Liveness: a heartbeat key that expires `dead_after_s` after the last beat. Every `heartbeat_s`, a
  worker with room looks at the pending entries idle that long whose holder has no heartbeat, and
  claims them (XCLAIM with the same min-idle time, so two claimers cannot both win). A claimed run
  is woken: finished steps are not redone, the cut-off step resumes its session from the shared
  SessionStore, and a question that was waiting is asked again (ParkPolicy.adopt) so its old card
  still answers it. A worker that stops on SIGTERM hands its runs back at once the same way.
- Messages out (events, step ends, run ends, hellos) go through one ordered queue that waits out a
  Redis restart instead of dropping anything; each carries (gen, seq) for the front to deduplicate.
- Intents come from the run's own stream, read from the last one applied (kept in the run's hash),
  so a new holder starts where the old one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from adapters.chores import Chores
from adapters.transport import wire
from adapters.transport.base import RunEnd
from adapters.transport.engine import EngineKit, RunEngine
from adapters.transport.plan import RunPlan
from adapters.transport.redis_conn import DOWN, connect, ensure_group, persist, reachable
from flower_core import Event

log = logging.getLogger(__name__)

BLOCK_MS = 2000  # blocking reads return this often (well under the client's 5 s socket timeout)
EVENTS_KEPT = 100_000  # the events stream's approximate cap (the front deletes what it has read)
KEEP_ENDED_S = 24 * 3600  # a finished run's hash and intents stay this long, for late readers


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass
class Held:
    """One run this worker holds."""

    run_id: str
    gen: int
    entry_id: str
    engine: RunEngine | None = None
    sink: HeldSink | None = None
    parked: bool = False
    seq: int = 0
    seen: deque[str] = field(default_factory=lambda: deque(maxlen=512))
    reader: asyncio.Task[None] | None = None

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


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
        self.worker.publish(wire.event_fields(h.run_id, h.gen, self.worker.name, h.next_seq(), ev))

    def replay(self) -> None:
        """A front began following this run again (it restarted): say again where the run is — its
        step, whether it is parked, and the questions still open (the same ids, so the same cards)."""
        h = self.held
        for ev in [self.step, self.park if h.parked else None, *self.asks.values()]:
            if ev is not None:
                self.worker.publish(wire.event_fields(h.run_id, h.gen, self.worker.name, h.next_seq(), ev))

    def step_done(self, name: str) -> None:
        h = self.held
        self.worker.publish(wire.note_fields("step", h.run_id, h.gen, self.worker.name, h.next_seq(), name=name))

    async def ended(self, end: RunEnd) -> None:
        await self.worker.ended(self.held, end)

    def handed_over(self, holder: str, previous: str) -> None:  # the run side is never handed over
        return None


class RedisWorker:
    def __init__(self, url: str, kit: EngineKit, *, name: str | None = None, max_runs: int = 3,
                 max_parked: int = 1000, prefix: str = "flower", heartbeat_s: float = 1.0,
                 dead_after_s: float = 5.0) -> None:
        if dead_after_s <= heartbeat_s:
            raise ValueError("dead_after_s must be longer than heartbeat_s")
        self.url, self.keys, self.name = url, wire.Keys(prefix), name or default_name()
        self.max_runs, self.max_parked = max_runs, max_parked
        self.heartbeat_s, self.dead_after_s = heartbeat_s, dead_after_s
        self.kit = replace(kit, adopt=True, may_park=self._may_park)
        self.held: dict[str, Held] = {}
        self.redis: Any = None
        self.taken = 0  # runs taken since start (new and claimed), for logs and benchmarks
        self._out: asyncio.Queue[tuple[dict[str, str], Held | None]] = asyncio.Queue()
        self._room = asyncio.Event()
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._asides = Chores()  # oracle questions: slow, never hold up the next intent

    # ---- capacity -------------------------------------------------------------------------------
    def running(self) -> int:
        return sum(1 for h in self.held.values() if not h.parked)

    def parked(self) -> int:
        return sum(1 for h in self.held.values() if h.parked)

    def has_room(self) -> bool:
        return not self._stopping and self.running() < self.max_runs

    def room_changed(self) -> None:
        (self._room.set if self.has_room() else self._room.clear)()

    def _may_park(self) -> bool:
        return self.parked() < self.max_parked

    # ---- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        self.redis = connect(self.url)
        await reachable(self.redis, self.url)
        await persist("setup", lambda: ensure_group(self.redis, self.keys.work, wire.WORK_GROUP))
        await persist("setup", lambda: ensure_group(self.redis, self.keys.events, wire.FRONT_GROUP))
        await self._beat()
        self.room_changed()
        for name, coro in (("publisher", self._publisher()), ("heartbeat", self._heartbeats()),
                           ("work", self._work()), ("claims", self._claims())):
            self._tasks.append(asyncio.create_task(coro, name=f"worker {self.name} {name}"))
        log.info("worker %s ready: up to %d runs (%d parked)", self.name, self.max_runs, self.max_parked)

    async def stop(self) -> None:
        """Hand the runs back (another worker claims them at once) and leave."""
        self._stopping = True
        self._room.clear()
        for task in self._tasks[2:]:  # stop taking work first; keep publishing and beating meanwhile
            task.cancel()
        engines = [h.engine for h in self.held.values() if h.engine is not None]
        for engine in engines:
            engine.cancel("shutdown")
        for engine in engines:
            if engine.task is not None:
                with contextlib.suppress(BaseException):
                    await engine.task
        await self._out.join()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(*DOWN):
            await self.redis.delete(self.keys.worker(self.name))  # no need to wait for the heartbeat to lapse
        await self.redis.aclose()

    # ---- heartbeat ------------------------------------------------------------------------------
    async def _beat(self) -> None:
        about = {"runs": len(self.held), "running": self.running(), "parked": self.parked(),
                 "max_runs": self.max_runs, "host": socket.gethostname(), "pid": os.getpid()}
        await self.redis.set(self.keys.worker(self.name), json.dumps(about), px=int(self.dead_after_s * 1000))

    async def _heartbeats(self) -> None:
        while True:
            try:
                await self._beat()
            except DOWN as exc:
                log.warning("heartbeat: redis unavailable: %r", exc)
            await asyncio.sleep(self.heartbeat_s)  # a beat is a period, not a wait for something

    # ---- taking runs ----------------------------------------------------------------------------
    async def _work(self) -> None:
        backlog = True  # entries this name was handed before (a restart under the same name)
        while True:
            await self._room.wait()
            try:
                got = await self.redis.xreadgroup(wire.WORK_GROUP, self.name,
                                                  {self.keys.work: "0" if backlog else ">"}, count=1, block=BLOCK_MS)
            except DOWN as exc:
                log.warning("work: redis unavailable: %r", exc)
                await asyncio.sleep(0.2)
                continue
            entries = [e for _s, items in (got or []) for e in items]
            if backlog and not entries:
                backlog = False
            for entry_id, fields in entries:
                await self._take(entry_id, fields, previous="" if not backlog else self.name)

    async def _claims(self) -> None:
        idle_ms = int(self.dead_after_s * 1000)
        while True:
            await asyncio.sleep(self.heartbeat_s)  # the pending list is polled: Redis has no event for it
            if not self.has_room():
                continue
            try:
                pending = await self.redis.xpending_range(self.keys.work, wire.WORK_GROUP, min="-", max="+",
                                                          count=100, idle=idle_ms)
                for item in pending:
                    holder = str(item["consumer"])
                    if holder == self.name or await self.redis.exists(self.keys.worker(holder)):
                        continue
                    claimed = await self.redis.xclaim(self.keys.work, wire.WORK_GROUP, self.name, idle_ms,
                                                      [item["message_id"]])
                    for entry_id, fields in claimed:
                        if fields:
                            await self._take(entry_id, fields, previous=holder)
                    if not self.has_room():
                        break
            except DOWN as exc:
                log.warning("claims: redis unavailable: %r", exc)

    async def _take(self, entry_id: str, fields: dict[str, str], *, previous: str) -> None:
        """Hold one run: a new start, or (previous set) one claimed from a worker that went silent."""
        run_id = wire.text(fields, "run")
        try:
            plan = RunPlan.from_json(wire.text(fields, "plan"))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("work entry %s unreadable, dropped: %r", entry_id, exc)
            await self.redis.xack(self.keys.work, wire.WORK_GROUP, entry_id)
            return
        if previous:
            plan = replace(plan, waking=True, remark="")
        key = self.keys.run(run_id)
        gen = int(await persist("take", lambda: self.redis.hincrby(key, "gen", 1)))
        await persist("take", lambda: self.redis.hset(key, mapping={"holder": self.name, "entry": entry_id}))
        cursor = await persist("take", lambda: self.redis.hget(key, "applied")) or "0"
        held = Held(run_id, gen, entry_id)
        self.held[run_id] = held
        self.taken += 1
        self.room_changed()
        self.publish(wire.note_fields("hello", run_id, gen, self.name, held.next_seq(), previous=previous))
        sink = held.sink = HeldSink(self, held)
        try:
            held.engine = self.kit.build(run_id, plan, sink)
        except Exception as exc:  # the factory refused the run (a budget of 0, an unreadable workspace)
            log.warning("run %s could not start: %r", run_id, exc)
            await self.ended(held, RunEnd("failed", error=f"Could not start the run: {exc}"))
            return
        held.engine.start()
        held.reader = asyncio.create_task(self._intents(held, str(cursor)), name=f"intents {run_id}")
        log.info("worker %s holds run %s (holder #%d%s)", self.name, run_id, gen,
                 f", taken over from {previous}" if previous and previous != self.name else "")

    async def ended(self, held: Held, end: RunEnd) -> None:
        if held.reader is not None and held.reader is not asyncio.current_task():
            held.reader.cancel()
        if end.state != "died":  # "died": this worker is stopping; the entry stays pending for another
            self.publish(wire.end_fields(held.run_id, held.gen, self.name, held.next_seq(), end), ending=held)
        await self._out.join()
        if self.held.get(held.run_id) is held:
            del self.held[held.run_id]
        self.room_changed()

    # ---- messages out ---------------------------------------------------------------------------
    def publish(self, fields: dict[str, str], *, ending: Held | None = None) -> None:
        self._out.put_nowait((fields, ending))

    async def _publisher(self) -> None:
        while True:
            batch = [await self._out.get()]
            while not self._out.empty() and len(batch) < 200:
                batch.append(self._out.get_nowait())
            await persist("publish", lambda b=batch: self._send(b))  # type: ignore[misc]
            for _ in batch:
                self._out.task_done()

    async def _send(self, batch: list[tuple[dict[str, str], Held | None]]) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            for fields, ending in batch:
                pipe.xadd(self.keys.events, fields, maxlen=EVENTS_KEPT, approximate=True)
                if ending is not None:  # the end and the ack go together: a run is never done twice
                    pipe.xack(self.keys.work, wire.WORK_GROUP, ending.entry_id)
                    pipe.xdel(self.keys.work, ending.entry_id)
                    pipe.hset(self.keys.run(ending.run_id), "holder", "")
                    pipe.expire(self.keys.run(ending.run_id), KEEP_ENDED_S)
                    pipe.expire(self.keys.intents(ending.run_id), KEEP_ENDED_S)
            await pipe.execute()

    # ---- intents in -----------------------------------------------------------------------------
    async def _intents(self, held: Held, cursor: str) -> None:
        stream = self.keys.intents(held.run_id)
        while True:
            try:
                got = await self.redis.xread({stream: cursor}, count=50, block=BLOCK_MS)
            except DOWN as exc:
                log.warning("intents %s: redis unavailable: %r", held.run_id, exc)
                await asyncio.sleep(0.2)
                continue
            for entry_id, fields in [e for _s, items in (got or []) for e in items]:
                cursor = entry_id
                try:
                    await self._apply(held, fields)
                except Exception as exc:  # a bad intent must never hurt the run
                    log.warning("run %s: intent not applied: %r", held.run_id, exc)
                await persist("applied", lambda c=cursor: self.redis.hset(  # type: ignore[misc]
                    self.keys.run(held.run_id), "applied", c))

    async def _apply(self, held: Held, f: dict[str, str]) -> None:
        op, iid, engine = wire.text(f, "op"), wire.text(f, "iid"), held.engine
        if iid in held.seen or engine is None:
            return
        held.seen.append(iid)
        gen, words = wire.text(f, "gen"), wire.text(f, "text")
        out: dict[str, Any]
        if op in ("answer", "decline"):
            if gen and gen != str(held.gen):
                out = {"ok": False, "stale": True}  # meant for the holder before: the front keeps it on the card
            elif op == "answer":
                out = {"ok": await engine.answer(wire.text(f, "ask"), words)}
            else:
                out = {"ok": await engine.decline(wire.text(f, "ask"), words)}
        elif op == "send":
            out = {"mail": await engine.send(words)}
        elif op == "interrupt":
            out = {"in_flight": await engine.interrupt(words)}
        elif op == "cancel":
            out = {"ok": engine.cancel("stopped")}
        elif op == "sync":
            if held.sink is not None:
                held.sink.replay()
            out = {"ok": True}
        elif op == "oracle":
            self._asides.spawn(self._oracle(engine, iid, words))
            return
        else:
            out = {"error": f"unknown intent {op!r}"}
        if wire.text(f, "reply"):
            await self._reply(iid, out)

    async def _oracle(self, engine: RunEngine, iid: str, question: str) -> None:
        try:
            out: dict[str, Any] = {"answer": await engine.ask_oracle(question)}
        except Exception as exc:
            out = {"error": f"{type(exc).__name__}: {exc}"}
        await self._reply(iid, out)

    async def _reply(self, iid: str, out: dict[str, Any]) -> None:
        key = self.keys.reply(iid)

        async def push() -> None:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.lpush(key, json.dumps(out, ensure_ascii=False))
                pipe.expire(key, 60)
                await pipe.execute()
        await persist("reply", push)
