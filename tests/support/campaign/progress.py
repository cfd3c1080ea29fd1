"""Where each run's conversation is, as the model double saw it (never as the bot reports it).

The person uses it to stop writing to a run whose model has only its final inbox reads left, the
killer to strike right when the model is about to ask. A request belongs to the run whose task token
is in its first user message. Bodies of requests already read are trimmed to what the tally reads
(messages and metadata): the CLI's tool list and system prompt would otherwise hold hundreds of
megabytes over a long campaign.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from flower_core.devmodel import ModelDouble, RecordedRequest
from tests.support.campaign.ledger import Ledger
from tests.support.campaign.script import Script

KEPT_KEYS = ("messages", "metadata")


@dataclass
class RunProgress:
    max_turn: int = -1  # the furthest scripted turn served
    asks_served: int = 0
    ended: bool = False  # the model said its last word


@dataclass
class Progress:
    md: ModelDouble
    script: Script
    ledger: Ledger
    runs: dict[str, RunProgress] = field(default_factory=dict)
    asks_served: int = 0  # over all runs
    requests: int = 0  # model requests read so far (any run)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    _read: int = 0

    def owner(self, rec: RecordedRequest, tokens: dict[str, str]) -> str | None:
        text = rec.first_user_text
        return next((run for token, run in tokens.items() if token in text), None)

    def update(self) -> None:
        """Read the requests that arrived since the last call."""
        new = self.md.requests[self._read:]
        if not new:
            return
        self._read += len(new)
        tokens = {token: run for run, token in self.ledger.runs().items()}
        for rec in new:
            if rec.path != "/v1/messages":
                continue
            self.requests += 1
            run = self.owner(rec, tokens)
            if run is not None:
                p = self.runs.setdefault(run, RunProgress())
                if rec.served == "turn":
                    p.max_turn = max(p.max_turn, rec.turn)
                if self.script.served_ask(rec.turn, rec.served):
                    p.asks_served += 1
                    self.asks_served += 1
                p.ended = p.ended or self.script.is_end(rec.turn, rec.served)
            rec.body = {k: rec.body[k] for k in KEPT_KEYS if k in rec.body}
        self.changed.set()

    def of(self, run_id: str) -> RunProgress:
        return self.runs.get(run_id, RunProgress())

    def in_stretch(self, run_id: str) -> bool:
        """Only the final inbox reads (or nothing) are left: mail or an interrupt now may come too late."""
        p = self.of(run_id)
        return p.ended or p.max_turn >= self.script.stretch

    async def follow(self) -> None:
        """Keep reading as requests arrive (runs for the whole campaign)."""
        while True:
            await self.md.wait_for(lambda reqs: len(reqs) > self._read, timeout=3600)
            self.update()
