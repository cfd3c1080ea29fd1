"""What a step resumed from an earlier process gets before its CLI starts.

A process that dies mid-step leaves its session in the store (transcript.py says what it holds). The
step's first attempt in the next process, when it does not restore a parked question, does two
things first:

- every call the dead process never finished gets a result saying it was cut off (``close_cut_off``):
  a shell command or an edit is never re-run blindly, nor silently dropped, and the front ends hear
  of it through one ``system`` event, subtype "cut_off";
- mail queued for the run goes with the resume prompt (``with_kept_mail``): the last process may have
  accepted mail the model never read, and the resumed model may not look in its inbox again (it
  already did, in a turn the dead process never stored).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from flower_core.events import Event
from flower_core.runtime.parked import result_entry
from flower_core.runtime.transcript import CUT_OFF_SAFE, CUT_OFF_UNSAFE, CutOff, cut_off_calls
from flower_core.sdk_events import tool_summary
from flower_core.session_store import stored_entries

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry


async def close_cut_off(store: Any, key: SessionKey) -> list[CutOff]:
    """Answer every cut-off call of a stored session with a result saying it was cut off (an error
    result, chained after the session's last entry), so the resumed model decides whether to run it
    again: a shell command or an edit is never re-run blindly, nor silently dropped. Returns them."""
    entries = await stored_entries(store, key)
    cut = cut_off_calls(entries)
    if not cut:
        return []
    parent = next((e["uuid"] for e in reversed(entries) if isinstance(e.get("uuid"), str)), None)
    written = []
    for call in cut:
        entry = result_entry(call.entry, call.call_id, CUT_OFF_SAFE if call.safe else CUT_OFF_UNSAFE, is_error=True)
        entry["parentUuid"] = parent
        parent = entry["uuid"]
        written.append(cast("SessionStoreEntry", entry))
    await store.append(key, written)
    return cut


def cut_off_event(cut: list[CutOff], *, step: str, session_id: str) -> Event:
    calls = [{"id": c.call_id, "tool": c.tool, "safe": c.safe, "summary": tool_summary(c.args)} for c in cut]
    return Event("system", text="cut_off", payload={"subtype": "cut_off", "step": step, "session_id": session_id,
                                                    "calls": calls})


def with_kept_mail(prompt: str, channel: Any) -> str:
    """The prompt, followed by the mail queued in ``channel`` as the inbox tool would have shown it."""
    mail = channel.take_mail()
    if not mail:
        return prompt
    from flower_core.human.tools import inbox_reply  # the SDK-bound tools module, only when needed

    return f"{prompt}\n\n{inbox_reply(mail, getattr(channel, 'lang', None))}"
