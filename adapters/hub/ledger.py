"""CardLedger: the ask cards of one run, on disk next to the run, so they outlive the bot process.

The state store knows which platform message shows a card; the ledger knows what a card asked,
whether it is still open and what answer is being held for it. After a restart that is what lets a
click on an old card wake the run, and lets the woken run's re-asked question land on the old
card (see wake.py). One small JSON file per run (`<run_dir>/bridge/cards.json`), rewritten
atomically on each change; asks are rare, so the cost is nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower_core import AskState

log = logging.getLogger(__name__)

# A card's facts are kept beside it when they fit (an approval's whole input can be a file's content).
FACTS_KEEP_CHARS = 20_000


def same_question(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def card_gen(card_id: str) -> int:
    """The wake a card id was made in ("2-q1" -> 2); 0 if it does not say."""
    head = card_id.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


@dataclass
class CardRecord:
    card_id: str
    question: str
    options: list[str] = field(default_factory=list)
    state: AskState = AskState.ASKED
    by: str = ""
    answer: str = ""
    held: str | None = None  # the answer being given (durable in the run's intent log): one at a time
    held_by: str = ""
    held_place: str = ""  # where it was given, when the run shows in several places ("Slack")
    place: str = ""  # where the settling answer was given (as its card names it; "" when it does not)
    left_behind: bool = False  # closed because the run, woken after a restart, went on without asking it again
    kind: str = ""  # the card's kind ("" a question, "approval", "plan", "budget"): known while the run sleeps
    facts: dict[str, Any] = field(default_factory=dict)  # its facts (AskPayload.facts), when they fit


def _kept(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts to write beside a card: all of them when they fit, else all but the call's input."""
    try:
        if len(json.dumps(facts, ensure_ascii=False)) <= FACTS_KEEP_CHARS:
            return dict(facts)
    except (TypeError, ValueError):
        pass
    return {k: v for k, v in facts.items() if k != "input" and isinstance(v, (str, int, float, bool))
            and len(str(v)) <= FACTS_KEEP_CHARS // 4}


class CardLedger:
    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / "bridge" / "cards.json"
        self.cards: dict[str, CardRecord] = {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            names = {f.name for f in dataclasses.fields(CardRecord)}
            for item in raw.get("cards", []):
                rec = CardRecord(**{k: v for k, v in item.items() if k in names})
                rec.state = AskState(rec.state)
                self.cards[rec.card_id] = rec
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError) as exc:  # a corrupt ledger only costs old cards
            log.warning("card ledger %s unreadable: %r", self.path, exc)

    def get(self, card_id: str) -> CardRecord | None:
        return self.cards.get(card_id)

    def asked(self, card_id: str, question: str, options: list[str], *, kind: str = "",
              facts: dict[str, Any] | None = None) -> CardRecord:
        rec = self.cards.get(card_id)
        if rec is None:
            rec = self.cards[card_id] = CardRecord(card_id, question, list(options))
        rec.state = AskState.ASKED
        if kind:
            rec.kind = kind
        if facts:
            rec.facts = _kept(facts)
        self._save()
        return rec

    def settled(self, card_id: str, state: str, *, by: str = "", answer: str = "", place: str = "",
                left_behind: bool = False) -> None:
        rec = self.cards.get(card_id)
        if rec is None:
            return
        rec.state, rec.by, rec.answer = AskState(state), by or rec.by, answer
        rec.place, rec.left_behind = place or rec.place, left_behind
        rec.held, rec.held_by, rec.held_place = None, "", ""
        self._save()

    def hold(self, card_id: str, answer: str, by: str, place: str = "") -> None:
        rec = self.cards.get(card_id)
        if rec is not None:
            rec.held, rec.held_by, rec.held_place = answer, by, place
            self._save()

    def release(self, card_id: str) -> None:
        """The held answer did not apply (the question had closed): the card takes answers again."""
        rec = self.cards.get(card_id)
        if rec is not None and rec.held is not None:
            rec.held, rec.held_by, rec.held_place = None, "", ""
            self._save()

    def open_cards(self) -> list[CardRecord]:
        return [r for r in self.cards.values() if r.state == AskState.ASKED]

    def match(self, question: str, before_gen: int) -> CardRecord | None:
        """An open card from an earlier wake that asked the same question (held answers first)."""
        found = [r for r in self.open_cards() if card_gen(r.card_id) < before_gen and same_question(r.question,
                                                                                                      question)]
        found.sort(key=lambda r: (r.held is None, card_gen(r.card_id)))
        return found[0] if found else None

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            data = {"cards": [dataclasses.asdict(r) for r in self.cards.values()]}
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:  # losing the ledger loses re-ask binding, never the run
            log.warning("card ledger %s not saved: %r", self.path, exc)
