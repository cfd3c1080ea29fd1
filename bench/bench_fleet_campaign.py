"""The fleet campaign of issue 25, K random kills (default 100): what an operator's bad week does to runs.

Real processes on 127.0.0.1: redis-server (append-only, fsync always), one `flower-bot web --redis`
front, three `flower-worker`s (--heartbeat 0.3 --dead-after 2 --park-after 4) on the model double run by
this process (ANTHROPIC_BASE_URL + a dummy key, so it outlives every kill). Three runs at a time ask four
questions each; answers and interrupts go through the HTTP API, each with a unique token. Kills: workers
most often (SIGKILL 70 %, SIGTERM 30 %, restarted under the old name, a third of the time at once), the
front (same), Redis (SIGKILL or SIGTERM, down 0.3 s to dead-after + 1 s; once dead-after + 1.5 s).
Then everything comes back and every run is answered to its end. See tests/support/campaign_support.py for
how each figure is counted (what reached the model is read from the double's last request per run).

Run: .venv/bin/python -m bench.bench_fleet_campaign [K] [SEED]   (about 8 s per kill on 2 cores)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from bench.redis_fleet import load
from tests.support.campaign_support import Campaign


async def run(kills: int, seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-campaign-") as name:
        began = time.monotonic()
        campaign = Campaign(Path(name), kills=kills, seed=seed)
        report = await campaign.run()
        took = time.monotonic() - began
    print(f"fleet campaign: {kills} kills, seed {seed}, {took:.0f} s")
    print(report.table())
    for line in report.lost():
        print(f"  not once: {line}")
    print(f"at the end: {load()}")
    print(f"command: .venv/bin/python -m bench.bench_fleet_campaign {kills} {seed}")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    asyncio.run(run(int(args[0]) if args else 100, int(args[1]) if len(args) > 1 else 25))


if __name__ == "__main__":
    main()
