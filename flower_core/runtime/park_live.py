"""Parking a running attempt: it is stopped, and its CLI closed, once all it waits on is a person.

    LiveParking.watched    runs the attempt with a watcher beside it (_watch), which sleeps until a park is due
      ├── _before_shown    the channel's hook: a card is shown once its call's turn is stored (and marked)
      ├── _mark            an approval or plan waiting live is recorded, for a process that dies meanwhile
      └── _stop_for        the park: the question taken off its call, the attempt stopped ("park")
    LiveParking.parked     after the attempt: its session cut back to the asking turn, the record kept

Once the human channel's question has waited ``ParkPolicy.after_s`` and it is the only thing in flight (the
model's one ``mcp__human__ask`` call: no other tool, subagent or background task running), the attempt is
stopped at that message boundary and its CLI closed. The session stays in the SessionStore, cut back to end on
the asking turn; the question stays open in the channel (``HumanChannel.park``). A tool approval or a plan
parks the same way (park_approval.py, park_plan.py). What happens next (the wait, the resume) is parking.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

# Imported as modules, not through the package: flower_core.runtime's __init__ names runtime.py, which
# imports parking.py, which imports this module (an import circle, tests/test_import_circles.py).
import flower_core.runtime.park_approval as park_approval
import flower_core.runtime.park_plan as park_plan
from flower_core.events import Event
from flower_core.payloads import ToolResultPayload
from flower_core.runtime.attempt import Outcome
from flower_core.runtime.park_calls import Calls, waiting_ask
from flower_core.runtime.parked import ParkRecord, ParkRecords

if TYPE_CHECKING:
    from flower_core.runtime.generation import StepState
    from flower_core.runtime.warm import WarmPool

log = logging.getLogger("flower_core.runtime.parking")  # parking's logger: its lines read as they always did

AttemptFn = Callable[..., Awaitable[Outcome]]
# Durable before shown: how long a question waits for its call's turn to reach the store before it is shown
# anyway, and how often it looks (the SDK writes the store in the background, "eager" flush: milliseconds).
SHOW_WAIT_S = 10.0
SHOW_POLL_S = 0.02
# A park that could not happen yet (the call's turn not stored, a limit said no) is tried again after this long
# when ``after_s`` is 0; otherwise after ``max(after_s, 1 s)``.
RETRY_S = 0.1


class WhenToPark(Protocol):
    """What the live parking reads of its ParkPolicy (parking.py), each time it decides."""

    after_s: float | None
    warm: WarmPool | None

    @property
    def enabled(self) -> bool: ...

    def allowed(self) -> bool: ...


class OpenCall(Protocol):
    """The call's turn in the stored session if nothing answered it; ``cut`` first drops what follows it."""

    def __call__(self, sid: str, call_id: str, *, cut: bool = False) -> Awaitable[dict[str, Any] | None]: ...


class LiveParking:
    """Parks a running attempt (see the module docstring); holds what it knows of each running step,
    keyed by the id of the step's StepState."""

    def __init__(self, policy: WhenToPark, *, records: ParkRecords, attempt: AttemptFn, open_call: OpenCall,
                 keep: Callable[[ParkRecord], None]) -> None:
        self.policy, self.records = policy, records
        self._attempt, self._open_call, self._keep = attempt, open_call, keep
        self._calls: dict[int, Calls] = {}  # per running step (id of its StepState)
        self._parking: dict[int, tuple[Any, str, ParkRecord]] = {}  # step -> (ask, call id, record) being parked
        self._marks: dict[int, ParkRecord] = {}  # step -> its approval waiting live, marked (park_approval)
        self._marked: dict[int, str] = {}  # step -> the ask id of that approval
        self._shown: dict[int, set[str]] = {}  # step -> ids of its asks shown (their "asked" event is out)

    def observe(self, state: StepState, ev: Event) -> bool:
        """See one event of a step; True = drop it: the CLI's own closing of the call being parked
        (a "rejected" result and an interruption line), which the resumed session never shows."""
        calls = self._calls.get(id(state))
        if calls is not None:
            calls.observe(ev)
        parking = self._parking.get(id(state))
        if parking is None:
            return False
        return (ev.kind == "tool_result" and ToolResultPayload.of(ev).tool_use_id == parking[1]) or (
            ev.kind == "prompt" and ev.text.startswith("[Request interrupted"))

    def withdraw(self, state: StepState, channel: Any) -> None:
        """The step was stopped: a park it was making is given up, its question withdrawn (nobody will
        collect the attempt's outcome)."""
        taken = self._parking.pop(id(state), None)
        if taken is not None:
            channel.withdraw(taken[0].id)

    # -- running and stopping -----------------------------------------------------------------------
    async def watched(self, spec: Any, prompt: str | None, resume: str | None, fork: bool, state: StepState,
                      channel: Any) -> Outcome:
        """One attempt, parked (stopped with "park") when its question is due; see ``parked`` for the rest."""
        if not self.policy.enabled:
            return await self._attempt(spec, prompt, resume, fork, state)
        calls = self._calls[id(state)] = Calls()
        watcher = asyncio.ensure_future(self._watch(state, channel, calls))
        channel.before_shown = partial(self._before_shown, state, channel, calls)
        kept = False
        try:
            return await self._attempt(spec, prompt, resume, fork, state)
        except asyncio.CancelledError:
            kept = True  # stopped, or the process is going away: a marked approval is asked again after it
            raise
        finally:
            channel.before_shown = None
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            self._calls.pop(id(state), None)
            self._shown.pop(id(state), None)
            self._marked.pop(id(state), None)
            mark = self._marks.pop(id(state), None)
            if mark is not None and not kept and id(state) not in self._parking:
                park_approval.drop(self.records, mark)  # the attempt is over: nothing waits on it now

    async def _before_shown(self, state: StepState, channel: Any, calls: Calls, ask: Any) -> None:
        """Durable before shown: a question (or approval) a call waits on is shown only once that call's turn
        is in the store, so a process killed from then on brings it back on its old card; an approval's record
        is written too. Bounded by SHOW_WAIT_S (then shown all the same, and said in the log). The watcher is
        told when it returns: the question is shown then (the channel emits its "asked" event right after)."""
        try:
            await self._stored_before_shown(state, channel, calls, ask)
        finally:
            self._shown.setdefault(id(state), set()).add(str(getattr(ask, "id", "")))
            calls.changed.set()

    async def _stored_before_shown(self, state: StepState, channel: Any, calls: Calls, ask: Any) -> None:
        if getattr(ask, "kind", "") not in ("", park_approval.KIND, park_plan.KIND):
            return  # the runtime's own questions (the cost cap) are asked between attempts: nothing to store
        deadline = time.monotonic() + SHOW_WAIT_S
        while True:
            call_id = next((cid for cid, (tool, args) in list(calls.main.items())
                            if waiting_ask(channel, tool, args if isinstance(args, dict) else {}) is ask), None)
            call = await self._open_call(state.session, call_id) if call_id and state.session else None
            if call is not None and call_id is not None:
                if ask.kind in (park_approval.KIND, park_plan.KIND) and self.policy.enabled:
                    await self._mark(state, channel, ask, call_id)
                return
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("question %s shown before its call was stored (after %.0f s)", ask.id, SHOW_WAIT_S)
                return
            await asyncio.sleep(min(left, SHOW_POLL_S))  # the store is written in the background: look again soon

    async def _watch(self, state: StepState, channel: Any, calls: Calls) -> None:
        """Sleep until the sole call in flight waits on a question or approval shown and asked ``after_s`` ago, and
        the warm pool does not keep it; then park. An approval waiting live is recorded meanwhile
        (park_approval.mark_waiting)."""
        after, marked = float(self.policy.after_s or 0.0), ""
        pool, key = self.policy.warm, None
        try:
            while True:
                calls.changed.clear()
                wait: float | None = None
                call = calls.sole()
                ask = waiting_ask(channel, call[1], call[2]) if call is not None else None
                if pool is not None and key is not None and (ask is None or key != (id(state), ask.id)):
                    pool.release(key)  # that question no longer waits with this CLI
                    key = None
                if call is not None:
                    park_in: float | None = max(after, 1.0)  # no ask waits: look again now and then
                    poll: float | None = None
                    if ask is not None:
                        park_in = ask.asked_at + after - time.time()
                        if ask.id not in self._shown.get(id(state), ()):  # its card first (the hook wakes us)
                            park_in = max(park_in, ask.asked_at + SHOW_WAIT_S + 1.0 - time.time())
                        if pool is not None and pool.hold((id(state), ask.id), ask.asked_at, calls.changed.set):
                            key, park_in = (id(state), ask.id), None  # kept warm until a newer question comes
                    marked = self._marked.get(id(state), marked)  # (the card's own hook may have marked it first)
                    if _unmarked(channel, call[1], ask, marked):  # see park_approval/park_plan.mark_waiting
                        marked = ask.id if ask is not None and await self._mark(state, channel, ask, call[0]) else ""
                        poll = park_approval.MARK_POLL_S if not marked else None
                    if ask is not None and park_in is not None and park_in <= 0:
                        if await self._stop_for(state, channel, ask, call[0]):
                            return
                        park_in = max(after, 1.0) if after > 0 else RETRY_S  # not now: look again later
                    waits = [w for w in (park_in, poll) if w is not None]
                    wait = max(min(waits), 0.01) if waits else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(calls.changed.wait(), wait)
        finally:
            if pool is not None and key is not None:
                pool.release(key)

    async def _mark(self, state: StepState, channel: Any, ask: Any, call_id: str) -> bool:
        call = await self._open_call(state.session, call_id) if state.session else None
        if call is None or state.session is None:
            return False  # not stored yet: a restart could not find it; look again soon
        record = ParkRecord(state.session, call_id, state.result.step, ask.question, list(ask.options), ask.asked_at)
        self._marks[id(state)] = record
        waiting = park_plan.mark_waiting if ask.kind == park_plan.KIND else park_approval.mark_waiting
        if not waiting(channel, ask, call, self.records, record):
            return False
        self._marked[id(state)] = ask.id
        return True

    async def _stop_for(self, state: StepState, channel: Any, ask: Any, call_id: str) -> bool:
        signal, sid = state.signal, state.session
        if signal is None or signal.reason is not None or state.writing or state.has_pending() or not sid:
            return False
        call = await self._open_call(sid, call_id) if self.policy.allowed() else None
        if call is None:
            return False  # the call's turn is not in the store yet: resuming could not answer it
        if signal is not state.signal or signal.reason is not None or not channel.park(ask.id):
            return False
        record = ParkRecord(sid, call_id, state.result.step, ask.question, list(ask.options), ask.asked_at)
        if ask.kind == park_approval.KIND:  # from now on a decision is kept in the record before it is told
            park_approval.mark(record, ask, call)
            park_approval.keep_decisions(channel, ask.id, self.records, record)
        elif ask.kind == park_plan.KIND:
            park_plan.mark(record, ask)
            park_plan.keep_decisions(channel, ask.id, self.records, record)
        self._parking[id(state)] = (ask, call_id, record)
        signal.request("park")
        return True

    async def parked(self, out: Outcome, state: StepState, channel: Any) -> tuple[ParkRecord, Any] | None:
        """After the attempt: cut the session back to the asking turn and keep the record; None = no park."""
        taken = self._parking.pop(id(state), None)
        if taken is None:
            return None
        ask, call_id, record = taken
        sid = out.session_id or state.session
        call = await self._open_call(sid, call_id, cut=True) if sid and out.stopped == "park" else None
        if sid is None or call is None:
            channel.withdraw(ask.id)  # the attempt ended some other way: the question cannot be kept
            return None  # (an approval's record stays: a retry resuming the session asks or applies it)
        record.session_id = sid
        self._keep(record)  # only a restart needs it: a disk problem must not stop the park itself
        return record, ask


def _unmarked(channel: Any, tool: str, ask: Any, marked: str) -> bool:
    """Should the watcher mark this call's waiting approval or plan (or look again soon for an approval)?"""
    if ask is not None and getattr(ask, "kind", "") == park_plan.KIND:
        return ask.id != marked
    return park_approval.unmarked(channel, tool, ask, marked)
