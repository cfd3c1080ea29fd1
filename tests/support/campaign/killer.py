"""When to kill: a plan drawn from the seed, then each kill at its moment, then a restart at once.

Moments (weights in MOMENTS):
- `random`: a random time after the bot answers again;
- `after_answer`: 0–600 ms after the API accepted an answer;
- `question_waits`: as soon as the person sees a live run's question it has not answered yet;
- `interrupt`: 0–300 ms after an interrupt is sent (its answer may or may not have come back);
- `before_ask`: 0–150 ms after the model double served a turn that calls mcp__human__ask, before
  the question can reach the bot's channel.
A moment that does not come within ARM_TIMEOUT_S kills anyway (counted in `missed`). Signals: SIGKILL
to the process group (most), else SIGTERM to the group (a service stop). Nothing waits for the bot
to settle: the next moment is armed as soon as its API answers.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field

from tests.support.campaign.botproc import BotProcess
from tests.support.campaign.ledger import Ledger
from tests.support.campaign.person import Person
from tests.support.campaign.progress import Progress
from tests.support.waiting import until

MOMENTS = {"random": 4, "after_answer": 3, "question_waits": 2, "interrupt": 1, "before_ask": 2}
SIGKILL_SHARE = 2 / 3
ARM_TIMEOUT_S = 20.0
RANDOM_S = (0.5, 10.0)


@dataclass(frozen=True)
class Kill:
    moment: str
    sig: signal.Signals
    delay_s: float  # the random wait, or the lag after the targeted moment


def plan(rng: random.Random, kills: int) -> list[Kill]:
    names, weights = list(MOMENTS), list(MOMENTS.values())
    out = []
    for _ in range(kills):
        moment = rng.choices(names, weights)[0]
        sig = signal.SIGKILL if rng.random() < SIGKILL_SHARE else signal.SIGTERM
        lag = {"random": RANDOM_S, "after_answer": (0.0, 0.6), "interrupt": (0.0, 0.3),
               "before_ask": (0.0, 0.15), "question_waits": (0.0, 0.0)}[moment]
        out.append(Kill(moment, sig, rng.uniform(*lag)))
    return out


@dataclass
class KillStats:
    done: Counter[str] = field(default_factory=Counter)  # "SIGKILL after_answer"…
    missed: Counter[str] = field(default_factory=Counter)  # moments that did not come in time
    at: list[tuple[float, str]] = field(default_factory=list)  # (time.perf_counter(), what) of each kill

    def by_signal(self, sig: signal.Signals) -> int:
        return sum(n for k, n in self.done.items() if k.startswith(sig.name))


class Killer:
    def __init__(self, bot: BotProcess, person: Person, progress: Progress, ledger: Ledger) -> None:
        self.bot, self.person, self.progress, self.ledger = bot, person, progress, ledger
        self.stats = KillStats()

    async def run(self, kills: list[Kill]) -> None:
        for kill in kills:
            if not await self._arm(kill):
                self.stats.missed[kill.moment] += 1
            self.stats.at.append((time.perf_counter(), f"killed: {kill.sig.name} {kill.moment}"))
            await self.bot.kill(kill.sig)
            self.stats.done[f"{kill.sig.name} {kill.moment}"] += 1
            await self.bot.start()

    async def _arm(self, kill: Kill) -> bool:
        """Wait for the kill's moment; False when it did not come within ARM_TIMEOUT_S."""
        try:
            if kill.moment == "random":
                await asyncio.sleep(kill.delay_s)
            elif kill.moment == "after_answer":
                seen = len(self.ledger.of("answer"))
                await until(self.ledger.changed, lambda: len(self.ledger.of("answer")) > seen, ARM_TIMEOUT_S)
            elif kill.moment == "question_waits":
                await until(self.person.changed, lambda: bool(self.person.waiting), ARM_TIMEOUT_S)
            elif kill.moment == "interrupt":
                await until(self.person.changed, self.person.interrupt_now, ARM_TIMEOUT_S)
            elif kill.moment == "before_ask":
                seen = self.progress.asks_served
                await until(self.progress.changed, lambda: self.progress.asks_served > seen, ARM_TIMEOUT_S)
        except TimeoutError:
            return False
        if kill.moment != "random":
            await asyncio.sleep(kill.delay_s)
        return True
