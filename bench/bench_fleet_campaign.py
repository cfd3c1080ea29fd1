"""The fleet campaign of issue 25, K random kills (default 100): what an operator's bad week does to runs.

Real processes on 127.0.0.1: redis-server (append-only, fsync always), one `flower-bot web --redis`
front, three `flower-worker`s (--heartbeat 0.3 --dead-after 2 --park-after 4) on the model double run by
this process (ANTHROPIC_BASE_URL + a dummy key, so it outlives every kill). Three runs at a time ask four
questions each; answers and interrupts go through the HTTP API, each with a unique token. Kills: workers
most often (SIGKILL 70 %, SIGTERM 30 %, restarted under the old name, a third of the time at once), the
front (same), Redis (SIGKILL or SIGTERM, down 0.3 s to dead-after + 1 s; once dead-after + 1.5 s).
Then everything comes back and every run is answered to its end. See tests/support/campaign_support.py for
how each figure is counted (what reached the model is read from the double's last request per run; whether
each input was a model turn's input once, only in history or twice, from all of the run's requests).

Run: .venv/bin/python -m bench.bench_fleet_campaign [K] [SEED] [--keep DIR]   (about 8 s per kill on 2 cores)

`--keep DIR` runs the campaign in DIR and leaves there what explains a loss: Redis's append-only file, the
model double's requests and what it served (requests.json), each run's task token (tasks.json), the accepted
answers and interrupts with when each was accepted and each kill (inputs.json), and every process's output
(procs.log). Without it everything goes with a temporary folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.redis_fleet import load
from tests.support.campaign_support import Campaign


async def run(kills: int, seed: int, keep: Path | None = None) -> None:
    with contextlib.ExitStack() as stack:
        where = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-campaign-")))
        where.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        campaign = Campaign(where, kills=kills, seed=seed)
        report = await campaign.run()
        took = time.monotonic() - began
        if keep is not None:
            _dump(campaign, keep)
    print(f"fleet campaign: {kills} kills, seed {seed}, {took:.0f} s")
    print(report.table())
    for line in report.lost():
        print(f"  not once: {line}")
    turn_problems = report.turn_problems()
    _n, _once, history, twice, lost = report.turns({**report.answers, **report.interrupts})
    print(f"issue 32 done criteria (each accepted input one model turn's input): {history} only in history, "
          f"{twice} twice, {lost} lost, {len(report.stuck)} stuck: "
          + ("all hold" if not (turn_problems or lost or report.stuck) else "NOT met"))
    print("\n".join(report.not_as_input(explained=None)))
    print(f"at the end: {load()}")
    print(f"command: .venv/bin/python -m bench.bench_fleet_campaign {kills} {seed}"
          + (f" --keep {keep}" if keep is not None else ""))


def _dump(campaign: Campaign, where: Path) -> None:
    requests = [{"received_at": r.received_at, "served": r.served, "reply_text": r.reply_text,
                 "reply_tool_ids": list(r.reply_tool_ids), "body": r.body} for r in campaign.double.requests]
    (where / "requests.json").write_text(json.dumps(requests))
    report = campaign.report
    (where / "inputs.json").write_text(json.dumps({"answers": report.answers, "interrupts": report.interrupts,
                                                   "accepted_at": report.accepted_at, "kills": report.kill_at}))
    (where / "tasks.json").write_text(json.dumps(campaign.tasks))
    with open(where / "procs.log", "w") as out:
        for proc in campaign.history:
            out.write(f"=== {getattr(proc, 'name', '?')}\n")
            out.writelines(line.rstrip() + "\n" for line in proc.lines)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    keep = None
    if "--keep" in args:
        at = args.index("--keep")
        keep = Path(args[at + 1]).resolve()
        del args[at:at + 2]
    asyncio.run(run(int(args[0]) if args else 100, int(args[1]) if len(args) > 1 else 25, keep))


if __name__ == "__main__":
    main()
