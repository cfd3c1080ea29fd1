"""The approval card: a tool call waiting for a person (flower_core/human/approval.py), then its outcome.

    🔐 The agent wants to run Bash          [Allow once] [Allow Bash for this run] [Deny…]
    ```rm -rf build```                       (Edit/Write: the file and a bounded diff preview)
        ↓ decided
    ✅ Allowed once by Ana on Slack  ·  🚫 Denied by Bea: "use ls"  ·  ⌛ Not approved in time

The options travel by index like a question's, so "Allow once" and "for this run" are the channel's
first two options; "Deny…" opens the words form (what the agent reads). Pure: no I/O.
"""

from __future__ import annotations

import difflib
from typing import Any

import adapters.view.fmt as fmt
from adapters.ids import encode
from adapters.platform import Button, OutMessage
from adapters.platform.messages import FileRef
from adapters.view.card import AskCard
from adapters.view.shares import beside_path, human_size

APPROVAL = "approval"
DIFF_KEYS = ("diff_file", "diff_lines", "diff_bytes")  # the whole diff the core wrote (approval_diff.py)
PREVIEW_LINES = 20
COMMAND_CHARS = 1500
OUTCOMES: dict[str, tuple[str, str]] = {
    "timeout": ("⌛", "Not approved in time — the call did not run"),
    "cancelled": ("✖️", "Closed — the run stopped before a decision"),
}


def preview(tool: str, args: dict[str, Any]) -> list[str]:
    """What the call would do, bounded: the command, or the file and a diff of the change."""
    path = str(args.get("file_path") or args.get("notebook_path") or "")
    if isinstance(args.get("command"), str):
        return ["```", fmt.clip(args["command"], COMMAND_CHARS), "```"]
    if path and ("old_string" in args or "content" in args):
        before = str(args.get("old_string") or "").splitlines()
        after = str(args.get("new_string", args.get("content")) or "").splitlines()
        diff = list(difflib.unified_diff(before, after, lineterm="", n=1))[2:]
        more = len(diff) - PREVIEW_LINES
        lines = [f"File: `{path}`", "```diff", *diff[:PREVIEW_LINES], "```"]
        return lines + ([f"_… {more} more lines_"] if more > 0 else [])
    if path:
        return [f"File: `{path}`"]
    shown = ", ".join(f"{k}={fmt.one_line(str(v), 200)}" for k, v in args.items())
    return [fmt.clip(shown, COMMAND_CHARS)] if shown else []


def render_approval(run_id: str, card: AskCard, who: fmt.Who = fmt.plain_who) -> OutMessage:
    tool = str(card.facts.get("tool") or "a tool")
    args = card.facts.get("input") if isinstance(card.facts.get("input"), dict) else {}
    lines = preview(tool, args or {})
    if card.note:
        lines += ["", f"_{card.note}_"]
    key = f"ask:{card.card_id}"
    if card.open:
        buttons = [Button(fmt.one_line(opt, 70), encode("ans", run_id, card.card_id, i), style)
                   for i, (opt, style) in enumerate(zip(card.options[:2], ("primary", "default"), strict=False))]
        buttons.append(Button("Deny…", encode("txt", run_id, card.card_id), "danger"))
        lines += ["", "Deny… asks for words the agent reads (why, or what to do instead)."]
        return OutMessage(key, "ask", "\n".join(lines), title=f"🔐 The agent wants to run {tool}", buttons=buttons,
                          important=True, replace=True)
    by = (who(card.by) if card.by else "someone") + (f" on {card.where}" if card.where else "")
    answer = " ".join(card.answer.split())
    if card.state == "answered" and answer.casefold() in ("allow once", "y", "yes", "once"):
        title = f"✅ {tool} allowed once by {by}"
    elif card.state == "answered" and (answer.casefold() in ("a", "run") or answer.endswith("for this run")):
        title = f"✅ {tool} allowed for this run by {by}"
    elif card.state in ("answered", "declined"):
        title = f"🚫 {tool} denied by {by}"
        words = "" if answer.casefold() in ("deny", "n", "no") else answer
        if words:
            lines += ["", f"Reason: {fmt.clip(words, 1500)}"]
    else:
        icon, text = OUTCOMES.get(card.state, ("•", card.state))
        title = f"{icon} {text}"
    return OutMessage(key, "ask", "\n".join(lines), title=title, important=True, replace=True)


DECISIONS = ("once", "run", "deny")


def approval_option(options: list[str], decision: str) -> str | None:
    """The option text a decision answers with ("once": the first, "run": the second); None for "deny"
    (a decline carries the words). ValueError for anything else."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
    if decision == "deny":
        return None
    index = DECISIONS.index(decision)
    return options[index] if len(options) > index else ("Allow once" if index == 0 else "run")


def whole_diff(run_id: str, card: AskCard) -> OutMessage | None:
    """The whole diff of an edit as a file posted with its card, when the card's preview cannot show it all."""
    path, lines, size = (card.facts.get(k) for k in DIFF_KEYS)
    if card.kind != APPROVAL or not isinstance(path, str) or not path:
        return None
    if not isinstance(lines, int) or not isinstance(size, int) or lines <= PREVIEW_LINES + 3:  # + its headers
        return None
    name = path.replace("\\", "/").rsplit("/", 1)[-1].split("-", 1)[-1] or "change.diff"
    tool = str(card.facts.get("tool") or "edit")
    text = f"📎 The whole {tool} diff the approval above asks about: {name} ({lines} lines, {human_size(size)})"
    return OutMessage(key=f"diff:{card.card_id}", kind="notice", text=text, important=True, replace=False,
                      attachment=FileRef(path, name, size, run_id=run_id, beside=beside_path(path)))
