"""Who holds a run, on a real redis-server, with RedisWorkers in this process and engine doubles
(tests/support/engine_double.py): liveness on Redis's clock across a Redis restart, fencing of a holder that
was replaced, a restart under the same name, and a stop that is bounded and hands runs over at once.

A "vanished" worker is what a SIGKILL leaves: its tasks stop and it writes nothing on the way out."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.transport import wire
from adapters.transport.engine import EngineKit
from adapters.transport.intents import Intent, Op, Settled
from adapters.transport.plan import RunPlan
from adapters.transport.redis_conn import DOWN, cancel_all, connect
from adapters.transport.redis_fence import Fence
from adapters.transport.redis_worker import RedisWorker
from flower_core.redis_store import RedisSessionStore, StaleWriter
from tests.support.engine_double import KitDouble
from tests.support.redis_support import RedisServer
from tests.support.store_contract import KEY, assistant_entry

HEARTBEAT_S, DEAD_AFTER_S = 0.2, 1.0
KEYS = wire.Keys()


class Rig:
    def __init__(self, server: RedisServer, tmp: Path) -> None:
        self.server, self.tmp = server, tmp
        self.kit = KitDouble()
        self.r: Any = connect(server.url)  # reconnects after a restart, as the workers' clients do
        self.workers: list[RedisWorker] = []
        self.store: RedisSessionStore | None = None

    async def worker(self, name: str, *, dead_after_s: float = DEAD_AFTER_S, **kw: Any) -> RedisWorker:
        kit: Any = self.kit
        w = RedisWorker(self.server.url, kit, name=name, heartbeat_s=HEARTBEAT_S, dead_after_s=dead_after_s, **kw)
        await w.start()
        self.workers.append(w)
        return w

    async def submit(self, run_id: str) -> str:
        plan = RunPlan("pick a style", workspace=self.tmp / run_id, run_dir=self.tmp / run_id / "runs")
        return str(await self.r.xadd(KEYS.work, {"run": run_id, "plan": plan.to_json()}))

    async def gen(self, run_id: str) -> int:
        return int(await self.r.hget(KEYS.run(run_id), "gen") or 0)

    async def owner(self, entry_id: str) -> str:
        pending = await self.r.xpending_range(KEYS.work, wire.WORK_GROUP, entry_id, entry_id, 1)
        return str(pending[0]["consumer"]) if pending else ""

    async def messages(self, run_id: str) -> list[dict[str, str]]:
        return [f for _id, f in await self.r.xrange(KEYS.events) if f.get("run") == run_id]

    async def close(self) -> None:
        for w in self.workers:
            if not w._stopping:
                await w.stop()
        await self.r.aclose()
        if self.store is not None:
            self.store.close()


@pytest.fixture
async def rig(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Rig]:
    r = Rig(redis_server, tmp_path)
    try:
        yield r
    finally:
        await r.close()


async def until(what: str, probe: Callable[[], Awaitable[Any]], timeout: float = 15.0) -> Any:
    """Poll Redis-side state until `probe()` is truthy (Redis has no change feed for these keys)."""
    deadline = time.monotonic() + timeout
    while True:
        got = await probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def vanish(w: RedisWorker) -> None:
    """What SIGKILL leaves of a worker: nothing more is written, nothing is handed back."""
    w._stopping = True
    for h in w.held.values():
        h.superseded = True
        for task in h.tasks:
            task.cancel()
        if h.engine is not None and h.engine.task is not None:
            h.engine.task.cancel()
    w._closed = True
    assert not await cancel_all(w._tasks, 10.0)  # cancel alone may be lost (see cancel_all)
    await w.redis.aclose()


async def back(r: Any) -> None:
    """Until this client talks to the restarted server (its first command after a restart fails)."""
    async def pong() -> bool:
        try:
            return bool(await r.ping())
        except DOWN:
            return False
    await until("redis to answer again", pong)


async def beats_of(r: Any, name: str) -> int:
    raw = await r.hget(KEYS.beats, name)
    return int(str(raw).split()[0]) if raw else 0


async def test_liveness_counts_from_redis_start_not_from_a_beat_before_the_outage(rig: Rig) -> None:
    fence, after = Fence(rig.r, KEYS), 3.0
    await fence.beat("w", after, "{}", [])
    rig.server.stop()
    await asyncio.sleep(after + 0.5)  # the outage: longer than w's dead-after
    rig.server.start()  # the beat comes back from the append-only file, older than dead-after
    await back(rig.r)
    assert "w" in await fence.alive(after)  # right after the restart nobody is dead yet
    await until("w to be found dead", lambda: _dead(fence, "w", after), timeout=15)
    info = await rig.r.info("server")
    assert int(info["uptime_in_seconds"]) >= after  # only once Redis itself was up for w's dead-after
    await fence.beat("w", after, "{}", [])
    assert "w" in await fence.alive(after)


async def _dead(fence: Fence, name: str, after: float) -> bool:
    return name not in await fence.alive(after)


async def test_a_redis_outage_longer_than_dead_after_steals_nothing(rig: Rig) -> None:
    await rig.worker("a")
    await rig.worker("b")
    await rig.submit("r1")
    await until("a or b to hold r1", lambda: rig.gen("r1"))
    holder = next(w for w in rig.workers if "r1" in w.held)
    rig.server.stop()
    await asyncio.sleep(2.5 * DEAD_AFTER_S)  # every beat on file is older than dead-after by the time it is back
    rig.server.start()
    await back(rig.r)

    async def settled_in() -> bool:  # Redis up for twice dead-after: any claim would have happened by now
        return int((await rig.r.info("server"))["uptime_in_seconds"]) >= 2 * DEAD_AFTER_S + 1
    await until("Redis to be up for a while", settled_in, timeout=20)
    assert await rig.gen("r1") == 1 and "r1" in holder.held
    assert sum(w.taken for w in rig.workers) == 1 and not any(w.superseded for w in rig.workers)
    assert [e.cancelled for e in rig.kit.of("r1")] == [""]


async def test_a_holder_taken_for_dead_is_fenced_and_stops_without_a_word(rig: Rig) -> None:
    rig.store = RedisSessionStore(rig.server.url)
    rig.kit.runtime_options = {"session_store": rig.store}
    a = await rig.worker("a")
    entry = await rig.submit("r1")
    await until("a to hold r1", lambda: rig.gen("r1"))
    old = a.held["r1"]
    assert old.store is not None
    await old.store.append(KEY, [assistant_entry("a-1", 10)])  # the holder's own session writes go through
    a._tasks[1].cancel()  # a's beats stop (a paused process, a cut link): it is taken for dead
    b = await rig.worker("b")
    await until("b to claim r1", lambda: _holds(b, "r1"))
    assert await rig.gen("r1") == 2 and await rig.owner(entry) == "b"
    before = len(await rig.messages("r1"))

    first = rig.kit.of("r1")[0]
    first.emit("the old holder still talks")  # its first write is refused, and it lets go at once
    await until("a to let go of r1", lambda: _let_go(a, "r1"))
    assert first.cancelled == "shutdown" and a.superseded == 1
    with pytest.raises(StaleWriter):
        await old.store.append(KEY, [assistant_entry("a-2", 10)])
    assert not await Fence(rig.r, KEYS).settle("r1", 1, "i1", "done")
    assert not await Fence(rig.r, KEYS).reply("r1", 1, "i1", "{}")
    messages = await rig.messages("r1")
    assert [m for m in messages[before:] if m["gen"] == "1"] == []  # nothing from holder #1 after the takeover
    assert not [m for m in messages if m["t"] == "end"] and await rig.owner(entry) == "b"  # no end, no ack
    entries = await rig.store.load(KEY) or []
    assert [e.get("uuid") for e in entries] == ["a-1"]
    new = b.held["r1"].store
    await new.append(KEY, [assistant_entry("b-1", 10)])  # the new holder's do
    assert [e.get("uuid") for e in await rig.store.load(KEY) or []] == ["a-1", "b-1"]


async def test_a_holder_learns_from_its_beat_that_it_was_replaced(rig: Rig) -> None:
    a = await rig.worker("a")
    await rig.submit("r1")
    await until("a to hold r1", lambda: rig.gen("r1"))
    a._tasks[1].cancel()
    b = await rig.worker("b")
    await until("b to claim r1", lambda: _holds(b, "r1"))
    a._tasks[1] = asyncio.create_task(a._heartbeats())  # a's beats resume: the first one tells it
    await until("a to let go of r1", lambda: _let_go(a, "r1"))
    assert rig.kit.of("r1")[0].cancelled == "shutdown"
    assert [m for m in await rig.messages("r1") if m["t"] == "end"] == []


async def _holds(w: RedisWorker, run_id: str) -> bool:
    return run_id in w.held


async def _let_go(w: RedisWorker, run_id: str) -> bool:
    return run_id not in w.held


async def test_a_restart_under_the_same_name_resumes_its_runs_once(rig: Rig) -> None:
    w = await rig.worker("w")
    entries = {run: await rig.submit(run) for run in ("r1", "r2")}
    await until("w to hold both runs", lambda: _all_held(w, "r1", "r2"))
    await vanish(w)
    again = await rig.worker("w")  # the same name, before anyone could find the old one dead
    assert sorted(again.held) == ["r1", "r2"] and again.taken == 2
    start = await beats_of(rig.r, "w")

    async def beaten() -> bool:  # ten beats later: a loop would have taken the runs again by now
        return await beats_of(rig.r, "w") - start >= 10 * HEARTBEAT_S * 1000
    await until("ten more beats", beaten)
    assert [await rig.gen(r) for r in ("r1", "r2")] == [2, 2] and again.taken == 2
    assert [len(rig.kit.of(r)) for r in ("r1", "r2")] == [2, 2]  # one engine per holder
    assert all(e.plan.waking for e in rig.kit.engines[2:])
    assert [await rig.owner(e) for e in entries.values()] == ["w", "w"]


async def _all_held(w: RedisWorker, *runs: str) -> bool:
    """Held, with an engine going (a take registers the run first, then builds its engine)."""
    return all(r in w.held and w.held[r].engine is not None for r in runs)


async def test_a_restart_under_the_same_name_without_room_releases_the_rest(rig: Rig) -> None:
    w = await rig.worker("w", dead_after_s=30.0)
    for run in ("r1", "r2"):
        await rig.submit(run)
    await until("w to hold both runs", lambda: _all_held(w, "r1", "r2"))
    await vanish(w)
    other = await rig.worker("x", dead_after_s=30.0)
    small = await rig.worker("w", max_runs=1, dead_after_s=30.0)
    assert len(small.held) == 1
    released = next(r for r in ("r1", "r2") if r not in small.held)
    # taken by x within seconds: a dead-after of 30 s could not explain it, only the release
    await until("x to take the released run", lambda: _holds(other, released), timeout=10)
    assert await rig.gen(released) == 2


async def test_stop_is_bounded_and_hands_the_runs_over_at_once(rig: Rig) -> None:
    rig.kit.stubborn_s = 60.0  # its engine ignores the cancel for a minute
    leaving = await rig.worker("leaving", dead_after_s=30.0, stop_timeout_s=2.0)
    await rig.submit("r1")
    await until("leaving to hold r1", lambda: _holds(leaving, "r1"))
    staying = await rig.worker("staying", dead_after_s=30.0)
    began = time.monotonic()
    await leaving.stop()
    assert time.monotonic() - began < 3.0
    await until("staying to take r1", lambda: _holds(staying, "r1"), timeout=10)
    assert await rig.r.hget(KEYS.beats, "leaving") is None
    first = rig.kit.of("r1")[0]
    first.emit("still winding down")  # the old engine's late words go nowhere
    assert [m for m in await rig.messages("r1") if m["gen"] == "1" and m.get("text") == "still winding down"] == []
    first.stubborn_s = 0
    if first.task is not None:
        first.task.cancel()


async def test_stop_ends_a_loop_that_lost_its_cancellation(rig: Rig) -> None:
    """What hung a teardown past 120 s: a loop cancelled mid-write can go on (cancel_all), and a stop
    that gathers its tasks after one cancel waits forever. Here the work loop swallows two cancels."""
    w = await rig.worker("w")

    async def deaf() -> None:
        for _ in range(2):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(3600)
        await asyncio.sleep(3600)
    w._tasks[2].cancel()
    w._tasks[2] = asyncio.create_task(deaf())
    began = time.monotonic()
    await w.stop()
    assert time.monotonic() - began < 5.0 and w._tasks[2].done()


def test_engine_kit_is_what_the_double_stands_for() -> None:
    """The double keeps the fields RedisWorker replaces and reads (a rename in EngineKit shows here)."""
    for name in ("adopt", "may_park", "runtime_options"):
        assert name in EngineKit.__dataclass_fields__ and name in KitDouble.__dataclass_fields__


async def test_an_intent_logged_after_the_holders_last_read_is_refused_with_the_end(rig: Rig) -> None:
    """A front logs an intent in the instant the holder's run is ending (its reader has stopped): the end
    script refuses it atomically with the end — settled moot, "the run had ended" replied — so nobody is
    told "ok" about words no step will hear. What the holder applied before is left as it was."""
    w = await rig.worker("w")
    await rig.submit("r1")
    await until("w to hold r1", lambda: rig.gen("r1"))
    heard = Intent(Op.SEND, "read this first", user="ana")
    await rig.r.xadd(KEYS.intents("r1"), wire.intent_entry(heard))
    await until("the holder to reply to it", lambda: rig.r.exists(KEYS.reply(heard.iid)))
    reader = w.held["r1"].tasks[0]
    reader.cancel()  # the run is ending: its holder reads no more intents
    await asyncio.gather(reader, return_exceptions=True)
    late = Intent(Op.INTERRUPT, "and use tabs", user="ana")
    quiet = Intent(Op.STOP, user="bob")  # logged without waiting for a reply
    await rig.r.xadd(KEYS.intents("r1"), wire.intent_entry(late))
    await rig.r.xadd(KEYS.intents("r1"), wire.intent_entry(quiet, reply=False))
    rig.kit.of("r1")[0].finish()
    await until("the run's end", lambda: _ended(rig, "r1"))
    refusal = await rig.r.lpop(KEYS.reply(late.iid))
    assert refusal is not None and wire.reply_of(refusal).ended
    assert await rig.r.hget(KEYS.settled("r1"), late.iid) == Settled.MOOT.value
    assert await rig.r.hget(KEYS.settled("r1"), quiet.iid) == Settled.MOOT.value
    assert not await rig.r.exists(KEYS.reply(quiet.iid))
    first = await rig.r.lpop(KEYS.reply(heard.iid))
    assert first is not None and wire.reply_of(first).ok
    assert await rig.r.hget(KEYS.settled("r1"), heard.iid) != Settled.MOOT.value


async def _ended(rig: Rig, run_id: str) -> bool:
    return any(m["t"] == "end" for m in await rig.messages(run_id))
