"""The hand-over: a resumed session whose model never had a turn on its newest input gets that input said plainly.

A process can die after the CLI stored a tool result (a person's answer, a command's output) or a prompt
(an interrupt's words) and before the model's next request. Resumed with a new prompt, the CLI would stand
an assistant turn "No response requested." after that input and then send the prompt: the input sits in
history, and the model's first turn is about the restart. So on a step's first attempt at a stored session:

1. ``unacted`` (transcript.py) finds the user entries after the session's last assistant turn; none, and
   nothing here applies;
2. one more user entry is stored after them (``hand_over``): a note that says what they were (which
   question, what came back) followed by the step's prompt (the resume prompt, words said meanwhile, kept
   mail). Stored before the model sees it, so a kill from here on neither loses it nor says it twice: the
   next process finds the note in the tail and adds only what is new since (words, mail);
3. the attempt sends no prompt: the CLI continues the stored turn (``parked.continue_env``), so the model's
   request ends with that input and the note, with no stand-in turn between them (docs/parking.md, and
   tests/core/test_handover_cli.py for the facts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from flower_core.runtime.parked import prompt_entry
from flower_core.runtime.transcript import block_text, calls_by_id, unacted, user_blocks
from flower_core.sdk_events import tool_summary
from flower_core.session_store import stored_entries

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

HEAD = "(Picked up where you left off: the session stopped after this reached you, before you could act on it.)"
REPLY_MAX = 2_000  # a reply is repeated in the note; the whole of it is in the tool result above
# What the CLI continues with when it adds a note of its own (it does for a tool-result tail, not for ours).
CONTINUE = "Continue."


def describe(tail: list[Mapping[str, Any]], calls: Mapping[str, tuple[str, dict[str, Any]]], ask_tool: str) -> str:
    """The note's first part: one line per input of ``tail`` (pure)."""
    lines = [HEAD]
    for entry in tail:
        for block in user_blocks(entry):
            if block.get("type") == "tool_result":
                tool, args = calls.get(str(block.get("tool_use_id")), ("", {}))
                if tool == ask_tool and ask_tool:
                    reply = block_text(block).strip()
                    reply = reply if len(reply) <= REPLY_MAX else reply[:REPLY_MAX - 1] + "…"
                    lines.append(f"- Your question “{str(args.get('question', '')).strip()}” got this reply: {reply}")
                else:
                    what = tool_summary(args)
                    lines.append(f"- Your {tool or 'tool'} call{f' ({what})' if what else ''}: its result is above.")
            elif block.get("type") == "text" and block_text(block).strip() and "- The message above." not in lines:
                lines.append("- The message above.")
    return "\n".join(lines)


def _is_note(entry: Mapping[str, Any]) -> bool:
    return any(b.get("type") == "text" and block_text(b).startswith(HEAD) for b in user_blocks(entry))


async def hand_over(store: Any, key: SessionKey, *, ask_tool: str, prompt: Callable[[], str],
                    since: Callable[[], str]) -> bool:
    """Store the hand-over note when the session ends on input the model has not acted on; True = the
    attempt must continue the stored turn (no prompt). ``prompt`` gives the step's prompt with everything
    it carries, ``since`` what is new since an earlier note (words, mail): each asked only when needed
    (they take the kept mail)."""
    entries = await stored_entries(store, key)
    tail = unacted(entries)
    if not tail:
        return False
    if any(_is_note(e) for e in tail):  # an earlier process stored the note and died before the model's turn
        note = since().strip()
    else:
        note = describe(tail, calls_by_id(entries), ask_tool)
        said = prompt().strip()
        if said:
            note = f"{note}\n\n{said}"
    if note:
        last = next((e for e in reversed(entries) if isinstance(e.get("uuid"), str)), tail[-1])
        await store.append(key, [cast("SessionStoreEntry", prompt_entry(last, note))])
    return True
