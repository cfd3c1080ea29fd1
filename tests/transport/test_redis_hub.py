"""The hub over RedisTransport with RedisWorkers in this process (real redis-server, real SDK + CLI on
the model double): a front restart follows runs again where they are; a worker takes runs up to its
own limit and the front's status names the worker; a worker stopped with SIGTERM hands its runs to
another at once; a duplicated intent is applied once."""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import SQLiteStateStore
from adapters.transport import wire
from adapters.transport.engine import EngineKit
from adapters.transport.intents import Intent, Op
from adapters.transport.redis_front import RedisTransport
from adapters.transport.redis_worker import RedisWorker
from flower_core import RedisSessionStore
from flower_core.devmodel import ModelDouble, parse_scenario
from tests.support.drive import drive
from tests.support.hub_support import QUICK, THREAD, TWO_QUESTIONS_SCENARIO, Watch, button, hub_of, one_step_flow
from tests.support.redis_support import RedisServer
from tests.support.runtime_support import FAST

pytestmark = pytest.mark.slow


class Rig:
    """A front hub (RedisTransport) and workers, all on one Redis and one model double."""

    def __init__(self, tmp: Path, url: str, md: ModelDouble, cli_home: Path) -> None:
        self.tmp, self.url, self.md, self.cli_home = tmp, url, md, cli_home
        self.prefix = f"t{uuid.uuid4().hex[:6]}"
        self.store = RedisSessionStore(url, prefix=f"{self.prefix}:ss")
        self.state = SQLiteStateStore(tmp / "state.db")
        self.workers: list[RedisWorker] = []
        self.hubs: list[Hub] = []

    async def front(self, surface: MemorySurface | None = None) -> tuple[Hub, MemorySurface, Watch]:
        """An opened front hub on `surface` (a new one unless given: a restarted front keeps the platform's)."""
        surface = surface or MemorySurface()
        hub = hub_of(surface, self.state, root=self.tmp / "runs", view=QUICK,
                  transport=RedisTransport(self.url, prefix=self.prefix, reply_timeout_s=5.0))
        self.hubs.append(hub)
        await hub.open()
        return hub, surface, Watch(surface)

    async def worker(self, name: str, *, max_runs: int = 3, park_after_s: float | None = None) -> RedisWorker:
        kit = EngineKit(factory=one_step_flow(), env=self.md.env(self.cli_home), park_after_s=park_after_s,
                        runtime_options={"resilience": FAST, "session_store": self.store})
        w = RedisWorker(self.url, kit, name=name, max_runs=max_runs, prefix=self.prefix, heartbeat_s=0.2,
                        dead_after_s=1.0)
        await w.start()
        self.workers.append(w)
        return w

    async def close(self) -> None:
        for hub in self.hubs:
            await hub.close()
        for w in self.workers:
            if not w._stopping:
                await w.stop()
        self.store.close()


@pytest.fixture
async def rig(tmp_path: Path, redis_server: RedisServer, double_factory: Any, cli_home: Path) -> AsyncIterator[Rig]:
    md = await double_factory(parse_scenario(tomllib.loads(TWO_QUESTIONS_SCENARIO), name="two-questions"))
    r = Rig(tmp_path, redis_server.url, md, cli_home)
    try:
        yield r
    finally:
        await r.close()


async def test_a_front_restart_follows_the_run_again_where_it_is(rig: Rig) -> None:
    await rig.worker("w1")
    hub, surface, watch = await rig.front()
    run = (await drive(hub).start("pick a style", THREAD, "alice")).run_id
    card = await watch.card("ask:1-q1")
    assert hub.query.holder(run) == "w1" and "on worker w1" in hub.query.status(run_id=run).message
    await hub.close()  # the front goes away; the run does not
    assert rig.workers[0].held and rig.state.get_run(run).status == "waiting"  # type: ignore[union-attr]

    again, _, watch = await rig.front(surface)
    assert await again.recover() == []  # nothing died
    live = again.live[run]
    await watch.until(lambda s: live.view.open_card("1-q1") is not None)  # the worker said where it is
    result = await drive(again).handle_action(button(card, "spaces"), "alice", delivery_id="d1")
    assert result.ok, result.message
    await watch.card("ask:1-q2")
    assert any("Got spaces. One more." in p.msg.text for p in surface.find("", THREAD))
    assert not [n for n in surface.notices if "restarted" in str(n)]


async def test_workers_take_runs_up_to_their_limit(rig: Rig) -> None:
    await rig.worker("small", max_runs=1)
    hub, _, watch = await rig.front()
    threads = [ThreadRef("memory", "C1", f"t{i}") for i in range(2)]
    first = (await drive(hub).start("one", threads[0], "alice")).run_id
    second = (await drive(hub).start("two", threads[1], "alice")).run_id
    await watch.card("ask:1-q1")
    holders = sorted([hub.query.holder(first), hub.query.holder(second)])
    assert holders == ["", "small"], holders  # one is queued: the small worker is full
    queued = first if hub.query.holder(first) == "" else second
    queued_thread = threads[0] if queued == first else threads[1]
    await watch.until(lambda s: any("Every worker is busy" in p.msg.text for p in s.find("", queued_thread)))
    await rig.worker("big", max_runs=2)
    await watch.until(lambda s: hub.query.holder(queued) == "big")
    assert "on worker small" in hub.query.status().message and "on worker big" in hub.query.status().message
    assert len(rig.workers[0].held) == 1


async def test_a_stopped_worker_hands_its_runs_over_at_once(rig: Rig) -> None:
    leaving = await rig.worker("leaving", park_after_s=0.0)
    hub, surface, watch = await rig.front()
    run = (await drive(hub).start("pick a style", THREAD, "alice")).run_id
    card = await watch.card("ask:1-q1")
    await watch.until(lambda s: hub.live[run].parked)
    await rig.worker("staying")
    await leaving.stop()
    await watch.until(lambda s: hub.query.holder(run) == "staying", timeout=30)
    notes = [p.msg.text for p in surface.find("", THREAD) if "took the run over" in p.msg.text]
    assert notes and "staying" in notes[0]
    live = hub.live[run]
    await watch.until(lambda s: live.view.open_card("1-q1") is not None)
    assert (await drive(hub).handle_action(button(card, "tabs"), "alice", delivery_id="d2")).ok
    await watch.until(lambda s: any("Dark or light?" in p.msg.text and p.msg.buttons  # asked by the new holder
                                    for p in s.find("ask:", THREAD)))
    assert any("Got tabs. One more." in p.msg.text for p in surface.find("", THREAD))


async def test_a_duplicated_intent_is_applied_once(rig: Rig, redis_server: RedisServer) -> None:
    await rig.worker("w1")
    hub, _, watch = await rig.front()
    run = (await drive(hub).start("pick a style", THREAD, "alice")).run_id
    await watch.card("ask:1-q1")
    transport = hub.transport
    assert isinstance(transport, RedisTransport)
    fields = wire.intent_entry(Intent(Op.SEND, text="only once please", iid="same-iid"), reply=False)
    for _ in range(2):  # what a client retry after a lost reply looks like
        await transport.redis.xadd(transport.keys.intents(run), fields)
    assert (await drive(hub).send(run, "after the retry", "alice")).ok  # intents apply in order: this one comes last
    engine = rig.workers[0].held[run].engine
    assert engine is not None and engine.channel is not None
    channel = engine.channel
    await watch.until(lambda s: "after the retry" in [m.text for m in channel.pending_mail()])
    assert [m.text for m in channel.pending_mail()] == ["only once please", "after the retry"]
