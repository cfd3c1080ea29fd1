"""What keeping the runs' event logs on disk costs: events/s into the web front end's log, in memory only
and with the bot's state store (SQLite, `<root>/bot-state.db`), measured in the same run.

Events enter where a run's do (`WebFrontend._tap`, the hub tap), in bursts of BURST with a turn of the
loop between bursts (the loop is where the batched writes run). Three ways, each repeated ROUNDS times
in turn (memory, store, store + reader, memory, …) and the best round kept, so the machine's noise hits
all three alike:
  memory          no store (how it was before);
  store           writes batched by the loop's timer, at most FLUSH_S after an event (nobody reading);
  store + reader  a reader served after every burst (what an open WebSocket or a poll causes: what is
                  served is written first), so every event is written, one transaction per burst.
Printed: events/s for each, and the ratio store / memory. The rows on disk stay at the log's bound.
Run: .venv/bin/python -m bench.bench_event_log [N]   (default 200000 events per round)
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from adapters.state import SQLiteStateStore
from adapters.web import WebFrontend
from adapters.web.events import FLUSH_S
from bench.bench_web import event

RUN = "rbench02"
BURST = 20
ROUNDS = 3


async def one_round(root: Path, n: int, *, store: bool, reader: bool) -> float:
    """Events/s for `n` events through a fresh front end (a fresh database file when `store`)."""
    front = WebFrontend(say=lambda s: None)
    kept = SQLiteStateStore(root / "bot-state.db") if store else None
    if kept is not None:
        front.keep_events_in(kept)
    evs = [event(i) for i in range(n)]  # built beforehand: only the log's own cost is timed
    t = time.perf_counter()
    for start in range(0, n, BURST):
        for ev in evs[start:start + BURST]:
            front._tap(RUN, ev)
        if reader:
            front.events.flush()  # exactly what serving a reader does first
        await asyncio.sleep(0)  # a turn of the loop: the flush timer runs when due
    front.events.close()  # the last write, as at a clean stop
    spent = time.perf_counter() - t
    await front.stop()
    if kept is not None:
        kept.close()
        db = sqlite3.connect(root / "bot-state.db")
        rows = db.execute("SELECT COUNT(*) FROM events WHERE run_id=?", (RUN,)).fetchone()[0]
        db.close()
        assert rows == front.events.maxlen, rows  # the bound holds on disk
        (root / "bot-state.db").unlink()
    return n / spent


async def main_async(n: int) -> None:
    ways = {"memory": {"store": False, "reader": False}, "store": {"store": True, "reader": False},
            "store + reader": {"store": True, "reader": True}}
    best = dict.fromkeys(ways, 0.0)
    with tempfile.TemporaryDirectory(prefix="bench-events-") as tmp:
        for _ in range(ROUNDS):
            for name, how in ways.items():
                best[name] = max(best[name], await one_round(Path(tmp), n, **how))
    print(f"event log appends, {n:,} events per round, bursts of {BURST}, best of {ROUNDS} "
          f"(flush at most {FLUSH_S * 1000:.0f} ms after an event):")
    for name, rate in best.items():
        ratio = "" if name == "memory" else f"   {rate / best['memory']:.2f}x memory"
        print(f"  {name:<15} {rate:>11,.0f} events/s{ratio}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    asyncio.run(main_async(n))


if __name__ == "__main__":
    main()
