"""How long a run's next round takes to reach the model, beside a fresh run's start, in the same process.

    fresh     Hub.start(task)                         → the model double receives the run's first request
    continue  a person's message in the ended run's   → the model double receives round 2's first request
              thread (Hub.said, as Slack/Discord/web
              deliver it)

Both go through the real SDK + bundled CLI on the model double, one Hub on a memory surface and a SQLite
state store, the way a bot runs them. A continue does more than a start (the run's record and lineage are
read, the workflow is rebuilt as its next round, the brief is amended, and the CLI resumes the stored
session, so its first request carries round 1's conversation); the ratio says what that costs. The two
are measured alternately, run after run, so load on the machine falls on both alike.

Run: .venv/bin/python -m bench.bench_continue [N]   (default 10 runs, each started and continued once)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.hub import Hub, HubSettings, RunPlan
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import SQLiteStateStore
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from bench.redis_fleet import load, ms, pct
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from flower_core.devmodel import ModelDouble, parse_scenario
from tests.support.drive import drive

SCENARIO = parse_scenario({"name": "bench-continue", "conversation": [{"name": "main", "turn": [
    {"say": "Round one."},
    {"say": "Round two: {last_user_text}"},
], "after_end": "Again: {last_user_text}"}]})
USER = "bench"
WAIT_S = 120.0  # for one request or one run's end: a loaded machine is slow, a stuck one fails the bench


def flow(plan: RunPlan) -> Workflow:
    """One agent step with the human channel and a brief to amend, as a bot's single flow."""
    ch = HumanChannel(timeout_s=60.0, amend_path=plan.workspace / "brief.md")
    spec = AgentSpec(name="bench", allowed_tools=["Read"], channel=ch, max_turns=6)
    return Workflow([Step("work", spec, f"work: {plan.task}")], channel=ch)


async def _until(what: str, pred: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    """Poll `pred` (the model double records requests; there is no event to wait on) under a deadline."""
    deadline = time.perf_counter() + timeout
    while not (got := pred()):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)
    return got


def _first_after(md: ModelDouble, seen: int) -> float:
    """The arrival time (perf_counter) of the first request after the `seen` ones, or 0.0 while none."""
    requests = md.model_requests()
    return requests[seen].received_at if len(requests) > seen else 0.0


async def _one(hub: Hub, md: ModelDouble, i: int) -> tuple[float, float]:
    thread = ThreadRef("memory", "C1", f"t{i}")
    seen = len(md.model_requests())
    t0 = time.perf_counter()
    started = await drive(hub).start(f"bench run {i}", thread, USER)
    if not started.ok:
        raise RuntimeError(started.message)
    fresh = await _until("the run's first request", lambda: _first_after(md, seen)) - t0
    await asyncio.wait_for(hub.query.wait(started.run_id), WAIT_S)

    seen = len(md.model_requests())
    t0 = time.perf_counter()
    went = await drive(hub).said(thread, USER, f"and then step {i}")
    if went is None or not went.ok:
        raise RuntimeError(f"not continued: {went}")
    again = await _until("round 2's first request", lambda: _first_after(md, seen)) - t0
    await asyncio.wait_for(hub.query.wait(started.run_id), WAIT_S)
    request = md.model_requests()[seen]
    if "Round one." not in str(request.body.get("messages")):
        raise RuntimeError("round 2's request did not carry round 1's conversation")
    return fresh, again


async def _run(n: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp), Path(tmp) / "cli-home"
        home.mkdir()
        async with ModelDouble(SCENARIO) as md:
            store = SQLiteStateStore(root / "state.db")
            settings = HubSettings(root=root / "runs", view=ViewConfig(), max_runs=4)
            hub = Hub(MemorySurface(record=False, keep=False), store, settings,
                      kit=EngineKit(factory=flow, env=md.env(home)))
            fresh: list[float] = []
            again: list[float] = []
            try:
                await _one(hub, md, 0)  # warm-up: the first CLI spawn pays for cold caches
                for i in range(1, n + 1):
                    f, a = await _one(hub, md, i)
                    fresh.append(f)
                    again.append(a)
            finally:
                await hub.close()
                store.close()
            return fresh, again


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 10
    fresh, again = asyncio.run(_run(n))
    p50f, p95f, p50a, p95a = pct(fresh, 0.5), pct(fresh, 0.95), pct(again, 0.5), pct(again, 0.95)
    print(f"to the model's first request, over {n} runs (each started, then continued once; {load()}):")
    print(f"  fresh run  (start)               p50 {ms(p50f)}  p95 {ms(p95f)}")
    print(f"  next round (a thread message)    p50 {ms(p50a)}  p95 {ms(p95a)}")
    print(f"  ratio next round / fresh: p50 {p50a / p50f:.2f}x, p95 {p95a / p95f:.2f}x")
    print("command: .venv/bin/python -m bench.bench_continue 10")


if __name__ == "__main__":
    main()
