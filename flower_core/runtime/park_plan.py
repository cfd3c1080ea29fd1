"""Parking a plan review: a run whose plan waits for a person holds no CLI, like a question or an approval.

The ExitPlanMode call waits in ``can_use_tool`` (human/plan_review.py); parking cuts it as it cuts an
approval (park_approval.py). Once the plan ask settles, the call's result is written into the session and
the CLI continues the turn:

- **approved** (go | go_ask): the CLI's own words for an allowed ExitPlanMode (``plan_review.APPROVED``). The
  plan state is kept before that, so the continuing CLI starts in the step's own mode, no longer in "plan";
- **keep planning**: the person's words as the call's error result, exactly what the live callback answers;
  the CLI continues in plan mode and the agent presents a new plan;
- **nobody decided** (the person spoke instead, the run was stopped): a cancellation; still planning.

A decision is written into the park record and into plan.json before the person is told it is decided
(``HumanChannel.keep_outcomes``), so a process that dies in between applies it after a restart instead of
asking again. A plan waiting with its CLI up is recorded the same way (``mark_waiting``) and its record stays
until the attempt ends: a restart then finds the call still open (and applies the kept decision), or answered
by the CLI (and the record goes).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from flower_core.human.plan_review import (
    APPROVED,
    GO,
    GO_ASK,
    KEEP_PLANNING,
    KIND,
    OPTIONS,
    REVISE,
    TOOL,
    Verdict,
    option_of,
    outcome,
    plan_of,
    read_plan,
)
from flower_core.lang import catalogue
from flower_core.runtime.parked import ParkRecord, ParkRecords

Write = Callable[[ParkRecord, str, bool], Awaitable[bool]]
UNANSWERED = "About the plan you presented: {outcome}"


def waiting(channel: Any) -> Any:
    """The channel's one waiting plan ask (an ExitPlanMode call in flight waits on it)."""
    pending = [a for a in channel.pending() if getattr(a, "kind", "") == KIND]
    return pending[0] if len(pending) == 1 else None


def mark(record: ParkRecord, ask: Any) -> None:
    """Make ``record`` the record of the plan review ``ask``: the plan as its card shows it, and its file."""
    record.kind, record.tool = KIND, TOOL
    record.input = {k: ask.facts[k] for k in ("plan", "plan_file") if isinstance(ask.facts.get(k), str)}


def keep_decisions(channel: Any, ask_id: str, records: ParkRecords, record: ParkRecord) -> None:
    """Write a person's decision into plan.json and the record before the channel tells them it is decided."""
    def keep(state: str, answer: str) -> None:
        decision, words = outcome(state, answer)
        if not decision:
            return  # a withdrawal or a stop: nothing a restart should apply
        record.decision, record.words = decision, words
        plan = plan_of(channel)
        if plan is not None:
            plan.decide(record.decision, channel)
        with contextlib.suppress(OSError):
            records.save(record)
    channel.keep_outcomes(ask_id, keep)


def restore(channel: Any, records: ParkRecords, record: ParkRecord) -> Any:
    """Ask a parked plan again in a new process; one decided before the old process went away is applied at
    once (its card shows the decision, nobody is asked twice)."""
    plan = plan_of(channel)
    text = read_plan(record.input["plan_file"]) if record.input.get("plan_file") else ""
    text = text or str(record.input.get("plan") or "")
    facts = plan.facts(text) if plan is not None else {"tool": TOOL, "input": {}, "plan": text}
    ask = channel.restore(record.question, list(record.options or OPTIONS), record.asked_at, kind=KIND, facts=facts)
    decision = record.decision or (plan.state if plan is not None and not plan.planning else "")
    if decision in (GO, GO_ASK):
        channel.answer(ask.id, option_of(decision))
    elif decision == REVISE:
        channel.decline(ask.id, record.words or KEEP_PLANNING)
    else:
        keep_decisions(channel, ask.id, records, record)
    return ask


async def settle(record: ParkRecord, ask: Any, channel: Any, records: ParkRecords,
                 write: Write) -> tuple[str, bool, str]:
    """Apply a parked plan's outcome to the session. Returns the note the CLI continues with, whether it can
    continue the turn, and the line for the prompt when it cannot."""
    plan = plan_of(channel)
    lang = catalogue(getattr(channel, "lang", None))
    v = plan.verdict(ask, channel, lang) if plan is not None else Verdict(False, lang["plan.cancelled"])
    text = APPROVED if v.allow else v.message
    written = await write(record, text, not v.allow)
    records.delete(record.session_id)
    note = lang["plan.note_approved"] if v.allow else lang["plan.note_revise"]
    return note, written, UNANSWERED.format(outcome=text)


def mark_waiting(channel: Any, ask: Any, call: dict[str, Any], records: ParkRecords, record: ParkRecord) -> bool:
    """Record a plan waiting with its CLI up (see the module's docstring); its decision is kept in it."""
    mark(record, ask)
    try:
        records.save(record)
    except OSError:
        return True  # a disk problem: the plan still waits live; do not try again and again
    keep_decisions(channel, ask.id, records, record)
    return True
