"""RedisTransport: the chat side's end of scale-out — runs are handed to `flower-worker`s over Redis.

- `launch` puts one entry on the work stream; whichever worker has room takes it (redis_worker.py).
- One reader follows the events stream (consumer group `front`, acked after dispatch, so a front
  restart goes on from where it stopped) and calls each run's sink on this loop. A message from a
  newer holder of a run means the run was taken over: the sink is told (`handed_over`) and the hub
  shows the run afresh before the message is passed on.
- Intents (`RedisRun.submit`) are entries on the run's own intent stream: once XADD returns the
  intent is durable, and it stays there until a holder settles it (redis_log.py). The caller then
  waits for the holder's reply on a list (BLPOP). When the holder is dead (redis_fence.py: judged on
  Redis's clock), the run moved, or no reply comes in time, the caller gets `Undelivered`; the intent
  is still in the stream, for the next holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from adapters.chores import Chores
from adapters.transport import wire
from adapters.transport.base import RunEnd, RunSink, Undelivered
from adapters.transport.intents import Intent, IntentReply, Op
from adapters.transport.plan import RunPlan
from adapters.transport.redis_conn import DOWN, cancel_all, connect, ensure_group, persist, reachable
from adapters.transport.redis_fence import Fence

log = logging.getLogger(__name__)

BLOCK_MS = 2000  # blocking reads return this often (well under the client's 5 s socket timeout)
ORPHANS_KEPT = 2000  # messages kept per run nobody follows yet (the front is attaching after a restart)
ORPHAN_RUNS = 1000  # ... for at most this many runs (others' runs, runs this front forgot)
DEAD_AFTER_S = 5.0  # for a worker with no beat on file (each beat carries its worker's own dead-after)


@dataclass
class Follow:
    """What the front knows of one run it shows."""

    sink: RunSink
    gen: int | None = None  # the holder its messages come from (None: take the first one seen)
    holder: str = ""
    seq: int = -1


class RedisTransport:
    name = "redis"
    remote = True

    def __init__(self, url: str, *, prefix: str = "flower", reply_timeout_s: float = 10.0,
                 oracle_timeout_s: float = 600.0, consumer: str = "front") -> None:
        self.url, self.keys = url, wire.Keys(prefix)
        self.reply_timeout_s, self.oracle_timeout_s = reply_timeout_s, oracle_timeout_s
        self.consumer = consumer
        self.runs: dict[str, Follow] = {}
        self.redis: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._orphans: dict[str, deque[dict[str, str]]] = defaultdict(lambda: deque(maxlen=ORPHANS_KEPT))
        self._submitted: dict[str, asyncio.Future[str]] = {}  # each run's work entry id (until it ends)
        self._handing = ""  # the run being handed over right now (its new sink needs no replay)
        self.latency: deque[float] = deque(maxlen=10_000)  # seconds from a worker's write to dispatch here
        self.gaps = 0  # messages missing in a run's sequence (a lost write would show here)
        self.stale = 0  # messages from a holder that was replaced (the fence should keep this at 0)
        self.fence: Fence | None = None
        self._closing = False
        self._bg = Chores()

    # ---- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        self.redis = connect(self.url)
        await reachable(self.redis, self.url)
        self.fence = Fence(self.redis, self.keys)
        await persist("setup", lambda: ensure_group(self.redis, self.keys.events, wire.FRONT_GROUP))
        await persist("setup", lambda: ensure_group(self.redis, self.keys.work, wire.WORK_GROUP))
        self._reader = asyncio.create_task(self._read(), name="redis events reader")

    async def close(self) -> None:
        self._closing = True
        await self._bg.wait()
        if self._reader is not None:
            await cancel_all([self._reader], 5.0)  # it also ends by itself within BLOCK_MS once closing
        if self.redis is not None:
            await self.redis.aclose()

    def holders(self) -> dict[str, str]:
        return {run_id: f.holder for run_id, f in self.runs.items()}

    @property
    def _f(self) -> Fence:
        assert self.fence is not None, "start() first"
        return self.fence

    async def workers(self) -> dict[str, dict[str, Any]]:
        """The live workers and what their heartbeats say (runs held, limit, host)."""
        found: dict[str, dict[str, Any]] = {}
        for name, raw in (await self._f.alive(DEAD_AFTER_S)).items():
            with contextlib.suppress(TypeError, ValueError):
                found[name] = dict(json.loads(raw))
        return found

    async def waits(self, run_id: str) -> bool:
        """Its work entry is further down the queue than the room the live workers have left."""
        submitted = self._submitted.get(run_id)
        if submitted is None:
            return False
        try:
            entry_id = await submitted
            groups = await self.redis.xinfo_groups(self.keys.work)
            last = next((str(g["last-delivered-id"]) for g in groups if g["name"] == wire.WORK_GROUP), "0-0")
            if _id(entry_id) <= _id(last):
                return False  # a worker has taken it
            ahead = len(await self.redis.xrange(self.keys.work, min=f"({last}", max=entry_id))
            # Runs a worker holds are its pending entries (a heartbeat may be a beat behind); parked ones
            # do not count against its limit.
            summary = await self.redis.xpending(self.keys.work, wire.WORK_GROUP)
            held = {str(c["name"]): int(c["pending"]) for c in summary.get("consumers") or []}
            room = sum(max(0, int(w.get("max_runs", 0)) - held.get(name, 0) + int(w.get("parked", 0)))
                       for name, w in (await self.workers()).items())
        except (*DOWN, ValueError, KeyError, TypeError):
            return False
        return ahead > room

    # ---- runs -----------------------------------------------------------------------------------
    def launch(self, run_id: str, plan: RunPlan, sink: RunSink, *, attach: bool = False) -> RedisRun:
        self.runs[run_id] = Follow(sink)
        if not attach:
            fields = {"run": run_id, "plan": plan.to_json()}
            submit = persist("submit run", lambda: self._submit_run(run_id, fields))
            self._submitted[run_id] = self._bg.spawn(submit)
        elif run_id != self._handing:  # this front (re)starts following a run going on a worker
            held = self._orphans.pop(run_id, None)  # messages that came while nobody followed it
            if held:
                asyncio.get_running_loop().call_soon(self._dispatch_all, list(held))
            self._control(run_id, "sync")  # and where it is now: its step, its open questions
            self._bg.spawn(self._ended_meanwhile(run_id))
        return RedisRun(self, run_id)

    async def _ended_meanwhile(self, run_id: str) -> None:
        """A run followed again after a restart may have ended with its end read (and acked) by the front that
        died before its hub booked it: nobody holds it to say so again, so its end kept in the run hash is
        passed on — unless the end message is still in the events stream, when this front's reader has it."""
        raw, end_id = await persist("attach", lambda: self.redis.hmget(self.keys.run(run_id), "end", "end_id"))
        if raw is None:
            return
        if end_id and await persist("attach", lambda: self.redis.xrange(self.keys.events, end_id, end_id)):
            return
        try:
            fields = {str(k): str(v) for k, v in json.loads(raw).items()}
        except (ValueError, AttributeError) as exc:
            log.warning("run %s: its kept end is unreadable: %r", run_id, exc)
            return
        if self.runs.get(run_id) is not None:
            self._dispatch(fields)

    async def _submit_run(self, run_id: str, fields: dict[str, str]) -> str:
        """The work entry (its id), the run no longer marked ended in the same transaction (a continued
        run takes intents again)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.run(run_id), "ended", "end", "end_id")
            pipe.xadd(self.keys.work, fields)
            _cleared, entry_id = await pipe.execute()
        return str(entry_id)

    # ---- events in ------------------------------------------------------------------------------
    async def _read(self) -> None:
        backlog = True  # first what this consumer was handed before a restart and never acked
        delay = 0.05
        while not self._closing:
            try:
                got = await self.redis.xreadgroup(wire.FRONT_GROUP, self.consumer,
                                                  {self.keys.events: "0" if backlog else ">"}, count=500,
                                                  block=BLOCK_MS)
                delay = 0.05
            except DOWN as exc:
                log.warning("events reader: redis unavailable: %r", exc)
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
                continue
            except Exception as exc:  # e.g. NOGROUP after Redis lost its data: make the group again
                log.warning("events reader: %r", exc)
                with contextlib.suppress(Exception):
                    await ensure_group(self.redis, self.keys.events, wire.FRONT_GROUP)
                await asyncio.sleep(delay)
                continue
            entries = [e for _stream, items in (got or []) for e in items]
            if backlog and not entries:
                backlog = False
                continue
            for _entry_id, fields in entries:
                try:
                    self._dispatch(fields)
                except Exception as exc:  # one bad message must not stop every run's events
                    log.warning("events reader: message dropped: %r", exc)
            ids = [entry_id for entry_id, _ in entries]
            if ids:
                with contextlib.suppress(*DOWN):
                    async with self.redis.pipeline(transaction=False) as pipe:
                        pipe.xack(self.keys.events, wire.FRONT_GROUP, *ids)
                        pipe.xdel(self.keys.events, *ids)
                        await pipe.execute()

    def _dispatch_all(self, held: list[dict[str, str]]) -> None:
        for fields in held:
            self._dispatch(fields)

    def _dispatch(self, fields: dict[str, str]) -> None:
        run_id = wire.text(fields, "run")
        follow = self.runs.get(run_id)
        if follow is None:
            if run_id not in self._orphans and len(self._orphans) >= ORPHAN_RUNS:
                del self._orphans[next(iter(self._orphans))]  # the run followed least recently goes first
            self._orphans[run_id].append(fields)
            return
        try:
            gen, seq = int(wire.text(fields, "gen", "0")), int(wire.text(fields, "seq", "0"))
        except ValueError:
            return
        holder = wire.text(fields, "holder")
        if follow.gen is not None and gen < follow.gen:
            self.stale += 1  # a late word from a holder that was replaced: its writes should have been refused
            log.warning("run %s: a message from replaced holder #%d (now #%d) dropped", run_id, gen, follow.gen)
            return
        if follow.gen is not None and gen > follow.gen:
            previous = follow.holder
            self._handing = run_id
            try:
                follow.sink.handed_over(holder, previous)  # the hub launches a new sink for the run (attach)
            finally:
                self._handing = ""
            follow = self.runs.get(run_id, follow)
        if follow.gen != gen:
            follow.gen, follow.seq = gen, -1
        if seq <= follow.seq:
            return  # a retried write
        if seq > follow.seq + 1 and follow.seq >= 0:  # never expected: messages are written in order, acked late
            self.gaps += 1
            log.warning("run %s: %d message(s) from %s missing before #%d", run_id, seq - follow.seq - 1, holder, seq)
        follow.seq, follow.holder = seq, holder
        if at := wire.text(fields, "at"):
            with contextlib.suppress(ValueError):
                self.latency.append(time.time() - float(at))
        kind = wire.text(fields, "t")
        if kind == "ev":
            follow.sink.on_event(wire.event_of(fields))
        elif kind == "step":
            follow.sink.step_done(wire.text(fields, "name"))
        elif kind == "end":
            self._submitted.pop(run_id, None)
            if self.runs.get(run_id) is follow:
                del self.runs[run_id]
            self._bg.spawn(follow.sink.ended(wire.end_of(fields)))

    # ---- intents out ----------------------------------------------------------------------------
    async def submit(self, run_id: str, intent: Intent, *, timeout: float | None = None) -> IntentReply:
        """Log the intent in the run's stream (durable once this returns or raises Undelivered), then
        wait for the holder's reply."""
        launching = self._submitted.get(run_id)
        if launching is not None and not launching.done():  # its new round must be on file first (`ended`)
            with contextlib.suppress(Exception):
                await asyncio.shield(launching)
        follow = self.runs.get(run_id)
        fields = wire.intent_entry(intent)
        if not await persist("intent", lambda: self._f.log(run_id, fields)):
            return IntentReply.too_late()  # it ended before this was logged: nobody would ever read it
        holder, seen = (follow.holder, follow.gen) if follow is not None else ("", None)
        wait = self.reply_timeout_s if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            # Waited on in slices: a holder that dies, or a takeover, ends the wait early - unless a reply
            # is there after all (the end script refuses what came after the holder's last read).
            gone = ""
            if not holder or not await persist("liveness", lambda: self._f.alive(DEAD_AFTER_S, holder)):
                gone = f"no worker holds run {run_id} right now"
            elif (now := self.runs.get(run_id)) is None or now.gen != seen:
                gone = f"run {run_id} moved to another worker"
            if gone:
                last = await persist("reply", lambda: self.redis.lpop(self.keys.reply(intent.iid)))
                if last is not None:
                    return wire.reply_of(last)
                raise Undelivered(gone)
            left = deadline - loop.time()
            if left <= 0:
                raise Undelivered(f"worker {holder} did not reply in {wait:g}s")
            step = max(0.01, min(1.0, left))
            got = await persist("reply", lambda s=step: self.redis.blpop(  # type: ignore[misc]
                [self.keys.reply(intent.iid)], timeout=s))
            if got is not None:
                break
        return wire.reply_of(got[1])

    async def keep(self, run_id: str, intent: Intent) -> None:
        """Log an intent for a run nobody holds now (asleep, or waiting for room): its next holder applies it."""
        fields = wire.intent_entry(intent, reply=False)
        await persist("intent", lambda: self.redis.xadd(self.keys.intents(run_id), fields))

    def tell(self, run_id: str, intent: Intent) -> None:
        """Log an intent nobody waits on (a stop): whoever holds the run applies it, now or after a takeover."""
        fields = wire.intent_entry(intent, reply=False)
        self._bg.spawn(persist("intent", lambda: self.redis.xadd(self.keys.intents(run_id), fields)))

    def _control(self, run_id: str, what: str) -> None:
        fields = wire.control_entry(what)
        self._bg.spawn(persist("control", lambda: self.redis.xadd(self.keys.intents(run_id), fields)))

    def detach(self, run_id: str) -> bool:
        """Stop following a run (this front is going away); it goes on on its worker."""
        follow = self.runs.pop(run_id, None)
        self._submitted.pop(run_id, None)
        if follow is None:
            return False
        self._bg.spawn(follow.sink.ended(RunEnd("died")))
        return True


class RedisRun:
    """One run held by some worker, as the chat side sees it (a RunSide)."""

    def __init__(self, transport: RedisTransport, run_id: str) -> None:
        self.t, self.run_id = transport, run_id

    @property
    def holder(self) -> str:
        follow = self.t.runs.get(self.run_id)
        return follow.holder if follow is not None else ""

    async def submit(self, intent: Intent) -> IntentReply:
        """Durable in the run's stream first; then the holder's reply (Undelivered: none came)."""
        timeout = self.t.oracle_timeout_s if intent.op is Op.ORACLE else None
        return await self.t.submit(self.run_id, intent, timeout=timeout)

    def cancel(self, reason: str) -> bool:
        if reason == "shutdown":
            return self.t.detach(self.run_id)
        if self.run_id not in self.t.runs:
            return False
        self.t.tell(self.run_id, Intent(Op.STOP))
        return True


def _id(entry_id: str) -> tuple[int, int]:
    """A stream entry id ("ms-seq") as something that orders."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
