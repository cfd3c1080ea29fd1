"""Which question card a person means: by its option list, its reply key ("q2") or the message they
replied to. Live runs answer from their view; runs asleep since a restart from their card ledger
and the state store, so an old card stays answerable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from adapters.hub.ledger import CardLedger
from adapters.state import StateStore
from adapters.surface import ThreadRef
from adapters.view.asks import ask_key

if TYPE_CHECKING:
    from adapters.hub.runs import LiveRun


class Cards:
    def __init__(self, store: StateStore, live: Mapping[str, LiveRun]) -> None:
        self.store, self.live = store, live

    def options(self, run_id: str, card_id: str) -> list[str]:
        live = self.live.get(run_id)
        card = live.view.open_card(card_id) if live is not None else None
        if card is not None:
            return card.options
        stored = self.store.get_ask_message(run_id, card_id)
        return list(stored.options) if stored is not None else []

    def open_ids(self, run_id: str) -> list[str]:
        live = self.live.get(run_id)
        if live is not None:
            return [c.card_id for c in live.view.open_cards()]
        record = self.store.get_run(run_id)
        return [c.card_id for c in CardLedger(record.run_dir).open_cards()] if record is not None else []

    def by_key(self, run_id: str, key: str) -> str | None:
        """The open card a person means by "q2" (its ask id; after a wake, the newest such card)."""
        matches = [cid for cid in self.open_ids(run_id) if cid.split("-", 1)[-1].lower() == key]
        return matches[-1] if matches else None

    def by_message(self, run_id: str, thread: ThreadRef, message_id: str) -> str | None:
        """The open card shown by `message_id` in `thread` (home thread or a mirror)."""
        for card_id in self.open_ids(run_id):
            stored = self.store.get_ask_message(run_id, card_id)
            if (stored is not None and stored.message_id == message_id) or \
                    self.store.get_message(thread, ask_key(card_id)) == message_id:
                return card_id
        return None
