"""CardRules: a run's question cards — which one a person means, whether it still takes an answer, and
which platform messages show it.

A live run answers from its view; a run asleep since a restart from its card ledger and the state
store, so an old card stays answerable. `check` is the one rule for "may this card be answered now"
(the hub's intents and the web API's status codes both come from it), and for what a late click is
told, in this order:

===========================================  ===========  =================================================
the card                                     problem      the line for the person who clicked
===========================================  ===========  =================================================
not known to the run                         UNKNOWN      I don't know that question.
answered or declined by someone              SETTLED      … already settled (answered by Bea)[ on Slack].
closed by a restart: not asked again         SETTLED      … asked before the bot restarted, and the run …
otherwise closed, or open, and the run ended ENDED        This run has ended (stopped); its questions …
otherwise closed (timed out, over budget…)   SETTLED      … already settled (timeout).
someone's answer on its way                  HELD         An answer from Bea is already waiting …
===========================================  ===========  =================================================
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from adapters.hub.ledger import CardLedger, CardRecord
from adapters.hub.registry import RunRegistry, has_ended
from adapters.platform import OutMessage, ThreadRef
from adapters.state import StateStore
from adapters.view import AskCard
from adapters.view import fmt as _fmt
from adapters.view.asks import ask_key


class CardProblem(StrEnum):
    NONE = ""
    UNKNOWN = "unknown"  # no such card in this run
    SETTLED = "settled"  # answered, declined, timed out or closed
    ENDED = "ended"  # the run has ended (done, failed, stopped): its questions are closed
    HELD = "held"  # someone's answer is already on its way to the run


@dataclass(frozen=True)
class CardCheck:
    card: AskCard | None  # the card to answer (ask_id "" when the run has not asked it again yet)
    problem: CardProblem = CardProblem.NONE
    message: str = ""  # what to tell the person when there is a problem

    def __bool__(self) -> bool:
        return self.problem is CardProblem.NONE


@dataclass(frozen=True)
class OpenCard:
    card_id: str
    question: str
    options: list[str]
    waited_s: float | None  # None when the run is asleep (nobody is timing it now)
    kind: str = ""  # "" a question, "approval" a tool call waiting for a person, "budget" the cost cap
    facts: dict[str, Any] = field(default_factory=dict)  # an approval's tool and input, a plan's text


def ended_line(status: str) -> str:
    """What a person acting on a question of a run that has ended is told."""
    return f"This run has ended ({status}); its questions are closed."


class CardRules:
    def __init__(self, registry: RunRegistry, store: StateStore, *, who: Callable[[str], str] = _fmt.plain_who) -> None:
        self.registry, self.store, self.who = registry, store, who

    def _ledger(self, run_id: str) -> CardLedger | None:
        live = self.registry.live.get(run_id)
        if live is not None:
            return live.ledger
        record = self.store.get_run(run_id)
        return CardLedger(record.run_dir) if record is not None else None

    # ---- may it be answered --------------------------------------------------------------------
    def check(self, run_id: str, card_id: str) -> CardCheck:
        live = self.registry.live.get(run_id)
        open_card = live.view.open_card(card_id) if live is not None else None
        ledger = self._ledger(run_id)
        rec = ledger.get(card_id) if ledger is not None else None
        if rec is None and open_card is None and ledger is not None and live is None:
            stored = self.store.get_ask_message(run_id, card_id)  # the ledger is gone: the store remembers
            if stored is not None:
                rec = ledger.asked(card_id, stored.question, list(stored.options))
        if open_card is None and rec is None:
            return CardCheck(None, CardProblem.UNKNOWN, "I don't know that question.")
        if open_card is None and rec is not None and (late := self._late(run_id, rec)) is not None:
            return late
        if rec is not None and rec.held is not None:
            return CardCheck(None, CardProblem.HELD,
                             f"An answer from {self.who(rec.held_by)} is already waiting for that question.")
        if open_card is not None:
            return CardCheck(open_card)
        assert rec is not None
        return CardCheck(AskCard(rec.card_id, "", rec.question, list(rec.options)))

    def _late(self, run_id: str, rec: CardRecord) -> CardCheck | None:
        """Why a card no live question shows takes no answer (the table above), or None: it still does."""
        if rec.state != "asked" and rec.by:
            place = f" on {rec.place}" if rec.place else ""
            return CardCheck(None, CardProblem.SETTLED,
                             f"That question is already settled ({rec.state} by {self.who(rec.by)}){place}.")
        if rec.state != "asked" and rec.left_behind:
            return CardCheck(None, CardProblem.SETTLED, "That question was asked before the bot restarted, and the "
                             "run went on without asking it again.")
        record = self.store.get_run(run_id)
        if record is not None and has_ended(record):  # (just ended: it may still be flushing its thread)
            return CardCheck(None, CardProblem.ENDED, ended_line(record.status))
        if rec.state != "asked":
            return CardCheck(None, CardProblem.SETTLED, f"That question is already settled ({rec.state}).")
        return None

    def record(self, run_id: str, card_id: str) -> CardRecord | None:
        ledger = self._ledger(run_id)
        return ledger.get(card_id) if ledger is not None else None

    # ---- which card a person means -------------------------------------------------------------
    def open_cards(self, run_id: str) -> list[OpenCard]:
        live = self.registry.live.get(run_id)
        if live is not None:
            now = time.time()
            return [OpenCard(c.card_id, c.question, list(c.options),
                             round(max(0.0, now - c.asked_at), 1) if c.asked_at is not None else None,
                             c.kind, dict(c.facts))
                    for c in live.view.open_cards()]
        ledger = self._ledger(run_id)
        return [OpenCard(c.card_id, c.question, list(c.options), None, c.kind, dict(c.facts))
                for c in (ledger.open_cards() if ledger is not None else [])]

    def options(self, run_id: str, card_id: str) -> list[str]:
        live = self.registry.live.get(run_id)
        card = live.view.open_card(card_id) if live is not None else None
        if card is not None:
            return card.options
        stored = self.store.get_ask_message(run_id, card_id)
        return list(stored.options) if stored is not None else []

    def open_ids(self, run_id: str) -> list[str]:
        return [c.card_id for c in self.open_cards(run_id)]

    def by_key(self, run_id: str, key: str) -> str | None:
        """The open card a person means by "q2" (its ask id; after a wake, the newest such card)."""
        matches = [cid for cid in self.open_ids(run_id) if cid.split("-", 1)[-1].lower() == key.lower()]
        return matches[-1] if matches else None

    def by_message(self, run_id: str, thread: ThreadRef, message_id: str) -> str | None:
        """The open card shown by `message_id` in `thread` (home thread or a mirror)."""
        for card_id in self.open_ids(run_id):
            stored = self.store.get_ask_message(run_id, card_id)
            if (stored is not None and stored.message_id == message_id) or \
                    self.store.get_message(thread, ask_key(card_id)) == message_id:
                return card_id
        return None

    # ---- which platform messages show them ------------------------------------------------------
    def recorder(self, run_id: str, thread: ThreadRef) -> Callable[[OutMessage, str], None]:
        """An outbox's on_sent for one thread of a run: the home thread's card and receipt ids are
        kept for restarts (every thread's key -> message ids are kept by its outbox)."""
        def sent(msg: OutMessage, message_id: str) -> None:
            live = self.registry.live.get(run_id)
            if live is None or thread != live.record.thread:
                return
            if msg.kind == "ask":
                card_id = msg.key.removeprefix("ask:")
                rec = live.ledger.get(card_id)
                if rec is not None:
                    self.store.save_ask_message(run_id, card_id, message_id, rec.question, rec.options)
            elif msg.kind == "receipt":
                mail_id = msg.key.rsplit(":", 1)[-1]
                self.store.save_receipt(run_id, mail_id, message_id, msg.state or "queued")
        return sent
