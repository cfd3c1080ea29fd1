"""The two modals, built with slack-sdk's view models, and their submissions read back.

- `input_view`: words for a button that needs them (answer in words, interrupt, ask the oracle).
  Its private metadata carries the button's action id, so the submission goes back through
  `Hub.handle_action(action_id, text=...)` like the click would have.
- `stop_view`: the Stop button, `/stop` with several runs and the "Interrupt this run" shortcut: an
  optional message and an "end the run" box — unticked interrupts (the run goes on with the
  message), ticked stops the run for good.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    CheckboxesElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
)
from slack_sdk.models.views import View

from adapters.platform import SLACK
from adapters.slack.inbound import PayloadError, text_field
from adapters.slack.render import CONTEXT_MAX, INTERRUPT_WARNING
from adapters.slack.text import mrkdwn_escape, plain

__all__ = ["INPUT_CALLBACK", "STOP_CALLBACK", "Submission", "input_view", "read_submission", "stop_view"]

INPUT_CALLBACK = "flower_input"
STOP_CALLBACK = "flower_stop"
TEXT_BLOCK, END_BLOCK = "text", "end"  # block ids, also the action ids of their inputs
INPUT_MAX, LABEL_MAX, TITLE_MAX = SLACK.input_max, SLACK.input_label_max, SLACK.modal_title_max
TITLES = {"txt": "Answer in words", "int": "Interrupt the agent", "orc": "Ask the oracle"}
# A plan card's "Keep planning…" is a `txt` button too; its form says what the words are for.
PLAN_TITLE = "Keep planning"
PLAN_PROMPT = "What should change in the plan? The agent reads your words and presents a new plan."


@dataclass(frozen=True)
class Submission:
    meta: dict[str, str]  # what the modal was opened for: a (action id) or r (run id), c (channel), t (thread)
    text: str
    end: bool


def _meta(**kw: str) -> str:
    return json.dumps({k: v for k, v in kw.items() if v}, separators=(",", ":"))


def _context(text: str) -> ContextBlock:
    esc = mrkdwn_escape(text)
    return ContextBlock(elements=[MarkdownTextObject(text=esc[:CONTEXT_MAX])])


def input_view(action_id: str, verb: str, prompt: str, *, channel: str, thread: str, context: str = "",
               title: str = "") -> View:
    blocks: list[Any] = []
    if context.strip():
        blocks.append(_context(context.strip()))
    if verb == "int":
        blocks.append(_context(INTERRUPT_WARNING))
    blocks.append(InputBlock(block_id=TEXT_BLOCK, label=plain(prompt, LABEL_MAX), optional=verb == "int",
                             element=PlainTextInputElement(action_id=TEXT_BLOCK, multiline=True,
                                                           max_length=INPUT_MAX)))
    title = title or TITLES.get(verb, "flower")
    return View(type="modal", callback_id=INPUT_CALLBACK, title=title[:TITLE_MAX], submit="Send",
                close="Cancel", blocks=blocks, private_metadata=_meta(a=action_id, c=channel, t=thread))


def stop_view(run_id: str, *, channel: str, thread: str, message: str = "", task: str = "") -> View:
    blocks: list[Any] = []
    if task:
        blocks.append(_context(f"Run {run_id}: {task}"))
    blocks.append(_context(INTERRUPT_WARNING))
    blocks.append(InputBlock(block_id=TEXT_BLOCK, label="What should the agent hear? (optional)", optional=True,
                             element=PlainTextInputElement(action_id=TEXT_BLOCK, multiline=True, max_length=INPUT_MAX,
                                                           initial_value=message[:INPUT_MAX] or None)))
    blocks.append(InputBlock(block_id=END_BLOCK, label="Or end it", optional=True, element=CheckboxesElement(
        action_id=END_BLOCK, options=[Option(value="end", label="End the run for good (no resuming)")])))
    return View(type="modal", callback_id=STOP_CALLBACK, title="Stop or interrupt", submit="Go", close="Cancel",
                blocks=blocks, private_metadata=_meta(r=run_id, c=channel, t=thread))


def read_submission(view: Any) -> Submission:
    """The metadata, the text typed and the end box of a submitted flower modal."""
    if not isinstance(view, dict):
        raise PayloadError("view_submission payload has no view")
    try:
        meta = json.loads(text_field(view, "private_metadata"))
    except ValueError as exc:
        raise PayloadError(f"view private_metadata is not JSON: {exc}") from exc
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise PayloadError("view private_metadata is not a flat object of strings")
    values = view.get("state", {}).get("values") if isinstance(view.get("state"), dict) else None
    if not isinstance(values, dict):
        raise PayloadError("view_submission has no state.values")
    text = text_field(values, TEXT_BLOCK, TEXT_BLOCK, "value", required=False)
    end_state = values.get(END_BLOCK, {}).get(END_BLOCK, {}) if isinstance(values.get(END_BLOCK), dict) else {}
    chosen = end_state.get("selected_options") if isinstance(end_state, dict) else None
    end = isinstance(chosen, list) and any(isinstance(o, dict) and o.get("value") == "end" for o in chosen)
    return Submission(meta, text, end)
