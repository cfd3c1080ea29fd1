"""Parking: a run waiting on a person gives its CLI process back until the person has answered.

    Parking.attempt            the runtime's attempt: parks and resumes inside as often as the step asks
      ├── ParkRestore.restore  park_restore.py: a session left parked has its question asked again
      ├── LiveParking.watched  park_live.py: the attempt runs, and is parked when all it waits on is a person
      ├── _wait                no CLI: the question settles; its result is written into the session
      └── (round again)        the same session resumes, the CLI continuing the turn (it may park again)

A CLI holds ~190 MB while a question waits, and chat questions wait for hours, so a question that waits long
enough holds no CLI: the session stays in the SessionStore, ending on the asking turn, and the question stays
open in the channel.

When the question settles - answered, declined, timed out, or the run is interrupted instead - the
call's result is written into the session as the tool would have returned it (parked.result_entry)
and the same session resumes: the CLI continues the turn on its own, so the model reads the answer
as its tool result, followed by one short note. Nothing else tells it the process was parked.

A run stopped while parked settles its question as "cancelled", like a live one, and its record stays.
Events: ``system`` with text "parked" / "unparked" (payload ``subtype`` the same), see ``_event``.
A tool approval parks the same way; how its outcome resumes the run is park_approval.py's (a plan's, park_plan.py's).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

# Imported as modules, not through the package (see park_live.py: an import circle otherwise).
import flower_core.runtime.park_approval as park_approval
import flower_core.runtime.park_plan as park_plan
from flower_core.events import Event
from flower_core.runtime.attempt import Outcome
from flower_core.runtime.handoff import interrupt_prompt
from flower_core.runtime.handover import CONTINUE
from flower_core.runtime.park_calls import Calls, parkable
from flower_core.runtime.park_live import RETRY_S, SHOW_POLL_S, SHOW_WAIT_S, AttemptFn, LiveParking
from flower_core.runtime.park_restore import ParkRestore
from flower_core.runtime.parked import (
    WITHDRAWN,
    ParkRecord,
    ParkRecords,
    call_entry,
    continue_env,
    open_call,
    release_store,
    result_entry,
)
from flower_core.runtime.resume import with_kept_mail
from flower_core.runtime.warm import WarmPool
from flower_core.session_store import stored_entries

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

    from flower_core.runtime.generation import StepState
    from flower_core.session_store import SQLiteSessionStore

# Names other modules and the tests import from here, defined where their code is (park_live, park_calls, parked).
__all__ = ["PARKED", "RESUME_NOTE", "RETRY_S", "SHOW_POLL_S", "SHOW_WAIT_S", "UNANSWERED", "UNPARKED", "WITHDRAWN",
           "AttemptFn", "Calls", "ParkPolicy", "Parking"]

PARKED, UNPARKED = "parked", "unparked"
# The one line the model reads after its tool result when a parked run resumes.
RESUME_NOTE = "(Your question waited a while for the person; their reply is the tool result above. Continue.)"
# The fallback when the call could not be answered in the session: the reply goes in the prompt instead.
UNANSWERED = "The reply to your question “{question}”: {reply}"


@dataclass
class ParkPolicy:
    """When to park. ``after_s``: seconds a question waits before its CLI is closed (None = never); it is
    counted from when the question was asked, and a question is never parked before it has been shown.
    ``allow()`` is asked at that moment (e.g. a front end's limit on parked runs); False = not now.
    ``warm``: a pool shared by a process's runtimes whose holders (the newest questions) keep their CLI
    however long they wait, so their answer costs no CLI start (warm.py); None = no pool."""

    after_s: float | None = None
    allow: Callable[[], bool] | None = None
    warm: WarmPool | None = None
    note: str = RESUME_NOTE
    # Also pick up a question whose process died before it parked (a worker killed while the question
    # waited): a resumed session that ends on the channel's open ask call is restored as if parked.
    adopt: bool = False

    def __post_init__(self) -> None:
        if self.after_s is not None and self.after_s < 0:
            raise ValueError(f"park after_s must be >= 0 or None, not {self.after_s!r}")

    @property
    def enabled(self) -> bool:
        return self.after_s is not None

    def allowed(self) -> bool:
        try:
            return self.allow is None or bool(self.allow())
        except Exception:
            return False

    @classmethod
    def coerce(cls, value: ParkPolicy | float | None) -> ParkPolicy:
        """An instance as is; a number is ``after_s``; None means never."""
        if isinstance(value, ParkPolicy):
            return value
        return cls(after_s=None if value is None else float(value))


class Parking:
    """The Runtime's parking: ``attempt`` stands in for its attempt, ``observe`` sees its events. It owns the
    two collaborators (a resumed session's restore, the live parking) and the store helpers they share."""

    def __init__(self, policy: ParkPolicy, *, store: SQLiteSessionStore, project_key: Callable[[], str],
                 records: ParkRecords, attempt: AttemptFn, absorb: Callable[[Outcome, StepState], None],
                 emit: Callable[[StepState, Event], None]) -> None:
        self.policy = policy
        self.store, self.project_key, self.records = store, project_key, records
        self._attempt, self._absorb, self._emit = attempt, absorb, emit
        self._resumed: set[int] = set()  # steps whose first attempt was looked at (see ParkRestore.close_cut_off)
        self._restore = ParkRestore(store=store, project_key=project_key, records=records, key=self._key,
                                    open_call=self._open_call, emit=emit)
        self._live = LiveParking(policy, records=records, attempt=attempt, open_call=self._open_call,
                                 keep=self._keep)

    # -- the runtime's hooks ------------------------------------------------------------------------
    def observe(self, state: StepState, ev: Event) -> bool:
        """See one event of a step; True = drop it: the CLI's own closing of the call being parked
        (a "rejected" result and an interruption line), which the resumed session never shows."""
        return self._live.observe(state, ev)

    async def attempt(self, spec: Any, prompt: str, resume: str | None, fork: bool, state: StepState) -> Outcome:
        """One attempt as the runtime sees it: parks and resumes inside as often as the step asks."""
        channel = parkable(getattr(spec, "channel", None))
        first = id(state) not in self._resumed
        self._resumed.add(id(state))
        if channel is None:
            if resume and first and not fork:
                await self._restore.close_cut_off(resume, state)
            if resume and not fork:
                said = await self._restore.hand_over(resume, prompt, None)
                return await self._attempt(spec if said is not None else _continuing(spec), said, resume, fork, state)
            return await self._attempt(spec, prompt, resume, fork, state)
        adopt = first and self.policy.adopt  # a question cut off by a process's end, on the step's first attempt
        parked = await self._restore.restore(resume, fork, state, channel, adopt=adopt) if resume else None
        if parked is not None:
            self._emit(state, _event(PARKED, parked[0], parked[1].id, restored=True))
        run_prompt: str | None = prompt
        run_spec = spec  # this attempt's own: it may continue the stored turn (handover.py)
        if resume and first and not fork and parked is None:
            await self._restore.close_cut_off(resume, state)
        if resume and not fork and parked is None:  # a first attempt carries the mail kept for the run too
            run_prompt = await self._restore.hand_over(resume, prompt, channel, mail=first)
            if run_prompt is None:
                run_spec = _continuing(spec)
        elif resume and first and parked is None and prompt is not None:
            run_prompt = with_kept_mail(prompt, channel)
        allowed: ParkRecord | None = None  # an approval allowed while parked: the CLI makes its call again
        while True:
            if parked is None:
                try:
                    out = await self._live.watched(run_spec, run_prompt, resume, fork, state, channel)
                except asyncio.CancelledError:
                    self._live.withdraw(state, channel)  # stopped while being parked: nobody collects its outcome
                    raise
                finally:
                    if allowed is not None:  # a decision its call never took goes (the call was made or not)
                        park_approval.finish(channel, self.records, allowed)
                        allowed = None
                parked = await self._live.parked(out, state, channel)
                if parked is None:
                    return out
                self._emit(state, _event(PARKED, parked[0], parked[1].id, restored=False))
                self._absorb(out, state)  # the books of the part before the park
            record, ask = parked
            release_store(self.store)  # no open files while it waits: the next use opens it again
            note, answered = await self._wait(record, ask, state, channel)
            if answered:  # the CLI continues the stored turn itself: the note is its only new user text
                spec = replace(spec, env={**getattr(spec, "env", {}), **continue_env(note)})
            run_spec = spec
            run_prompt, resume, fork, parked = None if answered else note, record.session_id, False, None
            allowed = record if record.kind and record.decision in ("once", "run") else None

    # -- waiting and answering ------------------------------------------------------------------------
    async def _wait(self, record: ParkRecord, ask: Any, state: StepState, channel: Any) -> tuple[str, bool]:
        """Wait for the question (or an interrupt) and answer the call in the session. Returns the note
        to resume with, and False when the call could not be answered (the note then carries the reply)."""
        wait = None if record.kind == park_plan.KIND else park_approval.timeout_of(channel) if record.kind else ...
        settle = asyncio.ensure_future(channel.settled(ask.id, wait))
        words: str | None = None
        try:
            while not settle.done():
                poke = asyncio.ensure_future(state.poked.wait())
                try:
                    await asyncio.wait({settle, poke}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    poke.cancel()
                state.poked.clear()
                words = state.take_pending()
                if words is not None:
                    channel.withdraw(ask.id)  # the person spoke instead of answering
                    await asyncio.shield(settle)
        except asyncio.CancelledError:
            settle.cancel()  # the run is stopped or the process is going away: settles it "cancelled"
            with contextlib.suppress(asyncio.CancelledError):
                await settle
            record.mail = [[m.id, m.text] for m in channel.pending_mail()]
            self._keep(record)
            raise
        ask = settle.result()
        if record.kind == park_plan.KIND:
            note, answered, line = await park_plan.settle(record, ask, channel, self.records, self._answer)
        elif record.kind:
            note, answered, line = await park_approval.settle(record, ask, channel, self.records, self._open_call,
                                                              self._answer)
        else:
            text = WITHDRAWN if ask.state == "cancelled" else ask.reply
            answered, note = await self._answer(record, text), self.policy.note
            line = UNANSWERED.format(question=record.question, reply=text)
            self.records.delete(record.session_id)
        self._emit(state, _event(UNPARKED, record, ask.id, restored=False, outcome=ask.state))
        if words is not None:  # an allow that landed first still stands: the model hears both
            allowed = record.kind and record.decision in ("once", "run")
            note = f"{note}\n\n{interrupt_prompt(words)}" if allowed else interrupt_prompt(words)
        mail = channel.take_mail()
        if mail:
            from flower_core.human.tools import inbox_reply  # the SDK-bound tools module, only when needed

            note = f"{note}\n\n{inbox_reply(mail, getattr(channel, 'lang', None))}"
        if not answered:
            note = f"{note}\n\n{line}"
        return note, answered

    async def _answer(self, record: ParkRecord, text: str, is_error: bool = False) -> bool:
        """Write the call's result into the stored session; False if the call is no longer open there."""
        call = await self._open_call(record.session_id, record.call_id)
        if call is None:
            return False
        entry = cast("SessionStoreEntry", result_entry(call, record.call_id, text, is_error=is_error))
        try:
            await self.store.append(self._key(record.session_id), [entry])
        except Exception:
            return False
        return True

    # -- the store helpers the collaborators share --------------------------------------------------
    async def _open_call(self, sid: str, call_id: str, *, cut: bool = False) -> dict[str, Any] | None:
        """The call's turn in the stored session if nothing answered it; ``cut`` first drops what follows it."""
        key = self._key(sid)
        try:
            entries = await stored_entries(self.store, key)
            if cut:
                call = call_entry(entries, call_id)
                if call is None or not isinstance(call.get("uuid"), str):
                    return None
                self.store.truncate_after(sid, call["uuid"], project_key=key["project_key"])
                entries = entries[: entries.index(call) + 1]
            return open_call(entries, call_id)
        except Exception:  # a store problem: do not park (or resume as is) rather than break the run
            return None

    def _key(self, sid: str) -> SessionKey:
        return {"project_key": self.project_key(), "session_id": sid}

    def _keep(self, record: ParkRecord) -> None:
        with contextlib.suppress(OSError):
            self.records.save(record)


def _continuing(spec: Any) -> Any:
    """The spec of an attempt that continues the stored turn instead of sending a prompt."""
    return replace(spec, env={**getattr(spec, "env", {}), **continue_env(CONTINUE)})


def _event(what: str, record: ParkRecord, ask_id: str, *, restored: bool, outcome: str = "") -> Event:
    unparked = {"outcome": outcome, "parked_s": round(max(0.0, time.time() - record.parked_at), 1)}
    payload: dict[str, Any] = {"subtype": what, "step": record.step, "session_id": record.session_id,
                               "ask_id": ask_id, "question": record.question, "asked_at": record.asked_at,
                               "restored": restored, **park_approval.event_facts(record),
                               **(unparked if what == UNPARKED else {})}
    return Event("system", text=what, payload=payload)
