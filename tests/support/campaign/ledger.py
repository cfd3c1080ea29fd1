"""What the person said and the API accepted: every input with its unique token and the moment it was accepted.

Tokens are `<kind>-<12 hex>`: the same length for every kind and random, so no token is part of
another and each is counted by plain substring search in what the model received. An input is
*accepted* only when the API answered 2xx with `"ok": true`; refusals and calls cut off by a kill
are kept apart (`refused`, `unanswered`) and never expected to reach the model.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

KINDS = ("task", "answer", "mail", "interrupt")
PREFIX = {"task": "task", "answer": "ansr", "mail": "mail", "interrupt": "word"}


@dataclass(frozen=True)
class Accepted:
    kind: str  # one of KINDS
    run_id: str
    token: str
    at: float  # time.perf_counter() when the 2xx arrived: the clock RecordedRequest.received_at uses
    detail: str = ""  # the question id for an answer


@dataclass
class Ledger:
    accepted: list[Accepted] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)  # "answer 409", "mail 404"…
    unanswered: Counter[str] = field(default_factory=Counter)  # calls the bot never answered (it died)
    not_accepted: list[Accepted] = field(default_factory=list)  # refused or unanswered, with when it was sent
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # set on every accepted input

    @staticmethod
    def token(kind: str) -> str:
        """A fresh token (not from the campaign's seeded generator: drawing one must not shift its plan)."""
        return f"{PREFIX[kind]}-{uuid.uuid4().hex[:12]}"

    def accept(self, kind: str, run_id: str, token: str, detail: str = "") -> Accepted:
        entry = Accepted(kind, run_id, token, time.perf_counter(), detail)
        self.accepted.append(entry)
        self.changed.set()
        return entry

    def not_taken(self, kind: str, run_id: str, token: str, why: str) -> None:
        """An input the API did not accept (`why`: "answer 409", or the kind alone when no answer came)."""
        (self.refused if " " in why else self.unanswered)[why] += 1
        self.not_accepted.append(Accepted(kind, run_id, token, time.perf_counter(), why))

    def of(self, kind: str) -> list[Accepted]:
        return [a for a in self.accepted if a.kind == kind]

    def runs(self) -> dict[str, str]:
        """run id -> its task token, for every run the API accepted."""
        return {a.run_id: a.token for a in self.accepted if a.kind == "task"}
