"""Restarts: issue 18's campaign at length — kill the bot at random, restart it, count what was lost.

One real `flower-bot web --flow single` process on a persistent root, driven only through its HTTP
API by a person who keeps a few runs going, answers their questions, writes to their inboxes and
interrupts them; the model double (in this process, so it outlives every kill) plays
tests/support/scenarios/restart_campaign.toml, whose model never asks a question again after a restart.
K kills (about 2 in 3 SIGKILL of the process group, the rest SIGTERM), at random times and at
chosen moments: right after an accepted answer, while a question waits, during an interrupt, just
before an ask. Every figure comes from what the API accepted and what the model double received
(tests/support/campaign/tally.py says how), never from what the bot says of itself.
Run: .venv/bin/python -m bench.bench_restarts [K]   (default K = 100; FLOWER_CAMPAIGN_SEED picks the plan)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from tests.support.campaign import Habits, Settings, run_campaign

RUNS = 4  # kept going at once (issue 18: 3–5)


async def run(kills: int) -> None:
    settings = Settings.from_env(kills=kills, habits=Habits(target=RUNS), drain_s=300.0)
    print(f"{kills} kills, {RUNS} runs kept going, seed {settings.seed}; this takes about {kills * 8 // 60 + 1} min",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-restarts-") as name:
        report = await run_campaign(settings, Path(name))
    print()
    print(report.table())
    problems = report.problems()
    print("\nissue 18 done criteria: " + ("all hold" if not problems else "NOT met: " + "; ".join(problems)))
    print(f"command: .venv/bin/python -m bench.bench_restarts {kills}")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    asyncio.run(run(int(args[0]) if args else 100))


if __name__ == "__main__":
    main()
