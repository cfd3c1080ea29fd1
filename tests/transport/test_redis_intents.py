"""Intents over Redis, durable before acknowledged: the front's submit (RedisRun) and the holder's log
(HeldLog), on a real redis-server with RedisWorkers in this process and engine doubles that apply
intents the way the durable-intents engine does (tests/support/engine_double.py).

What is checked: an intent is in the run's stream before submit returns; it stays unsettled until the
engine settles it, and the next holder replays exactly what was not settled; a settle waits for the
session appends before it and is never written when the stored session lags; a replaced holder's
settles are refused."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

import flower_core.redis_store as redis_store
from adapters.transport import wire
from adapters.transport.base import RunEnd, Undelivered
from adapters.transport.intents import Intent, IntentReply, Op
from adapters.transport.plan import RunPlan
from adapters.transport.redis_front import RedisRun, RedisTransport
from adapters.transport.redis_worker import RedisWorker
from flower_core import Event
from flower_core.redis_store import RedisSessionStore
from tests.support.engine_double import EngineDouble, KitDouble
from tests.support.redis_support import RedisServer
from tests.support.store_contract import KEY, assistant_entry
from tests.transport.test_redis_takeover import HEARTBEAT_S, KEYS, until, vanish


class Sink:
    """The chat side of one run, as the front calls it."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ends: list[RunEnd] = []
        self.handovers: list[tuple[str, str]] = []

    def on_event(self, ev: Event) -> None:
        self.events.append(ev)

    def step_done(self, name: str) -> None:
        return None

    async def ended(self, end: RunEnd) -> None:
        self.ends.append(end)

    def handed_over(self, holder: str, previous: str) -> None:
        self.handovers.append((holder, previous))


class Rig:
    def __init__(self, server: RedisServer, tmp: Path, kit: KitDouble) -> None:
        self.server, self.tmp, self.kit = server, tmp, kit
        self.front = RedisTransport(server.url, reply_timeout_s=5.0)
        self.workers: list[RedisWorker] = []
        self.sinks: dict[str, Sink] = {}
        self.store = RedisSessionStore(server.url)

    async def worker(self, name: str) -> RedisWorker:
        kit: Any = self.kit
        w = RedisWorker(self.server.url, kit, name=name, heartbeat_s=HEARTBEAT_S, dead_after_s=1.0)
        await w.start()
        self.workers.append(w)
        return w

    def launch(self, run_id: str) -> RedisRun:
        plan = RunPlan("pick a style", workspace=self.tmp / run_id, run_dir=self.tmp / run_id / "runs")
        sink = self.sinks[run_id] = Sink()
        return self.front.launch(run_id, plan, sink)

    async def settled(self, run_id: str) -> dict[str, str]:
        return dict(await self.front.redis.hgetall(KEYS.settled(run_id)))

    async def logged(self, run_id: str) -> list[str]:
        return [wire.text(f, "iid") for _id, f in await self.front.redis.xrange(KEYS.intents(run_id))]

    def engine(self, run_id: str, holder: int = -1) -> EngineDouble:
        return self.kit.of(run_id)[holder]

    async def close(self) -> None:
        for w in self.workers:
            if not w._stopping:
                await w.stop()
        await self.front.close()
        self.store.close()


@pytest.fixture
async def rig(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Rig]:
    kit = KitDouble()
    kit.runtime_options = {}
    r = Rig(redis_server, tmp_path, kit)
    kit.runtime_options["session_store"] = r.store
    await r.front.start()
    try:
        yield r
    finally:
        await r.close()


async def _held(rig: Rig, run_id: str) -> bool:
    return bool(rig.front.holders().get(run_id))


async def test_a_submitted_intent_is_logged_and_replayed_by_the_next_holder_until_settled(rig: Rig) -> None:
    a = await rig.worker("a")
    side = rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    mail, words = Intent(Op.SEND, text="keep it short"), Intent(Op.INTERRUPT, text="wait")
    assert await side.submit(mail) == IntentReply(mail=f"m-{mail.iid[:6]}")
    assert await rig.logged("r1") == [mail.iid]  # in the stream before "ok": what the reply rests on
    first = rig.engine("r1")
    first.turn_done()  # the turn that took the mail ended: it is settled...
    await until("the mail to be settled", lambda: _settled(rig, "r1", mail.iid))
    assert (await side.submit(words)).in_flight
    later = Intent(Op.SEND, text="one more thing")
    assert (await side.submit(later)).mail
    assert [i.iid for i in first.applied] == [mail.iid, words.iid, later.iid]
    await vanish(a)  # ... and the holder dies before the interrupt's and the later mail's turn ends
    await rig.worker("b")
    await until("b to take r1", lambda: _holder(rig, "r1", "b"))
    second = rig.engine("r1")
    await until("b's engine to replay", lambda: _applied(second, 2))
    assert [i.iid for i in second.applied] == [words.iid, later.iid]  # each once, the settled mail not again
    assert second.log.unsettled() == [words, later]
    second.turn_done()
    await until("both to be settled", lambda: _settled(rig, "r1", words.iid, later.iid))
    assert (await rig.settled("r1")) == {mail.iid: "done", words.iid: "done", later.iid: "done"}


async def _settled(rig: Rig, run_id: str, *iids: str) -> bool:
    got = await rig.settled(run_id)
    return all(i in got for i in iids)


async def _holder(rig: Rig, run_id: str, name: str) -> bool:
    return rig.front.holders().get(run_id) == name


async def _applied(engine: EngineDouble, n: int) -> bool:
    return len(engine.applied) >= n


async def test_an_intent_for_a_run_nobody_holds_is_kept_for_its_first_holder(rig: Rig) -> None:
    side = rig.launch("r1")  # no worker yet: the run waits for room
    early = Intent(Op.SEND, text="before anyone took it")
    with pytest.raises(Undelivered):
        await side.submit(early)
    assert await rig.logged("r1") == [early.iid]
    await rig.worker("a")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    engine = rig.engine("r1")
    await until("the first holder to apply it", lambda: _applied(engine, 1))
    assert [i.iid for i in engine.applied] == [early.iid]


async def test_a_retried_write_of_one_intent_is_applied_once(rig: Rig) -> None:
    await rig.worker("a")
    side = rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    mail = Intent(Op.SEND, text="once")
    for _ in range(2):  # what a client retry after a lost reply looks like
        await rig.front.redis.xadd(KEYS.intents("r1"), wire.intent_entry(mail, reply=False))
    assert (await side.submit(Intent(Op.SEND, text="after"))).mail
    assert [i.text for i in rig.engine("r1").applied] == ["once", "after"]


async def test_a_settle_waits_for_the_session_appends_before_it(rig: Rig) -> None:
    a = await rig.worker("a")
    side = rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    held = a.held["r1"]
    store = held.store
    gate, inside = asyncio.Event(), asyncio.Event()
    real_append, real_drained = store._append, store.drained

    async def slow_append(*args: Any) -> None:
        await gate.wait()  # the SDK's mirror of the turn is on its way, not stored yet
        await real_append(*args)

    async def watched_drained(timeout: float = 50.0) -> bool:
        inside.set()
        return await real_drained(timeout)
    store._append, store.drained = slow_append, watched_drained
    words = Intent(Op.INTERRUPT, text="wait")
    assert (await side.submit(words)).in_flight
    mirror = asyncio.ensure_future(store.append(KEY, [assistant_entry("turn-1", 10)]))
    rig.engine("r1").turn_done()
    await asyncio.wait_for(inside.wait(), 10)  # the settler is waiting on the append...
    assert words.iid not in await rig.settled("r1")  # ... and has written nothing
    gate.set()
    await mirror
    await until("the settle once the turn is stored", lambda: _settled(rig, "r1", words.iid))
    assert [e.get("uuid") for e in await rig.store.load(KEY) or []] == ["turn-1"]


async def test_nothing_is_settled_once_the_stored_session_lags(rig: Rig, caplog: pytest.LogCaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    a = await rig.worker("a")
    side = rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    store = a.held["r1"].store

    async def lost(*args: Any) -> None:
        raise RedisConnectionError("Redis went away for longer than an append waits")
    monkeypatch.setattr(redis_store, "_OUTAGE_S", 0.2)
    store._append = lost
    with pytest.raises(RedisConnectionError):  # the SDK drops the batch after this: the copy lags for good
        await store.append(KEY, [assistant_entry("turn-1", 10)])
    assert store.lagging
    words = Intent(Op.INTERRUPT, text="wait")
    assert (await side.submit(words)).in_flight
    with caplog.at_level(logging.WARNING, logger="adapters.transport.redis_worker"):
        rig.engine("r1").turn_done()
        await until("the settler to give up on it", lambda: _logged_unsettled(caplog, words.iid))
    assert words.iid not in await rig.settled("r1")  # the next holder replays it against the stored session


async def _logged_unsettled(caplog: pytest.LogCaptureFixture, iid: str) -> bool:
    return any(iid in r.getMessage() and "left unsettled" in r.getMessage() for r in caplog.records)


async def test_a_replaced_holder_settles_nothing(rig: Rig) -> None:
    a = await rig.worker("a")
    side = rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    words = Intent(Op.INTERRUPT, text="wait")
    assert (await side.submit(words)).in_flight
    a._tasks[1].cancel()  # a goes silent and is taken for dead; its engine goes on
    await rig.worker("b")
    await until("b to take r1", lambda: _holder(rig, "r1", "b"))
    rig.engine("r1", 0).turn_done()  # a late settle from the replaced holder
    await until("a to let go", lambda: _not_held(a, "r1"))
    assert words.iid not in await rig.settled("r1")
    assert [i.iid for i in rig.engine("r1").applied] == [words.iid]  # the new holder has it


async def _not_held(w: RedisWorker, run_id: str) -> bool:
    return run_id not in w.held


async def test_words_for_a_run_that_has_just_ended_are_refused_not_kept_and_a_new_round_takes_them(rig: Rig) -> None:
    """The end and an intent race: the front may still follow the run when the holder's end is on file.
    What is logged after the end would be read by nobody, so it is refused with "the run has ended"
    (before the fix the person was told it waits for the next holder, and it was lost)."""
    await rig.worker("a")
    side = rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    rig.engine("r1").finish()

    async def ended() -> bool:
        return await rig.front.redis.hget(KEYS.run("r1"), "ended") == "1"
    await until("r1's end to be on file", ended)
    late = Intent(Op.INTERRUPT, text="too late")
    assert (await side.submit(late)).ended
    assert late.iid not in await rig.logged("r1")
    await until("the front to see the end", lambda: _ended(rig, "r1"))
    again = rig.launch("r1")  # the run continued in its thread: a new round on the same id
    await until("a to hold r1 again", lambda: _held(rig, "r1"))
    words = Intent(Op.SEND, text="round two")
    assert (await again.submit(words)).mail
    assert [i.iid for i in rig.engine("r1").applied] == [words.iid]


async def _ended(rig: Rig, run_id: str) -> bool:
    return bool(rig.sinks[run_id].ends)
