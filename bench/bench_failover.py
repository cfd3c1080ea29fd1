"""Failover time: how long a run is without a worker after its worker is SIGKILLed mid-question.

Two `flower-worker` processes (--heartbeat 0.3 --dead-after 2, default --park-after 120 so the
question waits with its CLI up) on a real redis-server (127.0.0.1, append-only, fsync always); the
front is this process (Hub + RedisTransport, memory surface). K times: start a run, wait for its
question card and until the session transcript in Redis holds the question (what the successor
resumes from), then SIGKILL the holder's process group (the worker and its CLI) and measure
  (a) kill -> the front sees the takeover (`hub.query.holder(run)` names the other worker);
  (b) kill -> the question is open again on the successor's card (`open_card(card)` on the new LiveRun).
Then answer it (the run ends) and start a fresh worker in place of the killed one. Printed:
p50/p95/max of (a) and (b), and the worker -> front message latency over all these real runs.
The floor is dead_after (the holder has been silent that long on Redis's clock) minus up to one
heartbeat (its last beat came before the kill), plus up to one heartbeat (claims are polled); the
target is a p95 of at most dead_after + 1 s on a loaded 2-core machine.
Run: .venv/bin/python -m bench.bench_failover [K]   (default K = 20)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from adapters.transport.redis_front import RedisTransport
from bench.redis_fleet import QUESTION, Front, WorkerProc, Workers, load, parser, pct
from flower_core import RedisSessionStore
from tests.support.redis_support import RedisServer

HEARTBEAT_S, DEAD_AFTER_S = 0.3, 2.0
POLL_S = 0.005  # how finely the two moments are watched (a takeover is no event the hub emits)


async def transcript_holds(store: RedisSessionStore, needles: tuple[str, ...], timeout: float = 60.0) -> None:
    """Wait until one stored session holds every needle (the CLI mirrors its transcript to the store a
    moment after the model's turn; a kill before that leaves nothing for the successor to resume)."""
    async def poll() -> None:
        while True:
            for project in store.projects():
                for listed in await store.list_sessions(project):
                    key: Any = {"project_key": project, "session_id": listed["session_id"]}
                    text = json.dumps(await store.load(key) or [], ensure_ascii=False)
                    if all(n in text for n in needles):
                        return
            await asyncio.sleep(0.05)  # polling a store, bounded by the timeout: it has no change feed
    await asyncio.wait_for(poll(), timeout)


async def moment(pred: Any, t0: float, timeout: float = 60.0) -> float:
    """Seconds from t0 until pred() holds, watched every POLL_S."""
    deadline = time.perf_counter() + timeout
    while not pred():
        if time.perf_counter() > deadline:
            raise RuntimeError("timed out")
        await asyncio.sleep(POLL_S)
    return time.perf_counter() - t0


class Failover:
    def __init__(self, tmp: Path, server: RedisServer) -> None:
        self.workers = Workers(tmp, server.url, heartbeat_s=HEARTBEAT_S, dead_after_s=DEAD_AFTER_S)
        self.transport = RedisTransport(server.url, prefix=self.workers.prefix)
        self.front = Front(tmp, transport=self.transport)
        self.store = RedisSessionStore(server.url, prefix=f"{self.workers.prefix}:ss")  # what the workers use
        self.made = 0
        self.dead: list[WorkerProc] = []

    async def new_worker(self) -> WorkerProc:
        self.made += 1
        return await self.workers.start(f"w{self.made}")

    async def once(self, k: int) -> tuple[float, float]:
        hub, token = self.front.hub, f"failover-{k}-{uuid.uuid4().hex[:8]}"
        run = await self.front.start(f"pick a style ({token})")
        card = await self.front.until("the question card", lambda: self.front.open_card(run), timeout=120)
        first = hub.live[run]
        holder = hub.query.holder(run)
        await transcript_holds(self.store, (token, QUESTION))
        victim = self.workers.procs.pop(holder)
        t0 = time.perf_counter()
        victim.kill()
        took_over = await moment(lambda: hub.query.holder(run) not in ("", holder), t0)
        reopened = await moment(lambda: (live := hub.live.get(run)) is not None and live is not first
                                and live.view.open_card(card) is not None, t0)
        self.dead.append(victim)
        # answer it (the run ends on its new worker) while a fresh worker takes the killed one's place
        await asyncio.gather(self.front.answer_and_end(run, card), self.new_worker())
        return took_over, reopened

    async def close(self) -> None:
        await self.front.close()
        await self.workers.stop()
        await asyncio.gather(*(p.stop() for p in self.dead))
        self.store.close()


def line(name: str, values: list[float]) -> str:
    return (f"  {name}: p50 {statistics.median(values):.2f} s, p95 {pct(values, 0.95):.2f} s, "
            f"max {max(values):.2f} s, min {min(values):.2f} s")


async def run(k: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-failover-") as name:
        server = RedisServer(Path(name) / "redis").start()
        f = Failover(Path(name), server)
        try:
            await asyncio.gather(f.new_worker(), f.new_worker())
            print(f"2 workers: {f.workers.command('wN')}")
            print(f"settings: heartbeat {HEARTBEAT_S:g} s, dead after {DEAD_AFTER_S:g} s; the question waits with "
                  f"its CLI up (park after 120 s); redis appendfsync always; redis-py parser: {parser()}", flush=True)
            await f.front.hub.open()
            takeovers, reopens = [], []
            for i in range(k):
                a, b = await f.once(i)
                takeovers.append(a)
                reopens.append(b)
                print(f"  kill {i + 1:>2}/{k}: takeover seen {a:.2f} s, question open again {b:.2f} s", flush=True)
            lat = list(f.transport.latency)
        except BaseException:
            for proc in [*f.workers.procs.values(), *f.dead]:
                print(f"--- {proc.name}\n{proc.tail()}", file=sys.stderr)
            raise
        finally:
            await f.close()
            server.cleanup()
    print(f"\nfailover over {k} SIGKILLs of the holder (worker + its CLI), heartbeat {HEARTBEAT_S:g} s, "
          f"dead after {DEAD_AFTER_S:g} s:")
    print(line("(a) kill -> front sees the takeover        ", takeovers))
    print(line("(b) kill -> question open again on its card", reopens))
    target = DEAD_AFTER_S + 1.0
    print(f"  target: p95 of (a) <= dead after + 1 s = {target:g} s: "
          f"{'met' if pct(takeovers, 0.95) <= target else 'NOT met'}")
    if lat:
        print(f"worker -> front message latency over these real runs: p50 {pct(lat, 0.5) * 1000:.1f} ms, "
              f"p99 {pct(lat, 0.99) * 1000:.1f} ms ({len(lat)} messages, {f.transport.gaps} gaps)")
    print(f"at the end: {load()}")
    print(f"command: .venv/bin/python -m bench.bench_failover {k}")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    asyncio.run(run(int(args[0]) if args else 20))


if __name__ == "__main__":
    main()
