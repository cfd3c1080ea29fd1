"""Event latency worker -> front over Redis, against the in-process direct call.

(a) Over Redis: a real RedisTransport front (this process) follows one run with a recording sink
    (`launch(..., attach=True)`); a publisher in a child process writes M events to the events
    stream the way RedisWorker does: `wire.event_fields` stamped when the event is queued, one
    ordered queue drained in pipelined MULTI batches of up to 200 XADDs. Twice: paced (RATE events/s)
    and as fast as possible (the queue then fills: latency includes waiting behind the burst).
    Latency is the front's `transport.latency` (dispatch time - the `at` stamp, per message);
    throughput is events/s through the front in the burst; the front's CPU per event is this
    process's user + sys over the burst (the publisher's is its own).
(b) In process: the same M events handed to the same sink by a direct `sink.on_event` call (what
    LocalTransport amounts to), stamped just before the call; its p50/p99 and the ratio.
The redis-server is tests/support/redis_support's: loopback, append-only with fsync always (every write
waits for the disk); `--fsync everysec` measures it with the AOF flushed once a second instead.
Run: .venv/bin/python -m bench.bench_redis_latency [M] [--rate N] [--fsync always|everysec]
     (default: M = 20000, rate 1000/s, fsync always)
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

from adapters.transport import wire
from adapters.transport.base import RunEnd
from adapters.transport.plan import RunPlan
from adapters.transport.redis_front import RedisTransport
from bench.redis_fleet import cpu_s, load, parse_result, parser, pct, result_line
from flower_core import Event
from tests.support.fleet_support import ROOT
from tests.support.redis_support import RedisServer

BATCH = 200  # RedisWorker's publisher sends at most this many messages per round trip
EVENTS_KEPT = 100_000  # the events stream's cap, as RedisWorker sets it
PREFIX = "lat"


def events(m: int) -> list[Event]:
    """A run's usual mix: prose, tool calls and their results, a status-ish system event."""
    prose = "I read the module and the tests; the parser splits on commas but the spec wants semicolons. " * 2
    kinds = itertools.cycle([
        Event("text", text=prose, payload={"subagent": False, "context": 41_000}),
        Event("tool_call", text="src/parser.py", tool="Read",
              payload={"id": "toolu_01", "input": {"file_path": "src/parser.py"}, "subagent": False}),
        Event("tool_result", text="def parse(line):\n    return line.split(',')\n" * 4,
              payload={"tool_use_id": "toolu_01", "is_error": False}),
        Event("system", text="status", payload={"subtype": "status", "context": 41_500}),
    ])
    return [next(kinds) for _ in range(m)]


class Recorder:
    """A RunSink that only counts (and stamps) what it is given."""

    def __init__(self, expect: int) -> None:
        self.expect, self.got = expect, 0
        self.received: list[float] = []  # perf_counter at each on_event (in-process path)
        self.first = self.last = 0.0  # time.time() of the first / last event (Redis path)
        self.done = asyncio.Event()

    def on_event(self, ev: Event) -> None:
        now = time.time()
        if not self.got:
            self.first = now
        self.last = now
        self.got += 1
        if self.got >= self.expect:
            self.done.set()

    def step_done(self, name: str) -> None:
        return None

    async def ended(self, end: RunEnd) -> None:
        return None

    def handed_over(self, holder: str, previous: str) -> None:
        return None


# ---- the publisher (a child process: a worker is another process) -------------------------------
async def publish(url: str, run_id: str, m: int, rate: float) -> dict[str, Any]:
    from adapters.transport.redis_conn import connect

    redis = connect(url)
    keys = wire.Keys(PREFIX)
    out: asyncio.Queue[dict[Any, Any]] = asyncio.Queue()  # redis-py types stream fields loosely

    async def sender() -> None:  # RedisWorker._publisher + _send, without the run-end bookkeeping
        while True:
            batch = [await out.get()]
            while not out.empty() and len(batch) < BATCH:
                batch.append(out.get_nowait())
            async with redis.pipeline(transaction=True) as pipe:
                for fields in batch:
                    pipe.xadd(keys.events, fields, maxlen=EVENTS_KEPT, approximate=True)
                await pipe.execute()
            for _ in batch:
                out.task_done()

    task = asyncio.create_task(sender())
    evs = events(m)
    loop = asyncio.get_running_loop()
    started, t0 = time.time(), loop.time()
    for i, ev in enumerate(evs):
        if rate > 0:
            wait = t0 + i / rate - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)  # the pace itself
        elif i % BATCH == 0:
            await asyncio.sleep(0)  # as fast as possible, but let the sender run as a worker's loop would
        out.put_nowait(wire.event_fields(run_id, 1, "bench-publisher", i + 1, ev))
    await out.join()
    finished = time.time()
    task.cancel()
    await redis.aclose()
    return {"started": started, "finished": finished}


async def over_redis(url: str, transport: RedisTransport, m: int, rate: float) -> dict[str, Any]:
    run_id = f"lat{'paced' if rate > 0 else 'burst'}{time.monotonic_ns() % 10**6}"
    sink = Recorder(m)
    transport.launch(run_id, RunPlan("latency", Path("/nonexistent"), Path("/nonexistent")), sink, attach=True)
    transport.latency = deque(maxlen=m + 100)
    c0 = cpu_s()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.bench_redis_latency", "--publish", url, run_id, str(m), str(rate),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await child.communicate()
    await asyncio.wait_for(sink.done.wait(), 120)
    cpu = cpu_s() - c0
    pub = parse_result(out.decode(errors="replace"))
    transport.runs.pop(run_id, None)
    return {"lat": list(transport.latency), "got": sink.got, "e2e_s": sink.last - pub["started"],
            "write_s": pub["finished"] - pub["started"], "cpu_s": cpu}


# ---- the in-process baseline --------------------------------------------------------------------
async def in_process(m: int) -> list[float]:
    sink = Recorder(m)
    sent: list[float] = []
    perf = time.perf_counter
    for i, ev in enumerate(events(m)):
        if i % BATCH == 0:
            await asyncio.sleep(0)
        sent.append(perf())
        sink.on_event(ev)
        sink.received.append(perf())
    return [r - s for s, r in zip(sent, sink.received, strict=True)]


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs" if seconds < 1e-3 else f"{seconds * 1000:,.2f} ms"


async def run(m: int, rate: float, fsync: str) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-redis-latency-") as name:
        server = RedisServer(Path(name) / "redis").start()
        transport = RedisTransport(server.url, prefix=PREFIX)
        try:
            if fsync != "always":
                await transport_config(server.url, fsync)
            await transport.start()
            print(f"redis-server on 127.0.0.1, appendonly yes, appendfsync {fsync}; redis-py parser: {parser()}; "
                  f"{m} events per pass", flush=True)
            paced = await over_redis(server.url, transport, m, rate)
            burst = await over_redis(server.url, transport, m, 0.0)
            gaps = transport.gaps
        finally:
            await transport.close()
            server.cleanup()
    local = await in_process(m)
    print(f"\n(a) over Redis, worker process -> front dispatch (RedisTransport.latency), gaps {gaps}:")
    for label, r in ((f"paced {rate:g}/s", paced), ("burst      ", burst)):
        lat = r["lat"]
        print(f"  {label}: p50 {us(pct(lat, 0.5))}, p99 {us(pct(lat, 0.99))}, max {us(max(lat))} "
              f"({r['got']} events received, {len(lat)} timed)")
    print(f"  burst throughput: {burst['got'] / burst['e2e_s']:,.0f} events/s through the front "
          f"(publisher wrote them at {m / burst['write_s']:,.0f}/s); front CPU "
          f"{burst['cpu_s'] / burst['got'] * 1e6:.1f} µs per event")
    print(f"  paced: front CPU {paced['cpu_s'] / paced['got'] * 1e6:.1f} µs per event")
    print("(b) in process, direct sink.on_event:")
    print(f"  p50 {us(pct(local, 0.5))}, p99 {us(pct(local, 0.99))}, max {us(max(local))}")
    for label, r in ((f"paced {rate:g}/s", paced), ("burst", burst)):
        print(f"  ratio Redis / in-process ({label}): p50 {pct(r['lat'], 0.5) / pct(local, 0.5):,.0f}x, "
              f"p99 {pct(r['lat'], 0.99) / pct(local, 0.99):,.0f}x")
    print(f"at the end: {load()}")
    print(f"command: .venv/bin/python -m bench.bench_redis_latency {m} --rate {rate:g} --fsync {fsync}")


async def transport_config(url: str, fsync: str) -> None:
    from adapters.transport.redis_conn import connect

    r = connect(url)
    try:
        await r.config_set("appendfsync", fsync)
    finally:
        await r.aclose()


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--publish"]:
        url, run_id, m, rate = args[1], args[2], int(args[3]), float(args[4])
        print(result_line(asyncio.run(publish(url, run_id, m, rate))))
        return
    rate, fsync = 1000.0, "always"
    if "--rate" in args:
        i = args.index("--rate")
        rate = float(args[i + 1])
        del args[i:i + 2]
    if "--fsync" in args:
        i = args.index("--fsync")
        fsync = args[i + 1]
        del args[i:i + 2]
    if fsync not in ("always", "everysec"):
        raise SystemExit("--fsync: always or everysec")
    asyncio.run(run(int(args[0]) if args else 20_000, rate, fsync))


if __name__ == "__main__":
    main()
