"""The hand-over: a resumed session whose model never had a turn on its newest input gets that input said plainly.

A process can die after the CLI stored a tool result (a person's answer, a command's output) or a prompt
(an interrupt's words) and before the model's next request; an interrupt can cut a turn that carried an
answer before the model read it. Resumed with a new prompt, the CLI would stand
an assistant turn "No response requested." after that input and then send the prompt: the input sits in
history, and the model's first turn is about the restart (or the interrupt). So on every attempt that resumes a session:

1. ``unacted`` (transcript.py) finds the user entries after the session's last assistant turn; none (or only
   the CLI's marks of a stop the runtime asked for: an interrupt, a park, the cost cap), and nothing here
   applies;
2. one more user entry is stored after them (``hand_over``): a note that names them (which question, who
   settled it: the outcome itself stands just above as its tool result) followed by the attempt's prompt
   (the resume prompt or an interrupt's words, words said meanwhile, kept mail). Stored before the model
   sees it, so a kill from here on neither loses it nor says it twice: what it carried is settled as
   delivered (replay.py), and the next process describes only the inputs after it;
3. the attempt sends no prompt: the CLI continues the stored turn (``parked.continue_env``), so the model's
   request ends with that input and the note, with no stand-in turn between them (docs/parking.md, and
   tests/core/test_handover_cli.py for the facts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from flower_core.runtime.parked import prompt_entry
from flower_core.runtime.transcript import block_text, calls_by_id, chain_end, unacted, user_blocks
from flower_core.sdk_events import tool_summary
from flower_core.session_store import stored_entries

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

# True of each way a turn is cut between an input and the model's next request: a restart, an interrupt, a retry.
HEAD = "(Picked up where you left off: this reached you, but your turn was cut off before you could act on it.)"
# What the CLI continues with when it adds a note of its own (it does for a tool-result tail, not for ours).
CONTINUE = "Continue."


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


# How the CLI marks a turn it was told to stop (an interrupt, a park, the cost cap): its own lines, not input.
CLI_MARKS = ("[Request interrupted by user", "[Tool call interrupted", "The user doesn't want to proceed")


def _inputs(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The blocks of a user entry that carry something to the model (not the CLI's marks of a stop)."""
    return [b for b in user_blocks(entry) if b.get("type") in ("tool_result", "text")
            and block_text(b).strip() and not block_text(b).lstrip().startswith(CLI_MARKS)]


def describe(tail: list[Mapping[str, Any]], calls: Mapping[str, tuple[str, dict[str, Any]]], ask_tool: str,
             by: Mapping[str, str] | None = None) -> str:
    """The note's first part: one line per input of ``tail`` (pure). The inputs themselves stand above it,
    so it names them rather than repeating them. ``by``: who settled a question, by its squashed text."""
    lines = [HEAD]
    for entry in tail:
        for block in _inputs(entry):
            if block.get("type") == "tool_result":
                tool, args = calls.get(str(block.get("tool_use_id")), ("", {}))
                if tool == ask_tool and ask_tool:
                    question = str(args.get("question", "")).strip()
                    who = (by or {}).get(_squash(question), "")
                    lines.append(f"- Your question “{question}” was settled{f' by {who}' if who else ''}: "
                                 "the outcome is its tool result above.")
                else:
                    what = tool_summary(args)
                    lines.append(f"- Your {tool or 'tool'} call{f' ({what})' if what else ''}: its result is above.")
            elif "- The message above." not in lines:
                lines.append("- The message above.")
    return "\n".join(lines) if len(lines) > 1 else ""


# Marks the entries hand_over stored (a key of ours: the CLI ignores it, the stores keep it).
MARK = "flowerHandover"


def _is_note(entry: Mapping[str, Any]) -> bool:
    return entry.get(MARK) is True


async def hand_over(store: Any, key: SessionKey, *, ask_tool: str, prompt: Callable[[], str],
                    by: Mapping[str, str] | None = None) -> bool:
    """Store the hand-over note when the session ends on input the model has not acted on; True = the
    attempt must continue the stored turn (no prompt). ``prompt`` gives the attempt's prompt with all it
    carries (asked only then: it takes the kept mail). After an earlier note (its process died before the
    model's turn) only the inputs since it are described: what it carried is settled as delivered."""
    entries = await stored_entries(store, key)
    tail = unacted(entries)
    if not any(_inputs(e) for e in tail):  # nothing, or only the CLI's marks of a stop we asked for
        return False
    notes = [i for i, e in enumerate(tail) if _is_note(e)]
    new = tail[notes[-1] + 1:] if notes else tail
    note = "\n\n".join(p for p in (describe(new, calls_by_id(entries), ask_tool, by), prompt().strip()) if p)
    if note:
        # At the end of the chain through the newest input (what the CLI stored after it hangs off it; an entry
        # stored later may hang off an earlier message, and a chain through it would skip the input).
        after = chain_end(entries, tail[-1])
        await store.append(key, [cast("SessionStoreEntry", {**prompt_entry(after, note), MARK: True})])
    return True
