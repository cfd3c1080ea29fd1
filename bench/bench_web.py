"""The web front end's event push: latency to 10 pages, the rate it keeps up with, the log's memory.

A real `WebFrontend` listens on 127.0.0.1; events enter exactly where a run's events do (the hub
tap, `on_event`), each stamped with `time.perf_counter()` (CLOCK_MONOTONIC: the same clock in every
process). Ten pages — aiohttp WebSocket clients on `/api/runs/{id}/ws`, in a child process so their
JSON parsing does not share the server's CPU time — note when each event's frame arrives.
Printed:
  1. push latency p50/p99 (tap -> frame received by each of 10 pages) at a steady 200 events/s;
  2. a ramp of offered rates: per rate, events delivered per second to every page, p50/p99 latency and
     whether any page fell behind the log's maxlen (a `dropped` frame) — "keeps up" = all delivered,
     none dropped, p99 under 1 s;
  3. RSS while 1,000,000 events go through one run's log (maxlen 2000): flat after the first 2000.
Run: .venv/bin/python -m bench.bench_web [N_MEMORY]   (default 1000000)
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp

from adapters.hub import Hub, HubSettings
from adapters.platform import ThreadRef
from adapters.state import MemoryStateStore, RunRecord
from adapters.web import WebFrontend
from flower_core import Event

RUN = "rbench01"
PAGES = 10
END = "__end__"


# ---- the pages (child process) --------------------------------------------------------------------
def _pages(url: str, n: int, conn: Connection) -> None:
    conn.send(asyncio.run(_pages_main(url, n, conn)))


async def _pages_main(url: str, n: int, conn: Connection) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as session:
        sockets = [await session.ws_connect(url, max_msg_size=0) for _ in range(n)]
        for ws in sockets:
            await ws.receive_json()  # the catch-up frame (nothing new yet)
        conn.send("ready")

        async def page(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
            lat: list[float] = []
            dropped = frames = 0
            while True:
                frame = await ws.receive_json()
                now = time.perf_counter()
                frames += 1
                dropped += bool(frame.get("dropped"))
                for e in frame["events"]:
                    if e["text"] == END:
                        await ws.close()
                        return {"lat": lat, "dropped": dropped, "frames": frames, "end": now}
                    lat.append(now - e["payload"]["t0"])

        return list(await asyncio.gather(*(page(ws) for ws in sockets)))


# ---- the server side ------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def event(i: int) -> Event:
    """A run's typical traffic: mostly tool calls and results, some prose."""
    t0 = time.perf_counter()
    if i % 3 == 0:
        return Event("tool_call", f"src/module_{i % 50}.py", tool="Read",
                     payload={"t0": t0, "id": f"toolu_{i}", "input": {"file_path": f"src/module_{i % 50}.py"}})
    if i % 3 == 1:
        return Event("tool_result", "x" * 300, payload={"t0": t0, "tool_use_id": f"toolu_{i}", "is_error": False})
    return Event("text", "The agent explains what it found in a sentence or two. " * 3,
                 payload={"t0": t0, "subagent": False, "context": 40_000 + i})


async def stage(front: WebFrontend, rate: float, seconds: float) -> dict[str, Any]:
    """Offer `rate` events/s for `seconds` to 10 connected pages; what they received."""
    log = front.events.get(RUN, create=True)
    assert log is not None
    url = f"{front.url}api/runs/{RUN}/ws?after={log.last}"
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_pages, args=(url, PAGES, there), daemon=True)
    child.start()
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, here.recv) == "ready"
    tick = 0.01
    per_tick = rate * tick
    sent, owed = 0, 0.0
    begin = time.perf_counter()
    while time.perf_counter() - begin < seconds:
        owed += per_tick
        while owed >= 1:
            front._tap(RUN, event(sent))  # exactly what the hub calls for every event
            sent += 1
            owed -= 1
        next_at = begin + (sent / rate if rate else 0)
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    offered_s = time.perf_counter() - begin
    front._tap(RUN, Event("text", END, payload={"t0": time.perf_counter()}))
    pages: list[dict[str, Any]] = await loop.run_in_executor(None, here.recv)
    await loop.run_in_executor(None, child.join)
    lat = [x for p in pages for x in p["lat"]]
    got = min(len(p["lat"]) for p in pages)
    last = max(p["end"] for p in pages)
    return {"offered": sent / offered_s, "sent": sent, "got": got, "delivered": got / max(1e-9, last - begin),
            "p50": pct(lat, 0.50), "p99": pct(lat, 0.99), "dropped": sum(p["dropped"] for p in pages),
            "frames": statistics.mean(p["frames"] for p in pages)}


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


async def main_async(n_memory: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        front = WebFrontend(port=0, say=lambda s: None)
        hub = Hub({"web": front.surface}, MemoryStateStore(), HubSettings(root=Path(tmp)))
        hub.store.save_run(RunRecord(RUN, ThreadRef("web", "page", "tbench"), "web", "bench", "running", tmp, tmp))
        front.attach(hub)
        await front.start()
        try:
            steady = await stage(front, 200, 3.0)
            print(f"push latency, tap -> frame at {PAGES} pages, steady 200 events/s ({steady['sent']} events): "
                  f"p50 {steady['p50'] * 1e3:.2f} ms  p99 {steady['p99'] * 1e3:.2f} ms  "
                  f"(dropped frames: {steady['dropped']})")
            print(f"\nramp ({PAGES} pages, 2 s per rate; keeps up = all delivered, nothing dropped, p99 < 1 s):")
            print(f"{'offered/s':>10} {'delivered/s':>12} {'p50 ms':>8} {'p99 ms':>8} {'frames/page':>12} "
                  f"{'dropped':>8}  keeps up")
            best = 0.0
            for rate in (1_000, 2_000, 5_000, 10_000, 20_000, 40_000):
                r = await stage(front, rate, 2.0)
                ok = r["got"] == r["sent"] and r["dropped"] == 0 and r["p99"] < 1.0
                best = max(best, r["offered"]) if ok else best
                print(f"{r['offered']:>10.0f} {r['delivered']:>12.0f} {r['p50'] * 1e3:>8.1f} {r['p99'] * 1e3:>8.1f} "
                      f"{r['frames']:>12.0f} {r['dropped']:>8}  {'yes' if ok else 'NO'}")
                if not ok:
                    break
            print(f"=> keeps up with about {best:,.0f} events/s to {PAGES} pages "
                  "(a busy real run emits tens per second)")
        finally:
            await front.stop()

        # Memory: one run's log over many events (no pages: the log itself).
        front = WebFrontend(say=lambda s: None)
        front.attach(Hub({"web": front.surface}, MemoryStateStore(), HubSettings(root=Path(tmp))))
        gc.collect()
        base = rss_mb()
        print(f"\nevent log memory over {n_memory:,} events (maxlen {front.events.maxlen}):")
        marks = {n_memory * k // 10 for k in range(1, 11)} | {2_000}
        t = time.perf_counter()
        for i in range(1, n_memory + 1):
            front._tap(RUN, event(i))
            if i in marks:
                gc.collect()
                print(f"  {i:>9,} events: RSS {rss_mb():7.1f} MB  (+{rss_mb() - base:5.1f} MB)")
        spent = time.perf_counter() - t
        log = front.events.get(RUN)
        assert log is not None
        print(f"  held: {len(log.items)} events ({sum(map(len, log.texts)) / 1e6:.1f} MB as JSON), "
              f"seq {log.after(0).first}..{log.last}; tap cost "
              f"{spent / n_memory * 1e6:.1f} µs/event ({n_memory / spent:,.0f} events/s into the log)")
        await front.stop()


def main() -> None:
    n_memory = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    asyncio.run(main_async(n_memory))


if __name__ == "__main__":
    main()
