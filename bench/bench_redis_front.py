"""The chat front's cost per run when runs live on workers: N runs waiting on questions, 3 workers.

The front is this process: a Hub on RedisTransport (memory surface keeping no contents, SQLite
state store). Three `flower-worker` processes (--park-after 0 --max-runs 2, so a run parks as soon
as it has asked and at most 6 CLIs run at once) take the runs; a real redis-server on 127.0.0.1
(append-only, fsync always, as tests/support/redis_support starts it) carries them. One run is started,
parked and answered first, so imports and caches are paid before the baseline. Then N runs are
started at once; the ramp ends when every one shows an open question card and is parked. Printed:
  1. the front's RSS (VmRSS after gc) before and after, MB per waiting run;
  2. the front's CPU (user + sys) over the ramp per run, and over an idle window with N waiting
     (% of one core);
  3. per worker: runs held, running, parked (its heartbeat) and the worker process's RSS;
  4. the same N runs in ONE process with the in-process transport (park after 0 s, 6 runs with a
     CLI at once, the model double in that process), in a fresh child process so its memory starts
     as clean as the front's: RSS per run, and the ratio front-only / in-process.
Also the per-message latency worker -> front that RedisTransport kept over these real runs.
Run: .venv/bin/python -m bench.bench_redis_front [N] [--idle SECONDS]   (default: N = 100, idle 20 s)
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from adapters.transport.redis_front import RedisTransport
from bench.procfs import rss_kb
from bench.redis_fleet import (
    Front,
    Workers,
    children_of,
    cpu_s,
    load,
    ms,
    parse_result,
    parser,
    pct,
    result_line,
)
from tests.support.fleet_support import ROOT
from tests.support.redis_support import RedisServer

WORKERS = ("w1", "w2", "w3")
WORKER_ARGS = ("--park-after", "0", "--max-runs", "2")
IN_PROCESS_MAX_RUNS = 6  # the same number of CLIs at once as 3 workers x 2


async def fill(front: Front, n: int, *, limit: int | None = None) -> tuple[list[str], float, float]:
    """Start n runs (at most `limit` not yet parked at a time; None: all at once) and wait until each
    shows an open card and is parked. Returns the run ids, wall seconds and this process's CPU seconds."""
    hub = front.hub
    runs: list[str] = []
    c0, t0 = cpu_s(), time.perf_counter()
    while len(runs) < n:
        while len(runs) < n and (limit is None or len(hub.running()) < limit):
            runs.append(await front.start(f"bench run {len(runs) + 1}"))
        if limit is not None and len(runs) < n:
            await front.until("a run to park", lambda: len(hub.running()) < limit, timeout=300)
    await front.until(f"{n} runs waiting", lambda: all(front.waiting(r) for r in runs), timeout=600)
    return runs, time.perf_counter() - t0, cpu_s() - c0


async def warm_up(front: Front) -> None:
    """One run asked, parked and answered: imports and caches are paid before the baseline."""
    run = await front.start("warm-up")
    card = await front.until("the warm-up question", lambda: front.waiting(run), timeout=180)
    await front.answer_and_end(run, card)


async def idle_cpu(seconds: float) -> float:
    """Share of one core this process used over `seconds` of doing nothing but hold the runs."""
    c0, t0 = cpu_s(), time.perf_counter()
    await asyncio.sleep(seconds)  # the measurement window itself
    return (cpu_s() - c0) / (time.perf_counter() - t0)


def settled_rss_kb() -> int:
    gc.collect()
    return rss_kb()


# ---- the front over Redis -----------------------------------------------------------------------
async def redis_front(tmp: Path, n: int, idle_s: float) -> dict[str, Any]:
    server = RedisServer(tmp / "redis").start()
    workers = Workers(tmp, server.url)
    front: Front | None = None
    try:
        await asyncio.gather(*(workers.start(name, *WORKER_ARGS) for name in WORKERS))
        print(f"redis-server {server.url} (appendfsync always, redis-py parser: {parser()}); 3 workers: "
              f"{workers.command('wN', *WORKER_ARGS)}", flush=True)
        transport = RedisTransport(server.url, prefix=workers.prefix)
        front = Front(tmp, transport=transport)
        await front.hub.open()
        await warm_up(front)
        base = settled_rss_kb()
        runs, took, ramp_cpu = await fill(front, n)
        full = settled_rss_kb()
        idle = await idle_cpu(idle_s)
        seen = await transport.workers()
        per_worker = {name: {**seen.get(name, {}), "rss_kb": rss_kb(proc.pid),
                             "children": len(children_of(proc.pid))} for name, proc in workers.procs.items()}
        lat = list(transport.latency)
        return {"base_kb": base, "full_kb": full, "n": len(runs), "took_s": took, "ramp_cpu_s": ramp_cpu,
                "idle": idle, "workers": per_worker, "latency": lat, "gaps": transport.gaps}
    except BaseException:
        for proc in workers.procs.values():
            print(f"--- {proc.name}\n{proc.tail()}", file=sys.stderr)
        raise
    finally:
        if front is not None:
            await front.close()  # runs go on on their workers...
        await workers.stop()  # ...which hand them back and leave
        server.cleanup()


# ---- the same runs in one process (run in a child: see main) ------------------------------------
async def in_process(tmp: Path, n: int, idle_s: float) -> dict[str, Any]:
    from bench.redis_fleet import ONE_QUESTION
    from bots.flows import single_flow
    from flower_core.devmodel import ModelDouble, load_scenario

    scenario = tmp / "scenario.toml"
    scenario.write_text(ONE_QUESTION, encoding="utf-8")
    async with ModelDouble(load_scenario(scenario)) as md:
        front = Front(tmp, factory=single_flow, env=md.env(tmp / "cli"), max_runs=IN_PROCESS_MAX_RUNS,
                      park_after_s=0.0, max_parked=1_000_000)
        try:
            await warm_up(front)
            md.requests.clear()  # the double keeps request bodies; the comparison is about the bridge
            base = settled_rss_kb()
            runs, took, ramp_cpu = await fill(front, n, limit=IN_PROCESS_MAX_RUNS)
            md.requests.clear()
            full = settled_rss_kb()
            idle = await idle_cpu(idle_s)
            return {"base_kb": base, "full_kb": full, "n": len(runs), "took_s": took, "ramp_cpu_s": ramp_cpu,
                    "idle": idle, "children": len(children_of(os.getpid()))}
        finally:
            await front.close()


def in_process_child(n: int, idle_s: float) -> dict[str, Any]:
    """The in-process baseline in a fresh interpreter: measured in this process after the front, its
    runs would reuse memory the front's runs freed and look cheaper than they are."""
    cmd = [sys.executable, "-m", "bench.bench_redis_front", str(n), "--idle", str(idle_s), "--in-process"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"in-process baseline failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-3000:]}")
    return parse_result(done.stdout)


# ---- report -------------------------------------------------------------------------------------
def per_run_mb(r: dict[str, Any]) -> float:
    return float((r["full_kb"] - r["base_kb"]) / r["n"] / 1024)


def report(n: int, idle_s: float, front: dict[str, Any], local: dict[str, Any]) -> None:
    f_mb, l_mb = per_run_mb(front), per_run_mb(local)
    print(f"\nfront only (Hub + RedisTransport, runs on 3 workers), N={front['n']} runs waiting on a question:")
    print(f"  RSS {front['base_kb'] / 1024:.1f} MB before -> {front['full_kb'] / 1024:.1f} MB with N waiting: "
          f"{f_mb:.3f} MB per run")
    print(f"  CPU over the ramp: {front['ramp_cpu_s'] * 1000 / n:.1f} ms per run ({front['ramp_cpu_s']:.2f} s "
          f"for {n} runs in {front['took_s']:.1f} s wall)")
    print(f"  idle with N waiting ({idle_s:g} s): {front['idle'] * 100:.2f} % of one core")
    print("  workers (heartbeat: runs held / running / parked; process RSS):")
    for name, w in front["workers"].items():
        print(f"    {name}: {w.get('runs', '?')} held, {w.get('running', '?')} running, {w.get('parked', '?')} "
              f"parked (max_runs {w.get('max_runs', '?')}); RSS {w['rss_kb'] / 1024:.1f} MB, "
              f"{w['children']} child processes")
    if front["latency"]:
        lat = front["latency"]
        print(f"  worker -> front message latency over these runs: p50 {ms(pct(lat, 0.5))}, "
              f"p99 {ms(pct(lat, 0.99))}, max {ms(max(lat))} ({len(lat)} messages, {front['gaps']} gaps)")
    print(f"\nin-process baseline (one process, LocalTransport, park after 0 s, {IN_PROCESS_MAX_RUNS} CLIs at once, "
          f"model double inside), N={local['n']}:")
    print(f"  RSS {local['base_kb'] / 1024:.1f} MB before -> {local['full_kb'] / 1024:.1f} MB with N waiting: "
          f"{l_mb:.3f} MB per run ({local['children']} child processes left)")
    print(f"  CPU over the ramp: {local['ramp_cpu_s'] * 1000 / n:.1f} ms per run (SDK + double in this process; "
          f"CLIs not counted) in {local['took_s']:.1f} s wall; idle: {local['idle'] * 100:.2f} % of one core")
    ratio = f"{f_mb / l_mb:.2f}" if l_mb > 0 else "n/a (in-process delta not positive)"
    print(f"\nRSS per waiting run, front-only / in-process: {ratio}")


async def both(n: int, idle_s: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-redis-front-") as name:
        front = await redis_front(Path(name), n, idle_s)
    print("front done; in-process baseline in a child process...", flush=True)
    local = await asyncio.to_thread(in_process_child, n, idle_s)
    report(n, idle_s, front, local)
    print(f"at the end: {load()}")
    print(f"\ncommand: .venv/bin/python -m bench.bench_redis_front {n} --idle {idle_s:g}")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    idle_s, child = 20.0, "--in-process" in args
    if child:
        args.remove("--in-process")
    if "--idle" in args:
        i = args.index("--idle")
        idle_s = float(args[i + 1])
        del args[i:i + 2]
    n = int(args[0]) if args else 100
    if child:
        with tempfile.TemporaryDirectory(prefix="bench-in-process-") as name:
            print(result_line(asyncio.run(in_process(Path(name), n, idle_s))))
        return
    asyncio.run(both(n, idle_s))


if __name__ == "__main__":
    main()
