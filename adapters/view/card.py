"""AskCard: what a thread shows of one question (or approval, or budget stop): its options, then its outcome.

The data only; asks.py and approval_card.py draw it. Addressed by its card id ("<wake>-<ask id>", see asks.py),
never by the channel's ask id alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class AskCard:
    card_id: str
    ask_id: str
    question: str
    options: list[str] = field(default_factory=list)
    state: str = "asked"
    answer: str = ""
    by: str = ""  # the user who answered or declined, when the hub knows
    remaining: int = -1
    note: str = ""  # e.g. "asked again after the run was woken"
    where: str = ""  # the place it was settled from ("Slack", "the web page"), when the run shows in several
    kind: str = ""  # "" = the agent's question; "budget" = the run's cost cap was reached
    facts: dict[str, Any] = field(default_factory=dict)  # a budget card's figures: spent, aside, total, cap
    asked_at: float | None = None  # wall-clock time the channel asked it (from the event), when known

    @property
    def open(self) -> bool:
        return self.state == "asked"
