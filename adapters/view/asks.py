"""Ask cards: a question with its options as buttons, then the same card showing the outcome.

A card is addressed by a *card id*, not the channel's ask id: ask ids restart with every
HumanChannel (each wake of a run gets a new one), so the hub names cards "<wake>-<ask id>"
("1-q2") and may bind a re-asked question to an older card. Buttons carry the card id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adapters.ids import encode
from adapters.surface import Button, OutMessage
from adapters.view import fmt

MAX_OPTION_BUTTONS = 20  # leaves room for "answer in words" and "decline" under every platform's cap
LABEL_MAX = 70

# outcome -> (icon, headline); "{who}" is the person who settled it when known.
OUTCOMES: dict[str, tuple[str, str]] = {
    "answered": ("✅", "Answered by {who}"),
    "declined": ("🚫", "Declined by {who}"),
    "timeout": ("⌛", "No answer in time — the agent went on with its own judgement"),
    "over_budget": ("🧮", "Not asked — the question budget is spent; the agent decides on its own"),
    "invalid": ("⚠️", "The agent's question was malformed and was refused"),
    "cancelled": ("✖️", "Closed — the run stopped before an answer"),
}


def ask_key(card_id: str) -> str:
    return f"ask:{card_id}"


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

    @property
    def open(self) -> bool:
        return self.state == "asked"


def render(run_id: str, card: AskCard, who: fmt.Who = fmt.plain_who) -> OutMessage:
    lines = [card.question]
    if card.options:
        lines.append("")
        lines += [f"{i + 1}. {opt}" for i, opt in enumerate(card.options)]
    if card.note:
        lines += ["", f"_{card.note}_"]
    if card.open:
        title = "❓ Question from the agent"
        if card.remaining >= 0:
            title += f" ({card.remaining} left)"
        buttons = [Button(fmt.one_line(opt, LABEL_MAX), encode("ans", run_id, card.card_id, i),
                          "primary" if i == 0 else "default")
                   for i, opt in enumerate(card.options[:MAX_OPTION_BUTTONS])]
        key = card.card_id.split("-", 1)[-1]
        lines += ["", f"Reply `{key}: …` in the thread to answer in words."]
        buttons.append(Button("Answer in words…", encode("txt", run_id, card.card_id)))
        buttons.append(Button("Decline", encode("dec", run_id, card.card_id), "danger"))
        return OutMessage(ask_key(card.card_id), "ask", "\n".join(lines), title=title, buttons=buttons,
                          important=True, replace=True)
    icon, head = OUTCOMES.get(card.state, ("•", card.state))
    title = f"{icon} {head.format(who=who(card.by) if card.by else 'someone')}"
    if card.state == "answered":
        lines += ["", f"Answer: {fmt.clip(card.answer, 1500) or '(empty)'}"]
    elif card.state == "declined" and card.answer:
        lines += ["", f"Reason: {fmt.clip(card.answer, 1500)}"]
    return OutMessage(ask_key(card.card_id), "ask", "\n".join(lines), title=title, important=True, replace=True)
