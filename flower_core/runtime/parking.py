"""Parking: a run waiting on a person gives its CLI process back until the person has answered.

A CLI holds ~190 MB while a question waits, and chat questions wait for hours. So once the human
channel's question has waited ``ParkPolicy.after_s`` and it is the only thing in flight (the model's
one ``mcp__human__ask`` call: no other tool, subagent or background task running), the attempt is
stopped at that message boundary and its CLI closed. The session stays in the SessionStore, cut back
to end on the asking turn; the question stays open in the channel (``HumanChannel.park``).

When the question settles - answered, declined, timed out, or the run is interrupted instead - the
call's result is written into the session as the tool would have returned it (parked.result_entry)
and the same session resumes: the CLI continues the turn on its own, so the model reads the answer
as its tool result, followed by one short note. Nothing else tells it the process was parked.

A run stopped while parked settles its question as "cancelled", like a live one. A record on disk
(parked.ParkRecord) lets a new process restore the question after a restart: when ``Runtime.run``
resumes that session, the question is asked again (parked from the start) instead of starting a CLI.
Events: ``system`` with text "parked" / "unparked" (payload ``subtype`` the same), see ``_event``.
A tool approval parks the same way; how its outcome resumes the run is park_approval.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from flower_core.events import Event
from flower_core.payloads import ToolResultPayload
from flower_core.runtime import park_approval, park_plan
from flower_core.runtime.attempt import Outcome
from flower_core.runtime.handoff import interrupt_prompt
from flower_core.runtime.handover import CONTINUE, hand_over
from flower_core.runtime.park_calls import Calls, parkable, waiting_ask
from flower_core.runtime.parked import (
    WITHDRAWN,
    ParkRecord,
    ParkRecords,
    call_entry,
    closed_by_cli,
    continue_env,
    interrupted_call,
    last_open_call,
    open_call,
    release_store,
    result_entry,
)
from flower_core.runtime.resume import close_cut_off, cut_off_event, with_kept_mail
from flower_core.runtime.warm import WarmPool
from flower_core.session_store import stored_entries

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

    from flower_core.runtime.generation import StepState
    from flower_core.session_store import SQLiteSessionStore

log = logging.getLogger(__name__)

PARKED, UNPARKED = "parked", "unparked"
# The one line the model reads after its tool result when a parked run resumes.
RESUME_NOTE = "(Your question waited a while for the person; their reply is the tool result above. Continue.)"
# The fallback when the call could not be answered in the session: the reply goes in the prompt instead.
UNANSWERED = "The reply to your question “{question}”: {reply}"

AttemptFn = Callable[..., Awaitable[Outcome]]
# Durable before shown: how long a question waits for its call's turn to reach the store before it is shown
# anyway, and how often it looks (the SDK writes the store in the background, "eager" flush: milliseconds).
SHOW_WAIT_S = 10.0
SHOW_POLL_S = 0.02
# A park that could not happen yet (the call's turn not stored, a limit said no) is tried again after this long
# when ``after_s`` is 0; otherwise after ``max(after_s, 1 s)``.
RETRY_S = 0.1


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
    """The Runtime's parking: ``attempt`` stands in for its attempt, ``observe`` sees its events."""

    def __init__(self, policy: ParkPolicy, *, store: SQLiteSessionStore, project_key: Callable[[], str],
                 records: ParkRecords, attempt: AttemptFn, absorb: Callable[[Outcome, StepState], None],
                 emit: Callable[[StepState, Event], None]) -> None:
        self.policy = policy
        self.store, self.project_key, self.records = store, project_key, records
        self._attempt, self._absorb, self._emit = attempt, absorb, emit
        self._calls: dict[int, Calls] = {}  # per running step (id of its StepState)
        self._parking: dict[int, tuple[Any, str, ParkRecord]] = {}  # step -> (ask, call id, record) being parked
        self._marks: dict[int, ParkRecord] = {}  # step -> its approval waiting live, marked (park_approval)
        self._marked: dict[int, str] = {}  # step -> the ask id of that approval
        self._resumed: set[int] = set()  # steps whose first attempt was looked at (see _close_cut_off)
        self._shown: dict[int, set[str]] = {}  # step -> ids of its asks shown (their "asked" event is out)

    # -- the runtime's hooks ------------------------------------------------------------------------
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

    async def attempt(self, spec: Any, prompt: str, resume: str | None, fork: bool, state: StepState) -> Outcome:
        """One attempt as the runtime sees it: parks and resumes inside as often as the step asks."""
        channel = parkable(getattr(spec, "channel", None))
        first = id(state) not in self._resumed
        self._resumed.add(id(state))
        if channel is None:
            if resume and first and not fork:
                await self._close_cut_off(resume, state)
            if resume and not fork:
                said = await self._hand_over(resume, prompt, None)
                return await self._attempt(spec if said is not None else _continuing(spec), said, resume, fork, state)
            return await self._attempt(spec, prompt, resume, fork, state)
        parked = await self._restore(resume, fork, state, channel, adopt=first) if resume else None
        run_prompt: str | None = prompt
        run_spec = spec  # this attempt's own: it may continue the stored turn (handover.py)
        if resume and first and not fork and parked is None:
            await self._close_cut_off(resume, state)
        if resume and not fork and parked is None:  # a first attempt carries the mail kept for the run too
            run_prompt = await self._hand_over(resume, prompt, channel, mail=first)
            if run_prompt is None:
                run_spec = _continuing(spec)
        elif resume and first and parked is None and prompt is not None:
            run_prompt = with_kept_mail(prompt, channel)
        allowed: ParkRecord | None = None  # an approval allowed while parked: the CLI makes its call again
        while True:
            if parked is None:
                try:
                    out = await self._watched(run_spec, run_prompt, resume, fork, state, channel)
                except asyncio.CancelledError:
                    taken = self._parking.pop(id(state), None)
                    if taken is not None:  # stopped while being parked: nobody will collect its outcome
                        channel.withdraw(taken[0].id)
                    raise
                finally:
                    if allowed is not None:  # a decision its call never took goes (the call was made or not)
                        park_approval.finish(channel, self.records, allowed)
                        allowed = None
                parked = await self._parked(out, state, channel)
                if parked is None:
                    return out
                self._absorb(out, state)  # the books of the part before the park
            record, ask = parked
            release_store(self.store)  # no open files while it waits: the next use opens it again
            note, answered = await self._wait(record, ask, state, channel)
            if answered:  # the CLI continues the stored turn itself: the note is its only new user text
                spec = replace(spec, env={**getattr(spec, "env", {}), **continue_env(note)})
            run_spec = spec
            run_prompt, resume, fork, parked = None if answered else note, record.session_id, False, None
            allowed = record if record.kind and record.decision in ("once", "run") else None

    # -- running and stopping -----------------------------------------------------------------------
    async def _watched(self, spec: Any, prompt: str | None, resume: str | None, fork: bool, state: StepState,
                       channel: Any) -> Outcome:
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

    async def _parked(self, out: Outcome, state: StepState, channel: Any) -> tuple[ParkRecord, Any] | None:
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
        self._emit(state, _event(PARKED, record, ask.id, restored=False))
        return record, ask

    async def _restore(self, resume: str, fork: bool, state: StepState, channel: Any, *,
                       adopt: bool) -> tuple[ParkRecord, Any] | None:
        """Resuming a session parked by an earlier process: ask its question again, parked from the start.
        ``adopt``: the step's first attempt, where a question cut off by a process's end is picked up too."""
        record = None if fork else self.records.load(resume)
        if record is None and not fork and adopt and self.policy.adopt:
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
        self._emit(state, _event(PARKED, record, ask.id, restored=True))
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

    async def _hand_over(self, sid: str, prompt: str | None, channel: Any, *, mail: bool = False) -> str | None:
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

    async def _close_cut_off(self, sid: str, state: StepState) -> None:
        try:
            cut = await close_cut_off(self.store, self._key(sid))
        except Exception:  # a store problem: the CLI's own closing of the calls still applies
            return
        if cut:
            self._emit(state, cut_off_event(cut, step=state.result.step, session_id=sid))

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


def _unmarked(channel: Any, tool: str, ask: Any, marked: str) -> bool:
    """Should the watcher mark this call's waiting approval or plan (or look again soon for an approval)?"""
    if ask is not None and getattr(ask, "kind", "") == park_plan.KIND:
        return ask.id != marked
    return park_approval.unmarked(channel, tool, ask, marked)
