"""Ask: one question put to the human, and the Event that reports it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import flower_core.human.texts as texts
from flower_core.events import Event
from flower_core.lang import Catalogue, catalogue


class AskState(StrEnum):
    """The states an Ask can be in. "asked" is the only waiting one; the rest are outcomes. "cancelled"
    is ours: the waiting coroutine was cancelled (run stopped, or withdrawn), so front ends close the card."""

    ASKED = "asked"
    ANSWERED = "answered"
    TIMEOUT = "timeout"
    DECLINED = "declined"
    OVER_BUDGET = "over_budget"
    INVALID = "invalid"
    CANCELLED = "cancelled"


ASK_STATES = tuple(AskState)


@dataclass
class Ask:
    """A question to the human. `answer` holds what the human said (a decline's reason too)."""

    id: str
    question: str
    options: list[str] = field(default_factory=list)
    asked_at: float = field(default_factory=time.time)
    state: AskState = AskState.ASKED
    answer: str = ""
    settled_at: float | None = field(default=None, repr=False)
    # The text the model got back for this question (fixed text, answer, or what was wrong).
    reply: str = field(default="", repr=False)
    # A question the runtime itself asks (e.g. "budget"), not the model: front ends may render it
    # specially from ``facts``; it never counts against the model's question quota.
    kind: str = ""
    facts: dict[str, Any] = field(default_factory=dict, repr=False)
    # Asked again by a new process from what the old one left (a parked or cut-off question): the
    # event says so, so an answer given to the old process can be applied to it.
    restored: bool = False

    @property
    def waited_s(self) -> float:
        """Seconds between asking and the outcome (or now, while waiting), one decimal."""
        end = self.settled_at if self.settled_at is not None else time.time()
        return round(max(0.0, end - self.asked_at), 1)

    @property
    def settled(self) -> bool:
        return self.state != AskState.ASKED

    def event(self, remaining: int = 0) -> Event:
        payload: dict[str, Any] = {
            "id": self.id,
            "options": list(self.options),
            "state": self.state,
            "answer": self.answer,
            "remaining": -1 if self.kind else remaining,  # the quota is the model's, not the runtime's
            "asked_at": self.asked_at,
            **({"restored": True} if self.restored else {}),
        }
        if self.kind:
            payload = {**self.facts, "kind": self.kind, **payload}
        return Event("ask", text=self.question, payload=payload, raw=self)


def check_question(question: object, options: object, lang: Catalogue | None = None) -> tuple[str, list[str], str]:
    """Clean the model's input. Returns (question, options, problem) — problem is "" when valid, else the
    text the model reads (in ``lang``, the seed's by default)."""
    said = catalogue(lang)
    if not isinstance(question, str) or not question.strip():
        return ("" if not isinstance(question, str) else question.strip()), [], said["ask.invalid_empty"]
    q = texts.cap(question.strip(), marker=said["text.truncated"])
    bad_options = said.fill("ask.invalid_options", max=texts.MAX_OPTIONS)
    if options is None:
        return q, [], ""
    if not isinstance(options, list | tuple) or len(options) > texts.MAX_OPTIONS:
        return q, [], bad_options
    if not all(isinstance(o, str) and o.strip() for o in options):
        return q, [], bad_options
    opts = [texts.cap(o.strip(), texts.MAX_OPTION_CHARS, said["text.truncated"]) for o in options]
    if len(set(opts)) != len(opts):
        return q, [], bad_options
    return q, opts, ""
