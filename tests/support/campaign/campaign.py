"""One restart campaign, start to count.

    model double (this process, survives every kill) ◄── the bot's CLIs (ANTHROPIC_BASE_URL)
          │ requests                                        ▲
          ▼                                                 │ HTTP API only
    progress ──► killer: kill at a moment, restart ──► bot process ◄── person: runs, answers, mail, interrupts
          │                                                             │ accepted inputs
          └──────────────────────► tally ◄──────────────── ledger ◄─────┘

Order: the double and the bot start → the person acts and the killer works through its plan (drawn
from the seed) → the last kill's restart → drain: no more kills, starts, mail or interrupts; open
questions are still answered until every run has finished, `drain_s` has passed or nothing has
happened for `quiet_s` (a run that does not come back by itself is not helped: it is stuck) → the
bot's own statuses are read for the table → the person stops, the bot is stopped → the count.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from flower_core.devmodel import ModelDouble
from flower_core.devmodel.server import isolated_env
from tests.support.campaign.botproc import BotProcess
from tests.support.campaign.killer import Killer, plan
from tests.support.campaign.ledger import Ledger
from tests.support.campaign.person import Habits, Person
from tests.support.campaign.progress import Progress
from tests.support.campaign.report import Report
from tests.support.campaign.script import Script
from tests.support.campaign.seqwatch import SeqStats
from tests.support.campaign.tally import tally

SEED_ENV = "FLOWER_CAMPAIGN_SEED"


@dataclass(frozen=True)
class Settings:
    kills: int = 20
    seed: int = 18
    habits: Habits = field(default_factory=Habits)
    drain_s: float = 120.0
    quiet_s: float = 30.0
    cli_retries: int = 1  # CLAUDE_CODE_MAX_RETRIES: the CLI's own retry loop stays short
    evidence: bool = False  # write <tmp>/evidence.json: every accepted input and every request the double got

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **kw: Any) -> Settings:
        """These settings (defaults, or `kw`), with the seed from FLOWER_CAMPAIGN_SEED when it is set."""
        raw = env.get(SEED_ENV, "").strip()
        if raw:
            try:
                kw["seed"] = int(raw)
            except ValueError:
                raise ValueError(f"{SEED_ENV} must be a whole number, got {raw!r}") from None
        return cls(**kw)


class _KilledMidReply(logging.Filter):
    """The double's server logs a reply cut off by a killed CLI as an error; here that is the point."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ConnectionError)  # aiohttp's ClientConnectionResetError is one


async def run_campaign(settings: Settings, tmp: Path) -> Report:
    quiet = _KilledMidReply()
    server_log = logging.getLogger("aiohttp.server")
    server_log.addFilter(quiet)
    try:
        return await _campaign(settings, tmp)
    finally:
        server_log.removeFilter(quiet)


async def _campaign(settings: Settings, tmp: Path) -> Report:
    script = Script.load()
    t0 = time.perf_counter()
    md = await ModelDouble(script.scenario).start()
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**isolated_env(md.base_url, home), "CLAUDE_CODE_MAX_RETRIES": str(settings.cli_retries)}
    # max_runs above the person's target: runs woken by an answer come on top of the ones kept going.
    bot = BotProcess(tmp / "root", tmp / "bot.log", env, max_runs=settings.habits.target + 2)
    ledger, seq = Ledger(), SeqStats()
    progress = Progress(md, script, ledger)
    kills = plan(random.Random(settings.seed), settings.kills)
    statuses: Counter[str] = Counter()
    async with aiohttp.ClientSession() as session:
        person = Person(session, bot.base, ledger, progress, random.Random(settings.seed + 1), settings.habits, seq)
        killer = Killer(bot, person, progress, ledger)
        background = [asyncio.ensure_future(progress.follow()), asyncio.ensure_future(person.live())]
        try:
            await bot.start()
            await killer.run(kills)
            person.draining = True
            await drain(progress, ledger, settings)
            listed = await person.get("/api/runs")
            statuses.update(str(r["status"]) for r in (listed or {}).get("runs", [])
                            if str(r["id"]) in ledger.runs())
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await person.close()
            await bot.stop()
            await md.stop()
    progress.update()
    figures = tally(ledger.accepted, md.requests, script, ledger.not_accepted)
    if settings.evidence:
        _write_evidence(tmp / "evidence.json", ledger, md, killer.stats.at)
    return Report(figures, killer.stats, seq, ledger, settings.seed, time.perf_counter() - t0, bot.ready_s,
                  bot.term_hung, bot.term_left, dict(statuses), log_errors=_log_errors(bot.log_path),
                  log_tail=bot.tail(80))


async def drain(progress: Progress, ledger: Ledger, settings: Settings) -> None:
    """Until every run has finished (as the model double saw it), the deadline, or a quiet spell."""
    loop = asyncio.get_running_loop()
    end = loop.time() + settings.drain_s

    def all_finished() -> bool:
        progress.update()
        return all(progress.of(run).ended for run in ledger.runs())

    while True:
        progress.changed.clear()
        ledger.changed.clear()
        left = end - loop.time()
        if all_finished() or left <= 0:
            return
        waits = [asyncio.ensure_future(progress.changed.wait()), asyncio.ensure_future(ledger.changed.wait())]
        done, pending = await asyncio.wait(waits, timeout=min(settings.quiet_s, left),
                                           return_when=asyncio.FIRST_COMPLETED)
        for w in pending:
            w.cancel()
        if not done:
            return  # nothing reached the model and nothing was accepted for quiet_s: what is left is stuck


def _write_evidence(path: Path, ledger: Ledger, md: ModelDouble, kills: list[tuple[float, str]]) -> None:
    """What the count was made from, for a person to check it by hand (tests/support/campaign/evidence.py reads it)."""
    data = {"accepted": [asdict(a) for a in ledger.accepted], "not_accepted": [asdict(a) for a in ledger.not_accepted],
            "kills": kills,
            "requests": [{"path": r.path, "turn": r.turn, "served": r.served, "received_at": r.received_at,
                          "reply_text": r.reply_text, "reply_tool_ids": list(r.reply_tool_ids),
                          "body": r.body} for r in md.requests]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _log_errors(path: Path) -> int:
    """ERROR lines and tracebacks in the bot's log over all its lives (shown, not counted)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if " ERROR " in line or line.startswith("Traceback"))
