"""Fan-out cost: one run shown in 1, 3 and 10 places (its home thread plus mirrors).

The same synthetic stream as bench_hub (`stream()`, on its virtual-clock loop, Slack's limits in
every place) goes through one RunPipe whose outbox is a `Fanout` over N in-memory surfaces, each
thread with its own rate budget, as separate channels have. Printed per N: platform calls per 1,000
events in total and per place, the p50/p99 cost of one `on_event` call, and that cost per place.
The hub should cost the same per place: calls per place flat, on_event growing at most linearly.
Run: .venv/bin/python -m bench.bench_mirrors [N_EVENTS]   (default 10000)
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from adapters.hub.fanout import Fanout, Target
from adapters.hub.pipe import RunPipe
from adapters.memory_surface import MemorySurface
from adapters.outbox import Outbox
from adapters.platform import SLACK, ThreadRef
from adapters.ratelimit import RateBudget
from adapters.view import RunOutcome, RunView
from bench.bench_hub import Mix, check_loss, pct, run_sim, stream

PLACES = (1, 3, 10)


async def fan(n_events: int, places: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    surfaces = [MemorySurface(name=f"p{i}", limits=SLACK) for i in range(places)]
    targets = []
    for i, surface in enumerate(surfaces):
        thread = ThreadRef(surface.name, f"C{i}", "1700000000.000100")
        outbox = Outbox(surface, thread, clock=loop.time, budget=RateBudget(SLACK, loop.time))
        targets.append(Target(thread, outbox))
    fanout = Fanout(targets[0])
    for target in targets[1:]:
        fanout.add(target)
    view = RunView("rbench", "benchmark run", clock=loop.time, epoch="b")
    pipe = RunPipe(view, fanout)
    pipe.start()
    mix, costs = Mix(), []
    perf = time.perf_counter_ns
    for dt, ev in stream(n_events, mix=mix):
        await asyncio.sleep(dt)
        t0 = perf()
        pipe.on_event(ev)
        costs.append(perf() - t0)
    pipe.put(view.finish(RunOutcome("done", result="All done.", cost_usd=1.0, duration_s=1.0, steps=3)))
    await pipe.close()
    fed = sum(mix.counts.values())
    calls = [s.platform_calls for s in surfaces]
    lost = [p for s in surfaces for p in check_loss(s, mix)]
    return {"fed": fed, "calls": calls, "costs": costs, "lost": lost}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(f"one run's stream of {n} events shown in 1, 3 and 10 places (Slack limits in each, virtual clock)")
    print(f"{'places':>6} {'calls/1k ev':>12} {'per place':>10} {'on_event p50':>13} {'p99':>9} "
          f"{'p50/place':>10}  loss")
    for places in PLACES:
        r = run_sim(fan(n, places))
        total = sum(r["calls"]) * 1000 / r["fed"]
        p50, p99 = pct(r["costs"], 0.5), pct(r["costs"], 0.99)
        print(f"{places:>6} {total:>12.1f} {total / places:>10.1f} {p50:>11.1f}µs {p99:>7.1f}µs "
              f"{p50 / places:>8.1f}µs  {'none' if not r['lost'] else r['lost'][:2]}")
    print("calls per place stay flat; on_event grows with places only by the put into each outbox")


if __name__ == "__main__":
    main()
