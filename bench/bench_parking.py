"""Parked runs: what N runs waiting on questions cost one bot process, and how fast an answer lands.

One Hub (memory surface keeping no contents, SQLite state store, the model double in this process)
starts runs that each ask a question; with `park_after_s` = 0.2 s every run closes its CLI once the
question has waited that long. Runs are started a few at a time (a CLI start is the expensive part)
until N are parked. Printed:
  1. at each N asked for: RSS of this process plus all its children (read from /proc; the CLIs are
     gone, so that is the whole tree), per parked run above the warmed-up baseline, open fds per run;
  2. K parked runs answered one at a time: time from `Hub.answer` to the model double receiving the
     request that carries the answer as the tool result (a CLI start + a session resume), p50/p95;
  3. how many parked runs one 24 GB machine holds at the measured cost per run;
  4. the same answer -> model latency for K live runs (park_after_s off: the CLI still waits), in the
     same process, with the parts of a resume beside it: a run's start (hub.start -> its first model
     request: CLI start + MCP setup, no session to load), and parking itself (the question asked ->
     the run parked, less park_after_s: closing the CLI). parked - start is about the session load;
     the ratio parked/live is what parking costs a person who answers after park_after_s.
Run: .venv/bin/python -m bench.bench_parking [N ...] [--answer K]   (default: 100, K = 20)

--issue37 [--rounds R] [--answer K]: the issue's before/after, alternating in one process. "old" is the
behaviour before it (park_after_s 20 s, no warm pool), "new" the defaults now (park at once, a warm pool of
1). For 1, 5 and 20 sessions started at once (a burst: CLI starts queue behind the start gate): tree RSS and
live CLIs 10 s after the last question was shown, and once parked; then K answers each, alternating, from
the answer to the model having it: live (never parks), warm (new: the one waiting run keeps its CLI), parked
(new without a pool: a CLI start and a resume). Ratios new/old and against live are printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from adapters.hub import Hub, HubSettings, RunPlan
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import SQLiteStateStore
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from bench.procfs import rss_kb
from flower_core import AgentSpec, Event, HumanChannel, Step, Workflow
from flower_core.devmodel import ModelDouble, parse_scenario
from tests.support.drive import drive

MACHINE_GB = 24
CONCURRENT = 4  # runs starting at once (CLIs alive at once while they start, ask and park)
SCENARIO = parse_scenario({"name": "parking", "conversation": [{"name": "main", "turn": [
    {"say": "One question first.", "call": [{"tool": "mcp__human__ask",
                                             "input": {"question": "Which colour?", "options": ["red", "blue"]}}]},
    {"say": "Going with {last_tool_result}."},
]}]})


def _factory(plan: RunPlan) -> Workflow:
    ch = HumanChannel(timeout_s=24 * 3600)
    spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=ch, max_turns=6)
    return Workflow([Step("ask", spec, f"ask: {plan.task}")], channel=ch)


def _tree_rss_kb() -> tuple[int, int]:
    """(RSS of this process + its children in kB, number of children)."""
    me = os.getpid()
    total, children = rss_kb(me), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            total += rss_kb(int(entry))
            children += 1
    return total, children


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


PARK_AFTER_S = 0.2


class Bench:
    def __init__(self, tmp: Path, md: ModelDouble, park_after_s: float | None = PARK_AFTER_S, *, warm_pool: int = 0,
                 max_runs: int = CONCURRENT) -> None:
        self.md = md
        self.surface = MemorySurface(record=False, keep=False)
        tmp.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStateStore(tmp / "state.db")
        settings = HubSettings(root=tmp / "runs", max_runs=max_runs, max_parked=1_000_000, warm_pool=warm_pool,
                               park_after_s=park_after_s, view=ViewConfig(status_every_s=30.0, prose_linger_s=1.0))
        self.hub = Hub(self.surface, self.store, settings, kit=EngineKit(factory=_factory, env=md.env(tmp / "cli")))
        self.parked_now = asyncio.Event()
        self.asked_now = asyncio.Event()
        self.asked_at: dict[str, float] = {}
        self.shown: dict[str, float] = {}  # run -> when its question was shown (kept: asked_at goes on parking)
        self.parking_s: list[float] = []  # question asked -> run parked, less park_after_s
        self.park_after_s = park_after_s or 0.0
        self.hub.taps.append(self._tap)
        self.n = 0

    def _tap(self, run_id: str, ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            self.asked_at[run_id] = time.perf_counter()
            self.shown.setdefault(run_id, self.asked_at[run_id])
            self.asked_now.set()
        if ev.kind == "system" and ev.text == "parked":
            if run_id in self.asked_at:
                self.parking_s.append(time.perf_counter() - self.asked_at.pop(run_id) - self.park_after_s)
            self.parked_now.set()

    async def park_until(self, target: int) -> float:
        """Start runs until `target` are parked; returns the seconds it took."""
        t0 = time.perf_counter()
        while len(self.hub.parked()) < target:
            self.parked_now.clear()
            while len(self.hub.running()) < CONCURRENT and len(self.hub.live) < target:
                self.n += 1
                started = await drive(self.hub).start(f"run {self.n}", ThreadRef("memory", f"C{self.n % 50}",
                                                                          f"t{self.n}"), "bench")
                if not started.ok:
                    raise RuntimeError(started.message)
            self.md.requests.clear()  # the double keeps request bodies; this bench measures the bridge
            if len(self.hub.parked()) < target:
                await asyncio.wait_for(self.parked_now.wait(), 120)
        return time.perf_counter() - t0

    async def answer(self, run_id: str, token: str) -> float:
        """Answer a parked run; seconds until the model receives the answer as its tool result."""
        self.md.requests.clear()
        t0 = time.perf_counter()
        done = await drive(self.hub).answer(run_id, "1-q1", token, "bench")
        if not done.ok:
            raise RuntimeError(done.message)
        await self.md.wait_for(lambda reqs: any(r.last_tool_result == token for r in reqs), 120)
        got = next(r for r in self.md.requests if r.last_tool_result == token)
        await self.hub.query.wait(run_id)
        return got.received_at - t0


async def live(tmp: Path, md: ModelDouble, k: int) -> tuple[list[float], list[float]]:
    """K runs one at a time that never park: (start -> first model request, answer -> model has it)."""
    b = Bench(tmp, md, park_after_s=None)
    starts: list[float] = []
    answers: list[float] = []
    try:
        for i in range(k):
            md.requests.clear()
            b.asked_now.clear()
            t0 = time.perf_counter()
            started = await drive(b.hub).start(f"live {i}", ThreadRef("memory", "CLIVE", f"l{i}"), "bench")
            if not started.ok or started.run_id is None:
                raise RuntimeError(started.message)
            await md.wait_for(lambda reqs: bool(reqs), 120)
            starts.append(md.requests[0].received_at - t0)
            await asyncio.wait_for(b.asked_now.wait(), 120)
            answers.append(await b.answer(started.run_id, f"live-{i}"))
    finally:
        await b.hub.close()
        b.store.close()
    return starts, answers


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


async def _run(sizes: list[int], k: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        async with ModelDouble(SCENARIO) as md:
            b = Bench(tmp / "parked", md)
            try:
                parked = await _measure(b, sizes, k)
            finally:
                await b.hub.close()
                b.store.close()
            starts, answers = await live(tmp / "live", md, k)
        print(f"4. live vs parked, {k} runs each, same process: answer -> model has it, live p50 "
              f"{statistics.median(answers):.2f} s (p95 {_p(answers, .95):.2f}), parked p50 "
              f"{statistics.median(parked):.2f} s (p95 {_p(parked, .95):.2f}): parked/live = "
              f"{statistics.median(parked) / statistics.median(answers):.1f}x at p50")
        print(f"   where a resume goes: a run's start (CLI start + MCP setup, no session) p50 "
              f"{statistics.median(starts):.2f} s (p95 {_p(starts, .95):.2f}); so the session load and resume "
              f"bookkeeping are about {statistics.median(parked) - statistics.median(starts):.2f} s; parking "
              f"(closing the CLI) p50 {statistics.median(b.parking_s):.2f} s (p95 {_p(b.parking_s, .95):.2f}, "
              f"{len(b.parking_s)} parks)")
    print("command: .venv/bin/python -m bench.bench_parking " + " ".join(map(str, sizes)) + f" --answer {k}")


async def _measure(b: Bench, sizes: list[int], k: int) -> list[float]:
    # Warm-up: one run parked and answered, so imports and caches are paid before the baseline.
    await b.park_until(1)
    await b.answer(b.hub.parked()[0], "warm")
    gc.collect()
    base_kb, _ = _tree_rss_kb()
    base_fds = _fds()
    print(f"baseline (hub + double, warmed up): tree RSS {base_kb / 1024:.1f} MB, {base_fds} fds")
    took, per_mb, fds_per_run, n = 0.0, 0.0, 0.0, 0
    for n in sorted(sizes):
        took += await b.park_until(n)
        gc.collect()
        kb, children = _tree_rss_kb()
        per_mb, fds_per_run = (kb - base_kb) / n / 1024, (_fds() - base_fds) / n
        print(f"N={n:>5} parked: tree RSS {kb / 1024:8.1f} MB ({children} child processes), {per_mb:6.3f} MB "
              f"per parked run above the baseline, {fds_per_run:4.1f} open files per run (filled in {took:.0f}s)",
              flush=True)
    lat = sorted([await b.answer(rid, f"answer-{i}") for i, rid in enumerate(b.hub.parked()[:k])])
    p95 = _p(lat, .95)
    print(f"answer -> the model has it as the tool result (a CLI start + resume): p50 {statistics.median(lat):.2f} s, "
          f"p95 {p95:.2f} s, max {lat[-1]:.2f} s over {len(lat)} runs")
    room = MACHINE_GB * 1024 - base_kb / 1024
    print(f"one {MACHINE_GB} GB machine at {per_mb:.3f} MB per parked run (measured at N={n}): about "
          f"{room / per_mb:,.0f} parked runs by memory (less what the OS and the running runs' CLIs, "
          "~190 MB each, take)")
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if fds_per_run > 0:
        print(f"open files: {fds_per_run:.1f} per parked run, so this process's limit of "
              f"{soft} holds about {soft / fds_per_run:,.0f} parked runs unless it is raised")
    return lat


VARIANTS = {"old": {"park_after_s": 20.0, "warm_pool": 0}, "new": {"park_after_s": 0.0, "warm_pool": 1}}
AT_S = 10.0  # "at 10 s after the question"


async def waiting(tmp: Path, md: ModelDouble, n: int, variant: str) -> tuple[float, int, float, int, float, float]:
    """n runs started at once, each asking; (tree MB and live CLIs 10 s after the last question was shown,
    tree MB and CLIs once every run that may park has parked, seconds from the first start to the last card,
    the longest the event loop was late meanwhile). "old" starts its CLIs without the start gate, as before."""
    from flower_core.runtime import attempt

    loop = asyncio.get_running_loop()
    gate = attempt.start_gate()
    if variant == "old":
        attempt._GATES[loop] = asyncio.Semaphore(10_000)
    b = Bench(tmp, md, max_runs=n, **VARIANTS[variant])  # type: ignore[arg-type]
    lag = 0.0

    async def ticker() -> None:
        nonlocal lag
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.05)
            lag = max(lag, time.perf_counter() - t - 0.05)
    tick = asyncio.create_task(ticker())
    try:
        t0 = time.perf_counter()
        for i in range(n):
            started = await b.hub.start(f"w {i}", ThreadRef("memory", "CW", f"w{i}"), "bench")
            if not started.ok:
                raise RuntimeError(started.message)
        while len(b.shown) < n:
            b.asked_now.clear()
            await asyncio.wait_for(b.asked_now.wait(), 300)
        cards_s = max(b.shown.values()) - t0
        tick.cancel()
        await asyncio.sleep(max(0.0, max(b.shown.values()) + AT_S - time.perf_counter()))
        gc.collect()
        at_kb, at_clis = _tree_rss_kb()
        keep = 0 if variant == "old" else min(int(VARIANTS[variant]["warm_pool"] or 0), n)
        deadline = time.perf_counter() + 120
        while len(b.hub.parked()) < n - keep and time.perf_counter() < deadline:
            b.parked_now.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(b.parked_now.wait(), 5)
        gc.collect()
        parked_kb, parked_clis = _tree_rss_kb()
        return at_kb / 1024, at_clis, parked_kb / 1024, parked_clis, cards_s, lag
    finally:
        tick.cancel()
        await b.hub.close()
        b.store.close()
        attempt._GATES[loop] = gate


async def one_answer(tmp: Path, md: ModelDouble, kind: str, i: int) -> float:
    """One run asks and is answered; seconds from the answer to the model having it. kind: live (never parks),
    warm (park at once, a pool of 1: the only waiting run keeps its CLI), parked (park at once, no pool)."""
    settings = {"live": {"park_after_s": None}, "warm": {"park_after_s": 0.0, "warm_pool": 1},
                "parked": {"park_after_s": 0.0, "warm_pool": 0}}[kind]
    b = Bench(tmp, md, **settings)  # type: ignore[arg-type]
    try:
        started = await b.hub.start(f"{kind} {i}", ThreadRef("memory", "CA", f"{kind}{i}"), "bench")
        if not started.ok or started.run_id is None:
            raise RuntimeError(started.message)
        await asyncio.wait_for(b.asked_now.wait(), 120)
        if kind == "parked":
            await asyncio.wait_for(b.parked_now.wait(), 120)
        return await b.answer(started.run_id, f"{kind}-{i}")
    finally:
        await b.hub.close()
        b.store.close()


async def issue37(rounds: int, k: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        async with ModelDouble(SCENARIO) as md:
            await one_answer(tmp / "warmup", md, "parked", 0)  # imports and caches paid before measuring
            rows: dict[tuple[str, int], list[tuple[float, int, float, int, float, float]]] = {}
            for r in range(rounds):
                for n in (1, 5, 20):
                    for variant in (("old", "new") if r % 2 == 0 else ("new", "old")):
                        got = await waiting(tmp / f"w-{variant}-{n}-{r}", md, n, variant)
                        rows.setdefault((variant, n), []).append(got)
                        print(f"round {r + 1} {variant} n={n}: at {AT_S:.0f} s {got[0]:.0f} MB, {got[1]} CLIs; parked "
                              f"{got[2]:.0f} MB, {got[3]} CLIs; last card {got[4]:.1f} s after the first start, "
                              f"loop late by {got[5]:.2f} s at most",
                              flush=True)
            lat: dict[str, list[float]] = {"live": [], "warm": [], "parked": []}
            for i in range(k):
                for kind in (("live", "warm", "parked") if i % 2 == 0 else ("parked", "warm", "live")):
                    lat[kind].append(await one_answer(tmp / f"a-{kind}-{i}", md, kind, i))
    print("\nmemory of the bench process tree (hub + model double + CLIs), median over rounds")
    print(f"{'sessions':>8} | {'old at 10 s':>16} | {'new at 10 s':>16} | new/old | {'old parked':>16} | "
          f"{'new parked':>16} | last card s old/new | loop late s old/new")
    for n in (1, 5, 20):
        old, new = rows[("old", n)], rows[("new", n)]

        def med(vals: list[tuple[float, int, float, int, float, float]], j: int) -> float:
            return statistics.median(v[j] for v in vals)
        print(f"{n:>8} | {med(old, 0):7.0f} MB {med(old, 1):3.0f} CLI | {med(new, 0):7.0f} MB {med(new, 1):3.0f} CLI | "
              f"{med(new, 0) / med(old, 0):6.2f}x | {med(old, 2):7.0f} MB {med(old, 3):3.0f} CLI | "
              f"{med(new, 2):7.0f} MB {med(new, 3):3.0f} CLI | {med(old, 4):.1f} / {med(new, 4):.1f} | "
              f"{med(old, 5):.2f} / {med(new, 5):.2f}")
    live = statistics.median(lat["live"])
    print(f"\nanswer -> the model has it, {k} each, alternating: live p50 {live:.3f} s "
          f"(p95 {_p(lat['live'], .95):.3f}); "
          f"warm p50 {statistics.median(lat['warm']):.3f} s (p95 {_p(lat['warm'], .95):.3f}) = "
          f"{statistics.median(lat['warm']) / live:.2f}x live; parked without a warm CLI p50 "
          f"{statistics.median(lat['parked']):.3f} s (p95 {_p(lat['parked'], .95):.3f}) = "
          f"{statistics.median(lat['parked']) / live:.2f}x live")
    print(f"command: .venv/bin/python -m bench.bench_parking --issue37 --rounds {rounds} --answer {k}")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    k = 20
    if "--issue37" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 2
        k = int(args[args.index("--answer") + 1]) if "--answer" in args else 10
        asyncio.run(issue37(rounds, k))
        return
    if "--answer" in args:
        i = args.index("--answer")
        k = int(args[i + 1])
        args = args[:i] + args[i + 2:]
    sizes = [int(a) for a in args] or [100]
    asyncio.run(_run(sizes, k))


if __name__ == "__main__":
    main()
