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
"""

from __future__ import annotations

import asyncio
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
    def __init__(self, tmp: Path, md: ModelDouble, park_after_s: float | None = PARK_AFTER_S) -> None:
        self.md = md
        self.surface = MemorySurface(record=False, keep=False)
        tmp.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStateStore(tmp / "state.db")
        settings = HubSettings(root=tmp / "runs", max_runs=CONCURRENT, max_parked=1_000_000,
                               park_after_s=park_after_s, view=ViewConfig(status_every_s=30.0, prose_linger_s=1.0))
        self.hub = Hub(self.surface, self.store, settings, kit=EngineKit(factory=_factory, env=md.env(tmp / "cli")))
        self.parked_now = asyncio.Event()
        self.asked_now = asyncio.Event()
        self.asked_at: dict[str, float] = {}
        self.parking_s: list[float] = []  # question asked -> run parked, less park_after_s
        self.park_after_s = park_after_s or 0.0
        self.hub.taps.append(self._tap)
        self.n = 0

    def _tap(self, run_id: str, ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            self.asked_at[run_id] = time.perf_counter()
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


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    k = 20
    if "--answer" in args:
        i = args.index("--answer")
        k = int(args[i + 1])
        args = args[:i] + args[i + 2:]
    sizes = [int(a) for a in args] or [100]
    asyncio.run(_run(sizes, k))


if __name__ == "__main__":
    main()
