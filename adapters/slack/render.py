"""Neutral OutMessages as Block Kit, built with slack-sdk's block models (pure, no I/O).

Layout of every message, top to bottom, each part only when the message has it:

=========  ============================================================================
header     the title (plain text, ≤150)
context    a summary's ending: a coloured mark and its label ("🟠 out of budget"; adapters/view/endings.py)
markdown   the body: agent prose, questions, answers — Slack renders the standard Markdown
section    the fields, two columns (Step, Context as a bar, Cost, Elapsed, State)
context    a small grey line: who started the run (status card), or a notice's whole text
actions    the buttons; Interrupt… asks for confirmation (a subagent in flight loses its work)
=========  ============================================================================

Notices and thread-line receipts are one small context line each, so the thread stays quiet (one
longer than a context element holds is a markdown block instead, so none is cut short). The
fallback `text` (notifications, screen readers) is the title and the start of the body, escaped.
"""

from __future__ import annotations

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    HeaderBlock,
    MarkdownBlock,
    MarkdownTextObject,
    SectionBlock,
)

from adapters.ids import IdError, decode
from adapters.platform import SLACK, Button, OutMessage
from adapters.slack.text import bar, defuse, mrkdwn_escape, plain
from adapters.view.endings import by_tone

__all__ = ["CONTEXT_MAX", "FALLBACK_MAX", "INTERRUPT_WARNING", "render"]

HEADER_MAX = SLACK.title_max
BUTTON_MAX = SLACK.button_label_max
FIELD_MAX = SLACK.section_field_max - 100  # cut a little short of the limit, then "…"
CONTEXT_MAX = SLACK.context_max - 100  # a context element's text, cut short of the limit (modals too)
ACTIONS_MAX = SLACK.actions_max
FIELDS_MAX = SLACK.fields_max  # per section
FALLBACK_MAX = SLACK.fallback_max
SMALL_KINDS = frozenset({"notice", "receipt"})
# Block Kit has no colours: a summary's tone shows as a coloured mark.
TONE_MARKS = {"success": "🟢", "danger": "🔴", "warning": "🟠", "muted": "⚪", "info": "🔵"}
INTERRUPT_WARNING = ("The agent stops at the next message boundary and resumes the same session with your words. "
                     "A subagent in flight loses its unfinished work.")


def render(msg: OutMessage, *, footer: str = "") -> tuple[list[Block], str]:
    """The blocks and the fallback text of one message. `footer`: an extra context line (the status
    card's "started by")."""
    blocks: list[Block] = []
    if msg.title:
        blocks.append(HeaderBlock(text=plain(msg.title, HEADER_MAX)))
    if msg.kind == "summary" and msg.tone in TONE_MARKS and (ending := by_tone(msg.tone)) is not None:
        blocks.append(_context(f"{TONE_MARKS[msg.tone]} {ending.label}"))
    body = msg.text.strip()
    if body and msg.kind in SMALL_KINDS and len(mrkdwn_escape(body)) <= CONTEXT_MAX:
        blocks.append(_context(body))
    elif body:  # (a small line too long for a context element goes whole in a markdown block)
        blocks.append(MarkdownBlock(text=defuse(body)))
    if msg.fields:
        blocks.append(SectionBlock(fields=[MarkdownTextObject(text=_field(k, v)) for k, v in msg.fields[:FIELDS_MAX]]))
    if footer:
        blocks.append(_context(footer))
    for i in range(0, len(msg.buttons), ACTIONS_MAX):
        blocks.append(ActionsBlock(elements=[_button(b) for b in msg.buttons[i:i + ACTIONS_MAX]]))
    return blocks, fallback(msg)


def fallback(msg: OutMessage) -> str:
    head = f"{msg.title}\n" if msg.title else ""
    text = mrkdwn_escape(head + msg.text.strip()) or "…"
    return text if len(text) <= FALLBACK_MAX else text[: FALLBACK_MAX - 1] + "…"


def _context(text: str) -> ContextBlock:
    esc = mrkdwn_escape(text)
    return ContextBlock(elements=[MarkdownTextObject(text=esc if len(esc) <= CONTEXT_MAX else esc[:CONTEXT_MAX] + "…")])


def _field(name: str, value: str) -> str:
    if name == "Context":
        value = bar(value)
    text = f"*{mrkdwn_escape(name)}*\n{mrkdwn_escape(value)}"
    return text if len(text) <= FIELD_MAX else text[:FIELD_MAX] + "…"


def _button(b: Button) -> ButtonElement:
    try:
        verb = decode(b.action_id).verb
    except IdError:
        verb = ""
    confirm = None
    if verb == "int":
        confirm = ConfirmObject(title="Interrupt the agent?", text=INTERRUPT_WARNING, confirm="Interrupt",
                                deny="Cancel")
    return ButtonElement(text=plain(b.label, BUTTON_MAX), action_id=b.action_id,
                         style=b.style if b.style in ("primary", "danger") else None, confirm=confirm)
