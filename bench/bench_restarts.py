"""Restarts: issue 18's campaign at length — kill the bot at random, restart it, count what was lost.

One real `flower-bot web --flow single` process on a persistent root, driven only through its HTTP
API by a person who keeps a few runs going, answers their questions, writes to their inboxes and
interrupts them; the model double (in this process, so it outlives every kill) plays
tests/support/scenarios/restart_campaign.toml, whose model never asks a question again after a restart.
K kills (about 2 in 3 SIGKILL of the process group, the rest SIGTERM), at random times and at
chosen moments: right after an accepted answer, while a question waits, during an interrupt, just
before an ask. Every figure comes from what the API accepted and what the model double received
(tests/support/campaign/tally.py says how), never from what the bot says of itself. Issue 32's columns say
whether each accepted input was a model turn's input once, only in history, or twice
(tests/support/campaign/turns.py); every input that was not is listed with its shape and the requests around it.
Run: .venv/bin/python -m bench.bench_restarts [K] [--keep DIR]   (default K = 100; FLOWER_CAMPAIGN_SEED picks
the plan). `--keep DIR` runs in DIR and leaves there evidence.json (every accepted input, every request the
double got and what it served, each kill) and the bot's log; `python -m tests.support.campaign.evidence
DIR/evidence.json` counts it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path

from tests.support.campaign import Habits, Settings, run_campaign

RUNS = 4  # kept going at once (issue 18: 3–5)


async def run(kills: int, keep: Path | None = None) -> None:
    settings = Settings.from_env(kills=kills, habits=Habits(target=RUNS), drain_s=300.0, evidence=keep is not None)
    print(f"{kills} kills, {RUNS} runs kept going, seed {settings.seed}; this takes about {kills * 8 // 60 + 1} min",
          flush=True)
    with contextlib.ExitStack() as stack:
        where = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-restarts-")))
        where.mkdir(parents=True, exist_ok=True)
        report = await run_campaign(settings, where)
    print()
    print(report.table())
    problems = report.problems()
    print("\nissue 18 done criteria: " + ("all hold" if not problems else "NOT met: " + "; ".join(problems)))
    f, turn_problems = report.figures, report.turn_problems()
    print(f"issue 32 done criteria (each accepted input one model turn's input): {f.only_in_history} only in history,"
          f" {f.twice} twice, {f.lost} lost, {len(f.stuck)} stuck: "
          + ("all hold" if not (turn_problems or problems) else "NOT met"))
    print()
    print(report.explanation(explained=None))
    print(f"command: .venv/bin/python -m bench.bench_restarts {kills}" + (f" --keep {keep}" if keep else ""))


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    keep = None
    if "--keep" in args:
        at = args.index("--keep")
        keep = Path(args[at + 1]).resolve()
        del args[at:at + 2]
    asyncio.run(run(int(args[0]) if args else 100, keep))


if __name__ == "__main__":
    main()
