"""RedisWorker: the run side of scale-out — holds runs handed out over Redis, up to its own limit.

- Work: an entry of the work stream (consumer group `workers`) is read only when this worker has
  room (runs with a CLI < max_runs; parked runs do not count) and stays in its pending-entry list
  until the run ends, when the script that publishes the end acks it. Taking an entry — new, claimed
  or resumed — bumps the run's `gen` in the same script (redis_fence.py): that number fences every
  write of this holder; the first refused write, or a beat that sees another gen, stops the run
  here at once and quietly (no end, no ack: it is the new holder's now).
- A worker that starts under a name that still holds entries (a restart under the same name)
  resumes those runs once, as many as it has room for, and releases the others to whoever has room;
  after that it only reads new entries.
- Liveness: every `heartbeat_s` a beat stamped with Redis's clock; a worker is dead once it has been
  silent for `dead_after_s` of Redis uptime (redis_fence.py). Every `heartbeat_s`, a worker with
  room claims the entries of dead workers — not while its own link to Redis is shaky (a beat failed
  or was slow within the last `dead_after_s`), when everyone else's beats may be late too.
- Messages out (events, step ends, run ends, hellos) go through one ordered queue that waits out a
  Redis restart instead of dropping anything; each carries (gen, seq) for the front to deduplicate.
- Intents: the run's log (redis_log.py) is read when it is taken; new entries are read after that
  with an in-memory cursor and handed to the engine (redis_held.py). What counts as consumed is
  what the engine settles, never how far this worker read.
- `stop()` finishes within `stop_timeout_s`: runs are cancelled, what they said is flushed, their
  entries are released so another worker takes them at once, and the beat is withdrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from dataclasses import replace
from typing import Any

from adapters.transport import wire
from adapters.transport.base import RunEnd
from adapters.transport.engine import EngineKit
from adapters.transport.intents import IntentReply, Settled
from adapters.transport.plan import RunPlan
from adapters.transport.redis_conn import DOWN, cancel_all, connect, ensure_group, persist, reachable
from adapters.transport.redis_fence import Fence, Taken
from adapters.transport.redis_held import (
    Held,
    HeldSink,
    apply_intent,
    build_engine,
    is_slow,
)
from adapters.transport.redis_log import HeldLog, Logged

log = logging.getLogger(__name__)

BLOCK_MS = 2000  # blocking reads return this often (well under the client's 5 s socket timeout)
EVENTS_KEPT = 100_000  # the events stream's approximate cap (the front deletes what it has read)
KEEP_ENDED_S = 24 * 3600  # a finished run's hash and intents stay this long, for late readers
STOP_TIMEOUT_S = 20.0
_TOO_LATE = wire.reply_json(IntentReply.too_late())


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class RedisWorker:
    def __init__(self, url: str, kit: EngineKit, *, name: str | None = None, max_runs: int = 3,
                 max_parked: int = 1000, prefix: str = "flower", heartbeat_s: float = 1.0,
                 dead_after_s: float = 5.0, stop_timeout_s: float = STOP_TIMEOUT_S) -> None:
        if dead_after_s <= heartbeat_s:
            raise ValueError("dead_after_s must be longer than heartbeat_s")
        self.url, self.keys, self.name = url, wire.Keys(prefix), name or default_name()
        self.max_runs, self.max_parked = max_runs, max_parked
        self.heartbeat_s, self.dead_after_s, self.stop_timeout_s = heartbeat_s, dead_after_s, stop_timeout_s
        self.kit = replace(kit, adopt=True, may_park=self._may_park)
        self.held: dict[str, Held] = {}
        self.redis: Any = None
        self.fence: Fence | None = None
        self.taken = 0  # runs taken since start (new, claimed and resumed), for logs and benchmarks
        self.superseded = 0  # runs stopped here because another holder took them over
        self._out: asyncio.Queue[tuple[dict[str, str], Held, bool]] = asyncio.Queue()
        self._room = asyncio.Event()
        self._stopping = False  # no more work taken
        self._closed = False  # every loop ends (none relies on cancel alone: see cancel_all)
        self._shaky_until = 0.0  # monotonic time before which this worker claims nothing
        self._tasks: list[asyncio.Task[None]] = []
        self._asides: set[asyncio.Task[None]] = set()  # oracle questions: slow, never hold up the next intent

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

    @property
    def _f(self) -> Fence:
        assert self.fence is not None, "start() first"
        return self.fence

    # ---- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        self.redis = connect(self.url)
        await reachable(self.redis, self.url)
        self.fence = Fence(self.redis, self.keys)
        await persist("setup", lambda: ensure_group(self.redis, self.keys.work, wire.WORK_GROUP))
        await persist("setup", lambda: ensure_group(self.redis, self.keys.events, wire.FRONT_GROUP))
        await persist("heartbeat", self._beat)
        for name, coro in (("publisher", self._publisher()), ("heartbeat", self._heartbeats())):
            self._tasks.append(asyncio.create_task(coro, name=f"worker {self.name} {name}"))
        await self._own_backlog()  # runs it resumes publish (and may end) at once: the publisher is up
        self.room_changed()
        for name, coro in (("work", self._work()), ("claims", self._claims())):
            self._tasks.append(asyncio.create_task(coro, name=f"worker {self.name} {name}"))
        log.info("worker %s ready: up to %d runs (%d parked)", self.name, self.max_runs, self.max_parked)

    async def stop(self) -> None:
        """Cancel the runs, flush what they said, hand their entries over and leave: within stop_timeout_s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.stop_timeout_s

        def left(share: float = 1.0) -> float:
            return max(0.05, (deadline - loop.time()) * share)
        self._stopping = True
        self._room.clear()
        await cancel_all(self._tasks[2:], left(0.1))  # stop taking work first; keep publishing and beating
        leaving = list(self.held.values())
        for h in leaving:
            if h.engine is not None:
                h.engine.cancel("shutdown")
        runs = [t for h in leaving if h.engine is not None and (t := h.engine.task) is not None]
        if runs:
            _done, late = await asyncio.wait(runs, timeout=left(0.5))
            if late:
                log.warning("worker %s: %d run(s) did not stop within the stop deadline; handed over anyway",
                            self.name, len(late))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._out.join(), left(0.5))
        for h in leaving:
            if h.active:
                with contextlib.suppress(*DOWN, TimeoutError):
                    await asyncio.wait_for(self._f.release(h.run_id, h.entry_id, self.name), left(0.5))
            h.superseded = True  # whatever is still winding down here says nothing more
            for task in h.tasks:
                task.cancel()
        with contextlib.suppress(*DOWN, TimeoutError):
            await asyncio.wait_for(self._withdraw(), left())
        self._closed = True
        if await cancel_all([*self._tasks, *(t for h in leaving for t in h.tasks), *self._asides], left()):
            log.warning("worker %s: some of its tasks did not end within the stop deadline", self.name)
        await self.redis.aclose()

    async def _withdraw(self) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.beats, self.name)
            pipe.hdel(self.keys.about, self.name)
            await pipe.execute()

    # ---- heartbeat ------------------------------------------------------------------------------
    async def _beat(self) -> None:
        about = {"runs": len(self.held), "running": self.running(), "parked": self.parked(),
                 "max_runs": self.max_runs, "host": socket.gethostname(), "pid": os.getpid()}
        held = [h for h in self.held.values() if h.active]
        moved = await self._f.beat(self.name, self.dead_after_s, json.dumps(about), [(h.run_id, h.gen) for h in held])
        for i in moved:
            self._superseded(held[i], "a newer holder's gen is on the run")

    async def _heartbeats(self) -> None:
        while not self._closed:
            began = time.monotonic()
            try:
                await self._beat()
                if time.monotonic() - began > self.dead_after_s / 2:
                    self._shaky_until = time.monotonic() + self.dead_after_s
            except DOWN as exc:
                self._shaky_until = time.monotonic() + self.dead_after_s
                log.warning("heartbeat: redis unavailable: %r", exc)
            await asyncio.sleep(self.heartbeat_s)  # a beat is a period, not a wait for something

    # ---- taking runs ----------------------------------------------------------------------------
    async def _own_backlog(self) -> None:
        """Entries still pending under this name (a restart under it): resumed once, up to max_runs;
        the rest released to the other workers."""
        mine: list[tuple[str, dict[str, str]]] = []
        after = "0"
        while True:
            got = await persist("backlog", lambda a=after: self.redis.xreadgroup(  # type: ignore[misc]
                wire.WORK_GROUP, self.name, {self.keys.work: a}, count=100))
            entries = [e for _s, items in (got or []) for e in items]
            if not entries:
                break
            mine.extend((str(i), f) for i, f in entries)
            after = str(entries[-1][0])
        for entry_id, fields in mine:
            if not fields:  # deleted from the stream (its run ended) but never acked
                await persist("backlog", lambda e=entry_id: self.redis.xack(  # type: ignore[misc]
                    self.keys.work, wire.WORK_GROUP, e))
            elif self.running() < self.max_runs:
                await self._take(entry_id, fields, mode="resume")
            else:
                await persist("release", lambda e=entry_id, f=fields: self._f.release(  # type: ignore[misc]
                    wire.text(f, "run"), e, self.name))
                log.info("worker %s released run %s (no room to resume it)", self.name, wire.text(fields, "run"))

    async def _work(self) -> None:
        while not self._stopping:
            await self._room.wait()
            try:
                got = await self.redis.xreadgroup(wire.WORK_GROUP, self.name, {self.keys.work: ">"}, count=1,
                                                  block=BLOCK_MS)
            except DOWN as exc:
                log.warning("work: redis unavailable: %r", exc)
                await asyncio.sleep(0.2)
                continue
            for entry_id, fields in [e for _s, items in (got or []) for e in items]:
                await self._take(str(entry_id), fields, mode="new")

    async def _claims(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.heartbeat_s)  # the pending list is polled: Redis has no event for it
            if not self.has_room() or time.monotonic() < self._shaky_until:
                continue
            try:
                summary = await self.redis.xpending(self.keys.work, wire.WORK_GROUP)
                owners = [str(c["name"]) for c in summary.get("consumers") or [] if str(c["name"]) != self.name]
                live = await self._f.alive(self.dead_after_s) if owners else {}
                for owner in (o for o in owners if o not in live):
                    for item in await self.redis.xpending_range(self.keys.work, wire.WORK_GROUP, "-", "+", 100,
                                                                consumername=owner):
                        if not self.has_room():
                            break
                        entry_id = str(item["message_id"])
                        found = await self.redis.xrange(self.keys.work, entry_id, entry_id)
                        await self._take(entry_id, found[0][1] if found else {}, mode="claim", owner=owner)
            except DOWN as exc:
                log.warning("claims: redis unavailable: %r", exc)

    async def _take(self, entry_id: str, fields: dict[str, str], *, mode: str, owner: str = "") -> None:
        """Hold one run: "new", "claim" (from `owner`, who went silent) or "resume" (mine before a restart)."""
        run_id = wire.text(fields, "run")
        try:
            plan = RunPlan.from_json(wire.text(fields, "plan"))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("work entry %s unreadable, dropped: %r", entry_id, exc)
            with contextlib.suppress(*DOWN):
                await self.redis.xack(self.keys.work, wire.WORK_GROUP, entry_id)
            return
        got = await persist("take", lambda: self._f.take(run_id, entry_id, self.name, mode=mode, owner=owner,
                                                          dead_after_s=self.dead_after_s))
        if not isinstance(got, Taken):
            log.debug("worker %s: run %s not taken (%s): %s", self.name, run_id, mode, got)
            return
        previous = owner if mode == "claim" else self.name if mode == "resume" else ""
        if previous:  # the books go on from what the last holder's budget reported, not from the launch's
            spent = await persist("take", lambda: self.redis.hget(self.keys.run(run_id), "spent"))
            plan = replace(plan, waking=True, remark="", spent_usd=max(plan.spent_usd, _number(spent)))
        held = Held(run_id, got.gen, entry_id)
        if (old := self.held.get(run_id)) is not None:
            self._superseded(old, "taken again here")
        self.held[run_id] = held
        self.taken += 1
        self.room_changed()
        self.publish(held, wire.note_fields("hello", run_id, held.gen, self.name, held.next_seq(), previous=previous))
        held.sink = HeldSink(self, held)
        held.log, cursor = await persist("take", lambda: HeldLog.load(
            self.redis, self.keys, run_id, held.gen, lambda iid, how: held.settles.put_nowait((iid, how))))
        try:
            held.engine = build_engine(self._kit_for(held), held, plan)
        except Exception as exc:  # the factory refused the run (a budget of 0, an unreadable workspace)
            log.warning("run %s could not start: %r", run_id, exc)
            await self.ended(held, RunEnd("failed", error=f"Could not start the run: {exc}"))
            return
        held.engine.start()
        held.cursor = cursor
        held.tasks = [asyncio.create_task(self._intents(held, cursor), name=f"intents {run_id}"),
                      asyncio.create_task(self._settler(held), name=f"settles {run_id}")]
        log.info("worker %s holds run %s (holder #%d, delivery %d%s)", self.name, run_id, held.gen, got.deliveries,
                 f", taken over from {owner}" if mode == "claim" else ", resumed after a restart"
                 if mode == "resume" else "")

    def _kit_for(self, held: Held) -> EngineKit:
        """The kit with this holder's fenced view of the session store, when the store can fence."""
        store = self.kit.runtime_options.get("session_store")
        fenced = getattr(store, "fenced", None)
        if fenced is None:
            return self.kit
        held.store = fenced(self.keys.run(held.run_id), held.gen,
                            lambda: self._superseded(held, "a session write was refused"))
        return replace(self.kit, runtime_options={**self.kit.runtime_options, "session_store": held.store})

    def _superseded(self, held: Held, why: str) -> None:
        """Another holder has the run: stop it here at once, with no end and no ack (they are the new holder's)."""
        if not held.active:
            return
        held.superseded = True
        self.superseded += 1
        log.warning("worker %s lets go of run %s: holder #%d is stale (%s)", self.name, held.run_id, held.gen, why)
        if self.held.get(held.run_id) is held:
            del self.held[held.run_id]
        for task in held.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        if held.engine is not None:
            held.engine.cancel("shutdown")
        self.room_changed()

    async def ended(self, held: Held, end: RunEnd) -> None:
        if held.superseded:
            return
        for task in held.tasks:  # its intents reader and settler: nothing is consumed after the end
            if task is not asyncio.current_task():
                task.cancel()
        if end.state != "died":  # "died": this worker is stopping; the entry is released for another
            self.publish(held, wire.end_fields(held.run_id, held.gen, self.name, held.next_seq(), end), ending=True)
            await self._out.join()
        if self.held.get(held.run_id) is held:
            del self.held[held.run_id]
        self.room_changed()

    # ---- messages out ---------------------------------------------------------------------------
    def publish(self, held: Held, fields: dict[str, str], *, ending: bool = False) -> None:
        if held.active:
            self._out.put_nowait((fields, held, ending))

    async def _publisher(self) -> None:
        while not self._closed:
            batch = [await self._out.get()]
            while not self._out.empty() and len(batch) < 200:
                batch.append(self._out.get_nowait())
            try:
                await persist("publish", lambda b=batch: self._send(b))  # type: ignore[misc]
            except Exception:  # never expected; the publisher must outlive it or every wait on it hangs
                log.exception("worker %s: %d message(s) could not be written", self.name, len(batch))
            for _ in batch:
                self._out.task_done()

    async def _send(self, batch: list[tuple[dict[str, str], Held, bool]]) -> None:
        todo = [(fields, h, ending) for fields, h, ending in batch if h.active]
        if not todo:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            books = {h.run_id: h for _f, h, _e in todo if h.spent_dirty}  # before the events that follow them
            for h in books.values():
                pipe.hset(self.keys.run(h.run_id), "spent", repr(h.spent_usd))
                h.spent_dirty = False
            for fields, h, ending in todo:
                if ending:
                    await self._f.end(pipe, h.run_id, h.gen, h.entry_id, fields, EVENTS_KEPT, KEEP_ENDED_S,
                                      cursor=h.cursor, refusal=_TOO_LATE, refused_as=Settled.MOOT.value)
                else:
                    await self._f.publish(pipe, h.run_id, h.gen, fields, EVENTS_KEPT)
            results = (await pipe.execute(raise_on_error=False))[len(books):]
        for (_fields, h, ending), ok in zip(todo, results, strict=True):
            if isinstance(ok, Exception):
                log.warning("run %s: a message was not written: %r", h.run_id, ok)
            elif not ok:
                self._superseded(h, "a message was refused")
            elif ending:
                h.ended = True
                if int(ok) > 1:
                    log.info("run %s: %d input(s) came after its end and were refused", h.run_id, int(ok) - 1)

    # ---- intents in -----------------------------------------------------------------------------
    async def _intents(self, held: Held, cursor: str) -> None:
        stream = self.keys.intents(held.run_id)
        while held.active and not self._closed:
            try:
                got = await self.redis.xread({stream: cursor}, count=50, block=BLOCK_MS)
            except DOWN as exc:
                log.warning("intents %s: redis unavailable: %r", held.run_id, exc)
                await asyncio.sleep(0.2)
                continue
            for entry_id, fields in [e for _s, items in (got or []) for e in items]:
                cursor = str(entry_id)
                if wire.text(fields, "ctl") == "sync" and held.sink is not None:
                    held.sink.replay()
                elif (logged := Logged.of(fields)) is None or held.log is None or not held.log.arrived(logged):
                    pass
                elif is_slow(logged.intent):
                    aside = asyncio.create_task(self._apply(held, logged))
                    self._asides.add(aside)
                    aside.add_done_callback(self._asides.discard)
                else:
                    await self._apply(held, logged)
                # Moved only once the entry is applied (and replied to): what is after it at the run's end
                # is refused by the end script, so nothing is acknowledged by nobody.
                held.cursor = cursor

    async def _apply(self, held: Held, logged: Logged) -> None:
        try:
            reply = await apply_intent(held, logged)
        except Exception as exc:  # a bad intent must never hurt the run
            log.warning("run %s: intent %s not applied: %r", held.run_id, logged.intent.iid, exc)
            return
        if logged.reply and held.active:
            body = wire.reply_json(reply)
            if not await persist("reply", lambda: self._f.reply(held.run_id, held.gen, logged.intent.iid, body)):
                self._superseded(held, "a reply was refused")

    async def _settler(self, held: Held) -> None:
        """Writes the engine's settles in order, each once the run's session appends before it are stored."""
        while held.active and not self._closed:
            iid, how = await held.settles.get()
            store = held.store
            if store is not None and (not await store.drained() or store.lagging):
                log.warning("run %s: intent %s left unsettled: the stored session lags the CLI's transcript",
                            held.run_id, iid)
                continue
            if not await persist("settle", lambda i=iid, s=how: self._f.settle(  # type: ignore[misc]
                    held.run_id, held.gen, i, s.value)):
                self._superseded(held, "a settle was refused")
                return


def _number(value: object) -> float:
    """A number kept in a hash field (bytes or str); 0.0 when missing or unreadable."""
    try:
        return max(0.0, float(value.decode() if isinstance(value, bytes) else value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
