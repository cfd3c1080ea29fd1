"""Slack's documented Block Kit limits, checked on the JSON the bot sends (docs.slack.dev/reference/block-kit).

The numbers are written here from Slack's reference, not taken from the bot's own limits
(adapters/platform/limits.py), so a wrong number there shows up as a refusal here. Each check answers
"" when the blocks are within the limits, else one line naming the first problem found.
"""

from __future__ import annotations

from typing import Any

__all__ = ["message_problem", "view_problem"]

MESSAGE_BLOCKS, VIEW_BLOCKS = 50, 100
HEADER_TEXT = 150
MARKDOWN_TOTAL = 12_000  # every markdown block of one payload together
SECTION_TEXT, FIELDS, FIELD_TEXT = 3000, 10, 2000
CONTEXT_ELEMENTS, CONTEXT_TEXT = 10, 3000
ACTIONS_ELEMENTS = 25
BUTTON_TEXT, BUTTON_VALUE, ACTION_ID, BLOCK_ID = 75, 2000, 255, 255
BUTTON_STYLES = ("primary", "danger")
CONFIRM = {"title": 100, "text": 300, "confirm": 30, "deny": 30}
VIEW_TITLE, VIEW_BUTTON, PRIVATE_METADATA = 24, 24, 3000
INPUT_LABEL, INPUT_MAX_LENGTH = 2000, 3000


def _text(obj: Any) -> str:
    return obj.get("text", "") if isinstance(obj, dict) else ""


def _button_problem(el: dict[str, Any]) -> str:
    if not 0 < len(_text(el.get("text"))) <= BUTTON_TEXT:
        return f"button text must be 1..{BUTTON_TEXT} characters: {_text(el.get('text'))!r}"
    if len(el.get("action_id", "")) > ACTION_ID:
        return f"button action_id over {ACTION_ID} characters"
    if len(el.get("value", "")) > BUTTON_VALUE:
        return f"button value over {BUTTON_VALUE} characters"
    if "style" in el and el["style"] not in BUTTON_STYLES:
        return f"button style {el['style']!r} is not one of {BUTTON_STYLES}"
    confirm = el.get("confirm")
    for key, limit in CONFIRM.items() if isinstance(confirm, dict) else ():
        if len(_text(confirm.get(key))) > limit:
            return f"confirm {key} over {limit} characters"
    return ""


def _block_problem(b: dict[str, Any]) -> str:
    kind = b.get("type")
    if len(b.get("block_id", "")) > BLOCK_ID:
        return f"{kind} block_id over {BLOCK_ID} characters"
    if kind == "header" and not 0 < len(_text(b.get("text"))) <= HEADER_TEXT:
        return f"header text must be 1..{HEADER_TEXT} characters ({len(_text(b.get('text')))})"
    if kind == "section":
        fields = b.get("fields") or []
        if len(_text(b.get("text"))) > SECTION_TEXT or len(fields) > FIELDS:
            return f"section text over {SECTION_TEXT} characters or over {FIELDS} fields"
        if any(len(_text(f)) > FIELD_TEXT for f in fields):
            return f"section field over {FIELD_TEXT} characters"
    if kind == "context":
        elements = b.get("elements") or []
        if not 0 < len(elements) <= CONTEXT_ELEMENTS or any(len(_text(e)) > CONTEXT_TEXT for e in elements):
            return f"context needs 1..{CONTEXT_ELEMENTS} elements of at most {CONTEXT_TEXT} characters"
    if kind == "actions":
        elements = b.get("elements") or []
        if not 0 < len(elements) <= ACTIONS_ELEMENTS:
            return f"actions needs 1..{ACTIONS_ELEMENTS} elements ({len(elements)})"
        ids = [e.get("action_id") for e in elements if e.get("action_id")]
        if len(ids) != len(set(ids)):
            return "actions repeats an action_id"
        for el in elements:
            if el.get("type") == "button" and (problem := _button_problem(el)):
                return problem
    return ""


def _blocks_problem(blocks: Any, most: int) -> str:
    if not isinstance(blocks, list):
        return "blocks is not a list"
    if len(blocks) > most:
        return f"{len(blocks)} blocks, over {most}"
    markdown = sum(len(b.get("text", "")) for b in blocks if b.get("type") == "markdown")
    if markdown > MARKDOWN_TOTAL:
        return f"markdown blocks hold {markdown} characters, over {MARKDOWN_TOTAL}"
    return next((p for b in blocks if (p := _block_problem(b))), "")


def message_problem(blocks: Any) -> str:
    """What Slack would refuse in a message's blocks ("" for nothing)."""
    return _blocks_problem(blocks, MESSAGE_BLOCKS)


def view_problem(view: dict[str, Any]) -> str:
    """What Slack would refuse in a modal ("" for nothing)."""
    for key, limit in (("title", VIEW_TITLE), ("submit", VIEW_BUTTON), ("close", VIEW_BUTTON)):
        if key in view and not 0 < len(_text(view[key])) <= limit:
            return f"view {key} must be 1..{limit} characters"
    if len(view.get("private_metadata", "")) > PRIVATE_METADATA:
        return f"view private_metadata over {PRIVATE_METADATA} characters"
    for b in view.get("blocks") or []:
        if b.get("type") == "input":
            if not 0 < len(_text(b.get("label"))) <= INPUT_LABEL:
                return f"input label must be 1..{INPUT_LABEL} characters"
            if b.get("element", {}).get("max_length", 0) > INPUT_MAX_LENGTH:
                return f"input max_length over {INPUT_MAX_LENGTH}"
    return _blocks_problem(view.get("blocks"), VIEW_BLOCKS)
