"""The hub's view + outbox on a simulated clock: platform calls, on_event cost, memory.

A recorded-style stream (seeded, synthetic, shaped like a coordinator-with-workers run: mostly
subagent tool calls/results, some main-thread prose and thinking, steps, asks, mail, a handoff,
retries) is fed through `RunPipe` (RunView -> Outbox -> MemorySurface with Slack's limits) on an
event loop whose clock is virtual, so hours of run pass in seconds and every rate limit is honoured
exactly. Printed:
  1. platform calls per 1,000 events vs a naive one-post-per-event renderer fed the same stream,
     and a loss check (every main-thread prose line, every ask outcome and the summary arrive);
  2. the p50/p99 cost of one on_event call in µs vs a no-op sink;
  3. RSS growth while 1,000,000 events go through one pipe (target: flat, <= 10 MB).
Run: .venv/bin/python -m bench.bench_hub [N_EVENTS] [N_RSS]   (defaults 10000 and 1000000)
"""

from __future__ import annotations

import asyncio
import gc
import random
import resource
import selectors
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from adapters.hub.fanout import Fanout, Target
from adapters.hub.pipe import RunPipe
from adapters.memory_surface import MemorySurface
from adapters.outbox import Outbox
from adapters.platform import SLACK, OutMessage, ThreadRef
from adapters.view import RunOutcome, RunView
from flower_core import Event

THREAD = ThreadRef("slack", "C1", "1700000000.000100")


# ---- a loop with a virtual clock ------------------------------------------------------------------
class _SimSelector(selectors.BaseSelector):
    """Never sleeps: a select() that would wait `timeout` seconds advances the virtual clock instead."""

    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self.now = 0.0

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # nothing scheduled at all: only real I/O could wake us
            return self._real.select(None)
        self.now += max(0.0, timeout)
        return self._real.select(0)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()


class SimLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._sim = _SimSelector()
        super().__init__(self._sim)

    def time(self) -> float:
        return self._sim.now


def run_sim(coro: Any) -> Any:
    loop = SimLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


# ---- the stream -----------------------------------------------------------------------------------
@dataclass
class Mix:
    counts: dict[str, int] = field(default_factory=dict)
    prose: list[str] = field(default_factory=list)  # main-thread text, in order
    asks: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, ev: Event) -> None:
        k: str = ev.kind if ev.kind != "text" or not ev.payload.get("subagent") else "text(subagent)"
        if ev.kind == "text" and not ev.payload.get("subagent"):
            k = "text(main)"
        self.counts[k] = self.counts.get(k, 0) + 1


def stream(n: int, seed: int = 7, mix: Mix | None = None, pace: float = 1.0) -> Iterator[tuple[float, Event]]:
    """(seconds since the previous event, event) pairs; deterministic for a seed.

    Turn-shaped: a model turn takes a few seconds to generate, then lands at once (thinking, maybe
    text, 1-4 parallel tool calls); tool results follow in milliseconds to seconds. Workers
    (subagents) take most turns; the coordinator's turns carry the main-thread prose. `pace`
    scales every gap (2.0 = a run twice as slow).
    """
    rnd = random.Random(seed)
    ctx = 30_000
    made = 0
    q = m = 0
    tools = [("Read", "src/app/module.py"), ("Grep", "def handler"), ("Bash", "pytest -q tests/test_app.py"),
             ("Edit", "src/app/module.py"), ("Glob", "src/**/*.py"), ("Write", "notes/progress.md")]

    def ev(kind_: str, text: str = "", tool: str = "", **p: Any) -> Event:
        e = Event(kind_, text, tool=tool, payload=p)  # type: ignore[arg-type]
        if mix is not None:
            mix.add(e)
        return e

    steps = [("clarify", 0.03), ("goal", 0.03), ("work", 0.94)]
    for index, (name, share) in enumerate(steps, start=1):
        yield 0.5 * pace, ev("step", name, index=index, total=3, resumed=False, woke=False, wake=1)
        made += 1
        end = made + int(n * share)
        while made < min(end, n - 8):
            r = rnd.random()
            gap = rnd.uniform(0.5, 2.5) * pace  # turns of 2-3 workers in parallel overlap
            if name == "clarify" and r < 0.15:
                q += 1
                qid = f"q{q}"
                yield gap, ev("ask", f"Question {q}: which option?", id=qid, options=["a", "b"], state="asked",
                              remaining=-1)
                yield rnd.uniform(20, 120) * pace, ev("ask", f"Question {q}: which option?", id=qid,
                                                      options=["a", "b"], state="answered", answer="a",
                                                      remaining=-1)
                if mix is not None:
                    mix.asks.append(qid)
                made += 2
                continue
            if r < 0.004:
                m += 1
                for state in ("queued", "delivered"):
                    yield rnd.uniform(5, 60) * pace, ev("ask", f"also check {m}", kind="mail", state=state,
                                                        id=f"m{m}", amended=True)
                made += 2
                continue
            if r < 0.006:
                yield gap, ev("error", "API Error: 529 overloaded", synthetic=True)
                yield rnd.uniform(4, 16) * pace, ev("retry", "transient fault, resuming", step=name, attempt=2)
                made += 2
                continue
            if r < 0.007 and name == "work":
                for phase in ("near", "writing", "done"):
                    yield rnd.uniform(2, 15) * pace, ev("handoff", phase, phase=phase, step=name, context=ctx,
                                                        window=200_000, path="notes/handoff-work.md",
                                                        degraded=False)
                ctx = 35_000
                made += 3
                continue
            main = r > 0.80  # the coordinator's turn; the rest are workers'
            ctx += rnd.randint(300, 1500) if main else 0
            p: dict[str, Any] = {"subagent": not main, "context": ctx}
            if rnd.random() < 0.5:
                yield gap, ev("thinking", "weighing options", **p)
                gap, made = 0.01, made + 1
            if rnd.random() < (0.45 if main else 0.25):
                text = f"[{made}] {'Coordinator' if main else 'worker'}: next piece, checking the last report."
                if main and mix is not None:
                    mix.prose.append(text)
                yield gap, ev("text", text, **p)
                gap, made = 0.01, made + 1
            calls = rnd.choice([1, 1, 1, 2, 2, 3, 4])
            for k in range(calls):
                tool, arg = rnd.choice(tools)
                yield gap, ev("tool_call", arg, tool=tool, id=f"t{made}-{k}", **p)
                gap, made = 0.01, made + 1
            for k in range(calls):
                yield rnd.uniform(0.02, 0.8) * pace, ev("tool_result", "ok " * 20, subagent=not main,
                                                        tool_use_id=f"t{made}-{k}", is_error=rnd.random() < 0.03)
                made += 1
            if main and rnd.random() < 0.1:
                yield 0.2 * pace, ev("result", "success", subagent=False, cost_usd=rnd.uniform(0.01, 0.2),
                                     session_id="s", num_turns=3, is_error=False)
                made += 1
            if rnd.random() < 0.01:
                yield 0.1 * pace, ev(rnd.choice(["system", "task", "unknown", "prompt"]), "misc")
                made += 1


# ---- the measurements -----------------------------------------------------------------------------
def naive_render(ev: Event) -> OutMessage:
    """What a one-post-per-event bridge sends: every event as its own message."""
    return OutMessage(f"naive:{id(ev)}", "prose", str(ev) or ev.kind, replace=False)


async def calls_and_costs(n: int, pace: float = 1.0) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    surface = MemorySurface(limits=SLACK)
    naive = MemorySurface(limits=SLACK, keep=False, record=False)
    view = RunView("rbench", "benchmark run", clock=loop.time, epoch="b")
    pipe = RunPipe(view, Fanout(Target(THREAD, Outbox(surface, THREAD, clock=loop.time))))
    pipe.start()
    mix = Mix()
    costs: list[int] = []
    noop_costs: list[int] = []
    started = loop.time()

    def noop(ev: Event) -> None:
        return None

    perf = time.perf_counter_ns
    for dt, ev in stream(n, mix=mix, pace=pace):
        await asyncio.sleep(dt)
        t0 = perf()
        pipe.on_event(ev)
        t1 = perf()
        noop(ev)
        t2 = perf()
        costs.append(t1 - t0)
        noop_costs.append(t2 - t1)
        await naive.post(THREAD, naive_render(ev))
    fed = sum(mix.counts.values())
    mix.seconds = loop.time() - started
    pipe.put(view.finish(RunOutcome("done", result="All done.", cost_usd=1.23, duration_s=mix.seconds, steps=3)))
    await pipe.close()
    return {"surface": surface, "naive": naive, "mix": mix, "fed": fed, "costs": costs, "noop": noop_costs,
            "outbox": pipe.fanout.stats, "view_errors": view.errors}


def check_loss(surface: MemorySurface, mix: Mix) -> list[str]:
    problems = []
    posted = "\n\n".join(m.text for m in surface.thread(kind="prose"))
    pos = 0
    for line in mix.prose:
        found = posted.find(line, pos)
        if found < 0:
            problems.append(f"prose lost or out of order: {line[:40]}")
            break
        pos = found + len(line)
    cards = {m.key: m for m in surface.thread(kind="ask")}
    for qid in mix.asks:
        card = cards.get(f"ask:1-{qid}")
        if card is None or not card.title.startswith("✅"):
            problems.append(f"ask {qid} missing or not settled on its card")
    if not any(m.kind == "summary" for m in surface.thread()):
        problems.append("summary missing")
    return problems


def pct(values: list[int], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] / 1000.0


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


async def memory(n: int) -> list[tuple[int, float]]:
    loop = asyncio.get_running_loop()
    surface = MemorySurface(limits=SLACK, keep=False, record=False)
    view = RunView("rmem", "memory run", clock=loop.time, epoch="m")
    pipe = RunPipe(view, Fanout(Target(THREAD, Outbox(surface, THREAD, clock=loop.time))))
    pipe.start()
    marks: list[tuple[int, float]] = []
    i = 0
    chunk = 10_000
    while i < n:
        for dt, ev in stream(chunk, seed=i):
            await asyncio.sleep(dt)
            pipe.on_event(ev)
            i += 1
        if i % 100_000 < chunk or i >= n:
            gc.collect()
            marks.append((i, rss_mb()))
    await pipe.close()
    return marks


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    n_rss = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    r = run_sim(calls_and_costs(n))
    surface, naive, mix, fed = r["surface"], r["naive"], r["mix"], r["fed"]
    hub_calls = surface.platform_calls
    per_k = 1000.0 * hub_calls / fed
    naive_per_k = 1000.0 * naive.platform_calls / fed
    print(f"stream: {fed} events over {mix.seconds / 3600:.2f} simulated hours ({fed / mix.seconds:.2f} events/s)")
    print("  mix: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.counts.items(), key=lambda kv: -kv[1])))
    print(f"platform calls per 1,000 events: hub {per_k:.1f} (posts {surface.counts['post']}, "
          f"updates {surface.counts['update']}) vs naive {naive_per_k:.1f} -> {naive_per_k / per_k:.1f}x fewer")
    st = r["outbox"]
    print(f"  outbox: coalesced {st.coalesced}, retries {st.retries}, dropped {st.dropped}; "
          f"view errors {r['view_errors']}")
    problems = check_loss(surface, mix)
    print(f"loss check: {len(mix.prose)} prose lines, {len(mix.asks)} asks, summary -> "
          + ("none lost, order kept" if not problems else "; ".join(problems)))
    print(f"on_event cost: p50 {pct(r['costs'], 0.5):.1f} µs, p99 {pct(r['costs'], 0.99):.1f} µs "
          f"(no-op sink p50 {pct(r['noop'], 0.5):.2f} µs, p99 {pct(r['noop'], 0.99):.2f} µs)")
    for pace in (0.5, 2.0):
        other = run_sim(calls_and_costs(n, pace))
        o_fed, o_mix = other["fed"], other["mix"]
        o_per_k = 1000.0 * other["surface"].platform_calls / o_fed
        lost = check_loss(other["surface"], o_mix)
        print(f"  same stream at {o_fed / o_mix.seconds:.2f} events/s (gaps x{pace}): hub {o_per_k:.1f} per 1,000 "
              f"-> {1000.0 / o_per_k:.1f}x fewer; loss: {'none' if not lost else lost}")
    t0 = time.perf_counter()
    marks = run_sim(memory(n_rss))
    base = marks[0][1]
    print(f"RSS over {n_rss:,} events ({time.perf_counter() - t0:.0f} s wall): "
          + ", ".join(f"{i // 1000}k {mb:.1f}MB" for i, mb in marks[:: max(1, len(marks) // 6)])
          + f"; growth after the first {marks[0][0] // 1000}k: {marks[-1][1] - base:+.1f} MB")


if __name__ == "__main__":
    main()
