"""Parking a tool approval: a run waiting on a person's Allow / Deny holds no CLI, like a question.

What the CLI does, checked in tests/core/test_approval_cli_facts.py: interrupting it while
``can_use_tool`` waits stores a rejection after the call (parking cuts it, as for a question), and
continuing the session without a written result asks the model for that last call again, keeping the
turn's earlier results (they never run again). So once the approval settles:

- **deny** (or its timeout, or a withdrawal by an interrupt): the refusal is written into the session
  as the call's error result and the CLI continues the turn, exactly as for a parked question's
  answer: the model reads the person's words as the tool result, and the tool never ran;
- **allow** (once / for this run): nothing is written; the gate is told to answer the call the model
  makes again (same tool, same whole input) with that decision, once, without a second card
  (``ApprovalGate.expect``), and the CLI continues: the tool runs once, in the CLI, as if allowed live.

The decision is written into the park record before the person is told it is decided
(``HumanChannel.keep_outcomes``), so a process that dies in between applies it after a restart
instead of asking again; the record goes when the re-made call takes the decision.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from flower_core.human.approval import (
    ALLOW_ONCE,
    KIND,
    Decision,
    bounded_input,
    decision_of,
    run_option,
    summary,
)
from flower_core.lang import catalogue
from flower_core.runtime.parked import ParkRecord, ParkRecords
from flower_core.runtime.permission import gate_of

# The one line the model reads after the parked approval is settled (the CLI's continuation prompt).
ALLOWED_NOTE = ("(Your {tool} call waited for a person's approval while the session was paused, and they allowed "
                "it. Make the same call again, unchanged, to run it.)")
DENIED_NOTE = ("(Your {tool} call waited for a person's approval while the session was paused; their decision is "
               "the tool result above. Continue.)")
# When the call could not be continued in the session: the decision goes in the prompt instead.
UNANSWERED = "About your {tool} call ({call}): {outcome}"
ALLOWED_AGAIN = "the person allowed it; make it again to run it."

OpenCall = Callable[[str, str], Awaitable[dict[str, Any] | None]]
Write = Callable[[ParkRecord, str, bool], Awaitable[bool]]


def waiting(channel: Any, tool: str, args: dict[str, Any]) -> Any:
    """The channel's one waiting approval, when it is about this call (its tool and its input)."""
    if gate_of(channel) is None:
        return None
    pending = [a for a in channel.pending() if getattr(a, "kind", "") == KIND]
    if len(pending) != 1:
        return None
    facts = pending[0].facts
    return pending[0] if facts.get("tool") == tool and facts.get("input") == bounded_input(args) else None


def call_input(call: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The whole input of ``call_id`` in its stored assistant entry (an event's input may be shortened)."""
    message = call.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("id") == call_id and isinstance(block.get("input"), dict):
            return dict(block["input"])
    return {}


def mark(record: ParkRecord, ask: Any, call: dict[str, Any]) -> None:
    """Make ``record`` the record of a parked approval (``ask``) on the stored call ``call``."""
    record.kind, record.tool = KIND, str(ask.facts.get("tool", ""))
    record.input = call_input(call, record.call_id)


def keep_decisions(channel: Any, ask_id: str, records: ParkRecords, record: ParkRecord) -> None:
    """Write a person's decision into the record before the channel tells them it is decided."""
    def keep(state: str, answer: str) -> None:
        if state == "answered":
            record.decision, record.words = decision_of(answer, record.tool)
        elif state == "declined":
            record.decision, record.words = "deny", answer
        else:
            return  # a withdrawal or a stop: nothing a restart should apply
        records.save(record)
    channel.keep_outcomes(ask_id, keep)


def restore(channel: Any, records: ParkRecords, record: ParkRecord) -> Any:
    """Ask a parked approval again in a new process; one decided before the old process went away is
    applied at once (its card shows the decision, nobody is asked twice)."""
    facts = {"tool": record.tool, "input": bounded_input(record.input)}
    ask = channel.restore(record.question, record.options, record.asked_at, kind=KIND, facts=facts)
    if record.decision == "deny":
        channel.decline(ask.id, record.words)
    elif record.decision in ("once", "run"):
        channel.answer(ask.id, ALLOW_ONCE if record.decision == "once" else run_option(record.tool))
    else:
        keep_decisions(channel, ask.id, records, record)
    return ask


def timeout_of(channel: Any) -> float | None:
    gate = gate_of(channel)
    return gate.timeout_s if gate is not None else None


async def settle(record: ParkRecord, ask: Any, channel: Any, records: ParkRecords, open_call: OpenCall,
                 write: Write) -> tuple[str, bool, str]:
    """Apply a parked approval's outcome to the session. Returns the note the CLI continues with, whether
    it can continue the turn, and the line for the prompt when it cannot."""
    gate = gate_of(channel)
    lang = getattr(channel, "lang", None)  # the channel's language (flower_core/lang/); the seed's without one
    d = (gate.settle_parked(ask, record.tool, record.input, channel.timeout_text, lang) if gate is not None
         else Decision(False, catalogue(lang).fill("approval.cancelled", tool=record.tool), "cancelled", ask.id))
    line = UNANSWERED.format(tool=record.tool, call=summary(record.tool, record.input)[:200],
                             outcome=ALLOWED_AGAIN if d.allow else d.message)
    if gate is None or not d.allow:
        written = await write(record, d.message, True)
        records.delete(record.session_id)
        return DENIED_NOTE.format(tool=record.tool), written, line
    record.decision = record.decision or d.how
    with contextlib.suppress(OSError):
        records.save(record)  # kept until the call made again takes the decision (see module docstring)
    gate.expect(record.tool, record.input, d, lambda: drop(records, record))
    can_continue = await open_call(record.session_id, record.call_id) is not None
    return ALLOWED_NOTE.format(tool=record.tool), can_continue, line


def drop(records: ParkRecords, record: ParkRecord) -> None:
    """Delete the record of this approval (not a later park of the same session)."""
    kept = records.load(record.session_id)
    if kept is not None and kept.call_id == record.call_id:
        records.delete(record.session_id)


def finish(channel: Any, records: ParkRecords, record: ParkRecord) -> None:
    """After the attempt that continued an allowed approval: a decision its call never took is dropped."""
    gate = gate_of(channel)
    if gate is not None:
        gate.forget(record.tool, record.input)
    drop(records, record)


def event_facts(record: ParkRecord) -> dict[str, Any]:
    """What the "parked"/"unparked" events add for an approval (or a plan review: its kind and tool)."""
    return {"kind": record.kind, "tool": record.tool} if record.kind else {}


# ---- an approval waiting with its CLI still up -----------------------------------------------------
# How often the watcher looks for a new approval of the call in flight (to mark it), in seconds.
MARK_POLL_S = 0.25


def unmarked(channel: Any, tool: str, ask: Any, marked: str) -> bool:
    """Should the watcher mark this call's approval (or look again soon for one)? Only tools other than
    the question tool, on a channel with approvals, whose waiting approval is not marked yet."""
    if tool == channel.tool_name or gate_of(channel) is None:
        return False
    return ask is None or (getattr(ask, "kind", "") == KIND and ask.id != marked)


def mark_waiting(channel: Any, ask: Any, call: dict[str, Any], records: ParkRecords, record: ParkRecord) -> bool:
    """Record an approval that waits with its CLI up, so a process that dies meanwhile (a SIGKILL, a
    worker's death) leaves what the next one needs to ask it again: the session then ends on the call,
    unanswered. The record goes the moment a person decides, before the CLI hears it (the call may run
    then: a crash after that must not ask again and run it twice); parking replaces it by its own."""
    mark(record, ask, call)

    def decided(state: str, answer: str) -> None:
        if state in ("answered", "declined"):
            drop(records, record)
    try:
        records.save(record)
    except OSError:
        return True  # a disk problem: the approval still waits live; do not try again and again
    channel.keep_outcomes(ask.id, decided)
    return True
