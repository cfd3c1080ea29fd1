"""A front restarted while its runs end: the end of a run is never lost between two fronts.

The front acks an end message as soon as it has handed it to its hub, which books it a moment later (after
the run's last cards and the workspace scan). A front SIGKILLed in between leaves a run nobody holds and
its record still "running": the next front follows it again and must learn it ended. The end script keeps
the end in the run hash for that; when the end message is still in the events stream the reader delivers
it, once. Real redis-server, RedisWorkers and engine doubles in this process (as test_redis_intents.py)."""

from __future__ import annotations

from adapters.transport.plan import RunPlan
from adapters.transport.redis_front import RedisTransport
from tests.transport.test_redis_intents import KEYS, Rig, Sink, _held, rig, until

__all__ = ["rig"]  # the fixture, shared with test_redis_intents.py


async def _follow_again(rig: Rig, run_id: str) -> tuple[RedisTransport, Sink]:
    """A new front process (same consumer name) follows the run again, as the hub does at start."""
    front = RedisTransport(rig.server.url, reply_timeout_s=5.0)
    await front.start()
    sink = Sink()
    plan = RunPlan("pick a style", workspace=rig.tmp / run_id, run_dir=rig.tmp / run_id / "runs")
    front.launch(run_id, plan, sink, attach=True)
    return front, sink


async def _ended_on_file(rig: Rig, run_id: str) -> bool:
    return await rig.front.redis.hget(KEYS.run(run_id), "ended") == "1"


async def test_a_run_whose_end_the_dead_front_had_acked_ends_on_the_next_front(rig: Rig) -> None:
    await rig.worker("a")
    rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    rig.engine("r1").finish()
    await until("the old front to read the end", lambda: _async(bool(rig.sinks["r1"].ends)))
    await until("the end message to be acked and deleted", lambda: _stream_empty(rig))
    front, sink = await _follow_again(rig, "r1")  # (its hub never booked that end)
    try:
        await until("the new front to pass the kept end on", lambda: _async(bool(sink.ends)))
        assert [e.state for e in sink.ends] == ["done"]
    finally:
        await front.close()


async def test_an_end_still_in_the_stream_reaches_the_next_front_once(rig: Rig) -> None:
    await rig.worker("a")
    rig.launch("r1")
    await until("a to hold r1", lambda: _held(rig, "r1"))
    await rig.front.close()  # the old front is gone before the end: the message stays in the stream
    rig.engine("r1").finish()
    await until("r1's end to be on file", lambda: _ended_on_file(rig, "r1"))
    front, sink = await _follow_again(rig, "r1")
    try:
        await until("the new front to read the end", lambda: _async(bool(sink.ends)))
        await until("the new front's reader to have acked it", lambda: _stream_empty(rig, front))
        assert [e.state for e in sink.ends] == ["done"]
    finally:
        await front.close()
        rig.front = RedisTransport(rig.server.url)  # closed already: the rig's close must not touch it
        await rig.front.start()


async def _async(value: bool) -> bool:
    return value


async def _stream_empty(rig: Rig, front: RedisTransport | None = None) -> bool:
    return await (front or rig.front).redis.xlen(KEYS.events) == 0
