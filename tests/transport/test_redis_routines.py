"""Routines in scale-out: the front (RedisTransport) fires them, a RedisWorker in this process takes the runs
as any other (real redis-server, real SDK + CLI on the model double). A front that went away with an
occurrence recorded and not started starts it once when it comes back; one whose run had started does not
start it again."""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import AddRoutine, Hub, Stop
from adapters.memory_surface import MemorySurface
from adapters.platform import OutMessage, ThreadRef
from adapters.state import Occurrence, SQLiteStateStore
from adapters.transport.engine import EngineKit
from adapters.transport.redis_front import RedisTransport
from adapters.transport.redis_worker import RedisWorker
from flower_core import RedisSessionStore
from flower_core.devmodel import ModelDouble, parse_scenario
from tests.hub.test_schedule import at
from tests.support.hub_support import QUICK, TWO_QUESTIONS_SCENARIO, Watch, hub_of, one_step_flow
from tests.support.redis_support import RedisServer
from tests.support.runtime_support import FAST

pytestmark = pytest.mark.slow

PLACE = ThreadRef("memory", "C1")
FRIDAY, MONDAY_NINE = at(2026, 12, 4, 22, 15), at(2026, 12, 7, 9, 0)


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Rig:
    def __init__(self, tmp: Path, url: str, md: ModelDouble, cli_home: Path) -> None:
        self.tmp, self.url, self.md, self.cli_home = tmp, url, md, cli_home
        self.prefix = f"t{uuid.uuid4().hex[:6]}"
        self.sessions = RedisSessionStore(url, prefix=f"{self.prefix}:ss")
        self.state = SQLiteStateStore(tmp / "state.db")
        self.clock = Clock(FRIDAY)
        self.opened: list[ThreadRef] = []
        self.hubs: list[Hub] = []
        self.workers: list[RedisWorker] = []

    async def front(self) -> tuple[Hub, Watch]:
        surface = MemorySurface()
        hub = hub_of(surface, self.state, root=self.tmp / "runs", view=QUICK, timezone="Europe/Berlin",
                     transport=RedisTransport(self.url, prefix=self.prefix, reply_timeout_s=5.0),
                     wall_clock=self.clock)

        async def opener(channel: str, card: OutMessage) -> ThreadRef:
            self.opened.append(ThreadRef("memory", channel, f"root{len(self.opened) + 1}"))
            return self.opened[-1]

        hub.hooks.open_threads("memory", opener)
        self.hubs.append(hub)
        await hub.open()
        await hub.recover()
        return hub, Watch(surface)

    async def worker(self, name: str) -> RedisWorker:
        kit = EngineKit(factory=one_step_flow(), env=self.md.env(self.cli_home),
                        runtime_options={"resilience": FAST, "session_store": self.sessions})
        w = RedisWorker(self.url, kit, name=name, max_runs=3, prefix=self.prefix, heartbeat_s=0.2, dead_after_s=1.0)
        await w.start()
        self.workers.append(w)
        return w

    async def close(self) -> None:
        for hub in self.hubs:
            await hub.close()
        for w in self.workers:
            if not w._stopping:
                await w.stop()
        self.sessions.close()
        self.state.close()


@pytest.fixture
async def rig(tmp_path: Path, redis_server: RedisServer, double_factory: Any, cli_home: Path) -> AsyncIterator[Rig]:
    md = await double_factory(parse_scenario(tomllib.loads(TWO_QUESTIONS_SCENARIO), name="two-questions"))
    r = Rig(tmp_path, redis_server.url, md, cli_home)
    try:
        yield r
    finally:
        await r.close()


async def test_the_front_fires_a_worker_runs_and_a_restarted_front_starts_a_recorded_occurrence_once(
        rig: Rig) -> None:
    await rig.worker("w1")
    hub, watch = await rig.front()
    made = await hub.submit(AddRoutine("pick a style", "every weekday at 9:00", name="Style"), "alice", where=PLACE)
    assert made.ok, made.message
    rid = made.routine_id

    rig.clock.t = MONDAY_NINE
    await hub.scheduler.tick()
    [first] = [r.run_id for r in rig.state.list_runs()]
    await watch.card("ask:1-q1")  # the run asks: a worker holds it
    assert hub.query.holder(first) == "w1" and rig.state.get_run(first).origin == "⏰ Style, 09:00"  # type: ignore[union-attr]

    stopped = await hub.submit(Stop(first), "alice")
    assert stopped.ok, stopped.message
    await hub.query.wait(first)

    # The front goes away right after recording Tuesday's occurrence, before its run started.
    tuesday = at(2026, 12, 8, 9, 0)
    rig.clock.t = tuesday
    assert rig.state.record_occurrence(Occurrence(rid, tuesday, "rtuesday1"), at(2026, 12, 9, 9, 0))
    await hub.close()

    again, watch = await rig.front()  # recover, then the scheduler's first look
    await again.scheduler.tick()
    await again.scheduler.tick()
    assert sorted(r.run_id for r in rig.state.list_runs()) == sorted([first, "rtuesday1"])  # started once
    await watch.card("ask:1-q1")
    assert again.query.holder("rtuesday1") == "w1"  # a worker took it, as any other run
    info = again.query.routine(rid)
    assert info is not None
    assert [(o.run_id, o.state) for o in info.last] == [("rtuesday1", "started"), (first, "started")]
    assert info.next == "2026-12-09T09:00:00+01:00"
