"""Ask cards: a question with its options as buttons, then the same card showing the outcome.

A card is addressed by a *card id*, not the channel's ask id: ask ids restart with every
HumanChannel (each wake of a run gets a new one), so the hub names cards "<wake>-<ask id>"
("1-q2") and may bind a re-asked question to an older card. Buttons carry the card id.

A question the runtime asks itself carries a ``kind``: "budget" (the run reached its cost cap) is
drawn as its own card — the figures, one button per raise and Stop, words for anything else;
"approval" (a tool call waiting for a person) is drawn by approval_card.py, "plan" (a plan-first run's
plan waiting for review) by plan_card.py.
"""

from __future__ import annotations

import adapters.view.fmt as fmt
from adapters.ids import encode
from adapters.platform import Button, OutMessage
from adapters.view.approval_card import APPROVAL, render_approval
from adapters.view.card import AskCard
from adapters.view.plan_card import PLAN_REVIEW, render_plan

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


def render(run_id: str, card: AskCard, who: fmt.Who = fmt.plain_who) -> OutMessage:
    if card.kind == BUDGET:
        return render_budget(run_id, card, who)
    if card.kind == APPROVAL:
        return render_approval(run_id, card, who)
    if card.kind == PLAN_REVIEW:
        return render_plan(run_id, card, who)
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
    by = (who(card.by) if card.by else "someone") + (f" on {card.where}" if card.where else "")
    title = f"{icon} {head.format(who=by)}"
    if card.state == "answered":
        lines += ["", f"Answer: {fmt.clip(card.answer, 1500) or '(empty)'}"]
    elif card.state == "declined" and card.answer:
        lines += ["", f"Reason: {fmt.clip(card.answer, 1500)}"]
    return OutMessage(ask_key(card.card_id), "ask", "\n".join(lines), title=title, important=True, replace=True)


# ---- the budget card ------------------------------------------------------------------------------
BUDGET = "budget"
BUDGET_OUTCOMES: dict[str, tuple[str, str]] = {
    "timeout": ("⌛", "No answer in time — the run stopped at its cost cap"),
    "declined": ("🚫", "Declined by {who} — the run stopped at its cost cap"),
    "cancelled": ("✖️", "Closed — the run stopped before an answer"),
}


def _num(v: object) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def render_budget(run_id: str, card: AskCard, who: fmt.Who = fmt.plain_who) -> OutMessage:
    """"💰 Budget reached": spent / cap, then +$N buttons, Stop, and words; afterwards who decided what."""
    f = card.facts
    total, aside, cap = _num(f.get("total")), _num(f.get("aside")), _num(f.get("cap"))
    fields = [("Spent", fmt.money(total)), ("Cap", fmt.money(cap))]
    if aside > 0:
        fields.append(("Side questions", f"{fmt.money(aside)} (included)"))
    head = (f"The run has spent {fmt.money(total)} of its {fmt.money(cap)} cost cap and is paused." if card.open
            else f"The run had spent {fmt.money(total)} of its {fmt.money(cap)} cost cap.")
    if card.note:
        head += f"\n_{card.note}_"
    if card.open:
        raises = [o for o in card.options if o.startswith("+")]
        lines = [head, "", "Raise the cap to go on in the same session, or stop it here. Words work too: an "
                 "amount in them (“continue but wrap up within $2”) raises the cap by that much, and the "
                 "agent hears them. No answer in time stops the run."]
        buttons = []
        for i, opt in enumerate(card.options[:MAX_OPTION_BUTTONS]):
            if opt in raises:
                step = _amount(opt)
                label = f"{opt} (cap {fmt.money(cap + step)})" if step else opt
                buttons.append(Button(fmt.one_line(label, LABEL_MAX), encode("ans", run_id, card.card_id, i),
                                      "primary" if i == 0 else "default"))
            else:
                buttons.append(Button(fmt.one_line(opt, LABEL_MAX), encode("ans", run_id, card.card_id, i),
                                      "danger" if opt.casefold() == "stop" else "default"))
        key = card.card_id.split("-", 1)[-1]
        lines += ["", f"Reply `{key}: …` in the thread to answer in words."]
        buttons.append(Button("Answer in words…", encode("txt", run_id, card.card_id)))
        return OutMessage(ask_key(card.card_id), "ask", "\n".join(lines), title="💰 Budget reached",
                          fields=fields, buttons=buttons, important=True, replace=True, tone="danger")
    by = who(card.by) if card.by else "someone"
    if card.state == "answered":
        stop = card.answer.strip().casefold() == "stop"
        title = f"⏹️ Stopped at the cost cap by {by}" if stop else f"💰 Budget answered by {by}: " \
            f"{fmt.one_line(card.answer, 60) or '(empty)'}"
    else:
        icon, text = BUDGET_OUTCOMES.get(card.state, ("•", card.state))
        title = f"{icon} {text.format(who=by)}"
    return OutMessage(ask_key(card.card_id), "ask", head, title=title, fields=fields, important=True,
                      replace=True)


def _amount(option: str) -> float:
    try:
        return float(option.lstrip("+").lstrip("$"))
    except ValueError:
        return 0.0
