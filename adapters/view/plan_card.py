"""The plan card: the plan a plan-first run presents (flower_core/human/plan_review.py), then what was decided.

    📋 The agent's plan — nothing changes before it is approved
    <the plan, markdown, cut at PREVIEW_CHARS>            [Approve and go] [Approve, ask before edits] [Keep planning…]
    (📎 the whole plan as a file beside it, when it is longer)
        ↓ decided
    ✅ Plan approved by Ana on Slack — the agent goes on
    ✅ Plan approved by Ana — edits and commands will ask first
    📝 Ana asked for more planning: "add tests first"

The options travel by index like a question's (the first two approve); "Keep planning…" opens the words form
(what the agent reads as feedback before it presents a new plan). Pure: no I/O.
"""

from __future__ import annotations

import adapters.view.fmt as fmt
from adapters.ids import encode
from adapters.platform import Button, OutMessage
from adapters.platform.messages import FileRef
from adapters.view.card import AskCard
from adapters.view.shares import beside_path, human_size
from flower_core.human.plan_review import GO, GO_ASK, REVISE, decision_of, outcome

PLAN_REVIEW = "plan"  # the ask kind (flower_core.human.plan_review.KIND)
PREVIEW_CHARS = 2500  # of the plan on the card (Slack's section text stops at 3000)
SETTLED_CHARS = 600  # of the plan left on a decided card
OUTCOMES: dict[str, tuple[str, str]] = {
    "cancelled": ("✖️", "Closed — the run was interrupted or stopped before a decision; it is still planning"),
    "timeout": ("⌛", "Not reviewed in time"),
}


def plan_text(card: AskCard) -> str:
    text = card.facts.get("plan")
    return text if isinstance(text, str) else ""


def decision(card: AskCard) -> str:
    """go | go_ask | revise for a decided card (an option, its number, or words: plan_review's one rule)."""
    return decision_of(card.answer)[0] if card.state == "answered" else REVISE


def render_plan(run_id: str, card: AskCard, who: fmt.Who = fmt.plain_who) -> OutMessage:
    plan = plan_text(card).strip() or "(the agent presented an empty plan)"
    key = f"ask:{card.card_id}"
    if card.open:
        lines = [fmt.clip(plan, PREVIEW_CHARS)]
        if len(plan) > PREVIEW_CHARS:
            lines += ["", "_The whole plan is in the file below._"]
        if card.note:
            lines += ["", f"_{card.note}_"]
        lines += ["", "Keep planning… asks for words the agent reads as feedback; it then presents a new plan."]
        buttons = [Button(fmt.one_line(opt, 70), encode("ans", run_id, card.card_id, i), style)
                   for i, (opt, style) in enumerate(zip(card.options[:2], ("primary", "default"), strict=False))]
        buttons.append(Button("Keep planning…", encode("txt", run_id, card.card_id)))
        return OutMessage(key, "ask", "\n".join(lines), title="📋 The agent's plan — nothing changes before it is "
                          "approved", buttons=buttons, important=True, replace=True)
    lines = [fmt.clip(plan, SETTLED_CHARS)]
    by = (who(card.by) if card.by else "someone") + (f" on {card.where}" if card.where else "")
    if card.state in ("answered", "declined") and decision(card) == GO:
        title = f"✅ Plan approved by {by} — the agent goes on"
    elif card.state in ("answered", "declined") and decision(card) == GO_ASK:
        title = f"✅ Plan approved by {by} — edits and commands will ask first"
    elif card.state in ("answered", "declined"):
        title = f"📝 {by} asked for more planning"
        words = outcome(card.state, card.answer)[1]
        if words:
            lines += ["", f"Feedback: {fmt.clip(words, 1500)}"]
    else:
        icon, text = OUTCOMES.get(card.state, ("•", card.state))
        title = f"{icon} {text}"
    return OutMessage(key, "ask", "\n".join(lines), title=title, important=True, replace=True)


def whole_plan(run_id: str, card: AskCard) -> OutMessage | None:
    """The whole plan as a file posted with its card, when the card cannot show it all."""
    path, chars, size = (card.facts.get(k) for k in ("plan_file", "plan_chars", "plan_bytes"))
    if card.kind != PLAN_REVIEW or not isinstance(path, str) or not path or not isinstance(chars, int):
        return None
    if chars <= PREVIEW_CHARS:
        return None
    name = path.replace("\\", "/").rsplit("/", 1)[-1] or "plan.md"
    size = size if isinstance(size, int) else chars
    text = f"📎 The whole plan the card above asks about: {name} ({chars} characters, {human_size(size)})"
    return OutMessage(key=f"plan:{card.card_id}", kind="notice", text=text, important=True, replace=False,
                      attachment=FileRef(path, name, size, run_id=run_id, beside=beside_path(path)))
