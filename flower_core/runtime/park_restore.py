"""Before an attempt that resumes a stored session starts its CLI: what an earlier attempt or process left in it.

    ParkRestore.restore        a question parked by an earlier process: asked again, parked from the start
      ├── _reopen              ... whose process was killed in the middle of parking it
      └── _adopt               a question whose process died before it parked (``ParkPolicy.adopt``)
    ParkRestore.close_cut_off  calls a dead process never finished get a result saying so (resume.py)
    ParkRestore.hand_over      input the model never had a turn on is said plainly (handover.py)

A record on disk (parked.ParkRecord) lets a new process restore a parked question after a restart: when
``Runtime.run`` resumes that session, the question is asked again (parked from the start) instead of starting a
CLI. A tool approval or plan review decided before the old process went away is applied, not asked again
(park_approval.py, park_plan.py). When nothing is restored, the step's first attempt closes the calls a dead
process cut off, and every attempt resuming a session hands over what the model has not acted on yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# Imported as modules, not through the package (see park_live.py: an import circle otherwise).
import flower_core.runtime.park_approval as park_approval
import flower_core.runtime.park_plan as park_plan
from flower_core.events import Event
from flower_core.runtime.handover import hand_over
from flower_core.runtime.park_approval import OpenCall
from flower_core.runtime.parked import ParkRecord, ParkRecords, closed_by_cli, interrupted_call, last_open_call
from flower_core.runtime.resume import close_cut_off, cut_off_event, with_kept_mail
from flower_core.session_store import stored_entries

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey

    from flower_core.runtime.generation import StepState
    from flower_core.session_store import SQLiteSessionStore

log = logging.getLogger("flower_core.runtime.parking")  # parking's logger: its lines read as they always did


class ParkRestore:
    """What an attempt resuming a session does before its CLI starts (see the module docstring), on the
    Parking's store and records."""

    def __init__(self, *, store: SQLiteSessionStore, project_key: Callable[[], str], records: ParkRecords,
                 key: Callable[[str], SessionKey], open_call: OpenCall,
                 emit: Callable[[StepState, Event], None]) -> None:
        self.store, self.project_key, self.records = store, project_key, records
        self._key, self._open_call, self._emit = key, open_call, emit

    async def restore(self, resume: str, fork: bool, state: StepState, channel: Any, *,
                      adopt: bool) -> tuple[ParkRecord, Any] | None:
        """Resuming a session parked by an earlier process: ask its question again, parked from the start.
        ``adopt``: a question cut off by a process's end is picked up too (the step's first attempt, when the
        policy says so)."""
        record = None if fork else self.records.load(resume)
        if record is None and not fork and adopt:
            record = await self._adopt(resume, state, channel)
        if record is None:
            return None
        if await self._open_call(resume, record.call_id) is None and not await self._reopen(resume, record.call_id):
            self.records.delete(resume)  # the session went on without it: nothing left to answer
            return None
        if record.kind == park_plan.KIND:  # a plan review (decided already, maybe: then it is applied)
            ask = park_plan.restore(channel, self.records, record)
        elif record.kind:  # a tool approval (decided already, maybe: then it is applied, not asked)
            ask = park_approval.restore(channel, self.records, record)
        else:
            ask = channel.restore(record.question, record.options, record.asked_at)
        channel.requeue(record.kept_mail())
        record.mail = []
        if state.carried is not None:  # words meant for this attempt's prompt: the person spoke instead
            state.add_pending(state.carried)
            state.carried = None
            state.poked.set()
        return record, ask

    async def _reopen(self, sid: str, call_id: str) -> bool:
        """A process killed while it parked this call: the CLI's rejection of it is stored, the cut is not.
        Cut it now (as the park would have), so the call is open again; False when the session went on."""
        try:
            cut = closed_by_cli(await stored_entries(self.store, self._key(sid)), call_id)
            if cut is None:
                return False
            self.store.truncate_after(sid, cut, project_key=self.project_key())
        except Exception:
            return False
        return await self._open_call(sid, call_id) is not None

    async def _adopt(self, sid: str, state: StepState, channel: Any) -> ParkRecord | None:
        """A record for a session that ends on the channel's ask call and nothing else (None otherwise)."""
        try:
            entries = await stored_entries(self.store, self._key(sid))
            cut = interrupted_call(entries, channel.tool_name)
            if cut is not None:  # stopped mid-question: the CLI's rejection of the call goes, as on a park
                self.store.truncate_after(sid, cut, project_key=self.project_key())
                entries = await stored_entries(self.store, self._key(sid))
        except Exception:
            return None
        found = last_open_call(entries, channel.tool_name)
        if found is None:
            return None
        call_id, args, asked_at = found
        question = args.get("question")
        if not isinstance(question, str) or not question.strip():
            return None
        options = [str(o) for o in args.get("options") or [] if isinstance(o, str | int | float)]
        return ParkRecord(sid, call_id, state.result.step, question, options, asked_at or time.time())

    async def hand_over(self, sid: str, prompt: str | None, channel: Any, *, mail: bool = False) -> str | None:
        """When the session ends on input the model never had a turn on, store the note (handover.py) and
        return None: the attempt continues the stored turn. Otherwise the prompt to send (with the kept mail
        when ``mail``)."""
        taken: list[str] = []

        def full() -> str:
            said = prompt or ""
            taken.append(with_kept_mail(said, channel) if mail and channel is not None and said else said)
            return taken[-1]

        try:
            if await hand_over(self.store, self._key(sid), ask_tool=str(getattr(channel, "tool_name", "") or ""),
                               prompt=full, by=getattr(channel, "answered_by", None)):
                return None
        except Exception as exc:  # a store problem: resume with the prompt as before rather than not at all
            log.warning("hand-over of session %s not written: %r", sid, exc)
        return taken[-1] if taken else full()

    async def close_cut_off(self, sid: str, state: StepState) -> None:
        """The step's first attempt, nothing restored: every call a dead process never finished is answered as
        cut off, and the front ends hear of it (one "cut_off" event)."""
        try:
            cut = await close_cut_off(self.store, self._key(sid))
        except Exception:  # a store problem: the CLI's own closing of the calls still applies
            return
        if cut:
            self._emit(state, cut_off_event(cut, step=state.result.step, session_id=sid))
