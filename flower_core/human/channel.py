"""HumanChannel: the model asks a person through an in-process MCP tool; any UI answers from any thread.

    model ── tools ask · inbox · share (tools.py) ──▶ HumanChannel ◀── answer · decline · send ── any UI thread
                                                        │ owns
                            Questions (questions.py) ◀──┼── Pullers   next_ask (pull mode)
                            the asks, under one lock    ├── Approver  channel.approver  approve · pending
                                                        └── Parking   channel.parking   park · settled · restore

The channel keeps the seed's members (``ask``, ``pending``, ``next_ask``, ``answer``, ``decline``, ``send``,
``amend``, ``transcript``…) and hands ``next_ask``, ``approve``/``pending_approvals`` and the parking members
to its collaborators, which are given the Questions and the channel functions they call, not the channel.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import EllipsisType
from typing import Any

import flower_core.human.records as records
import flower_core.human.texts as texts
from flower_core.events import Event
from flower_core.human.approval import ApprovalGate, Approver
from flower_core.human.ask import Ask, AskState, check_question
from flower_core.human.mail import Mail
from flower_core.human.parked import Parking
from flower_core.human.plan_review import PlanReview
from flower_core.human.questions import Keeper, Pullers, Questions, release, running_loop
from flower_core.human.share import share
from flower_core.lang import Catalogue, catalogue


class HumanChannel:
    """Questions and mail between the model and a person.

    Model side: tools ``ask`` (blocks until an outcome) and ``inbox`` (never blocks) on an in-process
    MCP server named ``human``. UI side: push (``on_event``) or pull (``next_ask``), then
    ``answer``/``decline``/``send`` from any thread. Approvals of tool calls: ``approval.py``; parking: ``parked.py``.
    """

    SERVER_NAME = "human"
    TOOLS = ("mcp__human__ask", "mcp__human__inbox", "mcp__human__share")

    def __init__(
        self,
        *,
        on_event: Callable[[Event], Any] | None = None,
        max_asks: int | None = None,
        timeout_s: float | None = 1800.0,
        log_path: str | Path | None = None,
        amend_path: str | Path | None = None,
        over_budget_text: str | None = None,
        timeout_text: str | None = None,
        declined_text: str | None = None,
        language: str | Catalogue | None = None,
    ) -> None:
        # Every text the model reads from this channel comes from one catalogue (flower_core/lang/): the
        # seed's (Chinese) unless ``language`` names another; the three *_text arguments override it.
        self.lang = catalogue(language)
        self.on_event = on_event
        self.max_asks = max_asks
        self.timeout_s = timeout_s
        self.log_path = Path(log_path) if log_path is not None else None
        self.amend_path = Path(amend_path) if amend_path is not None else None
        self.over_budget_text = self.lang["ask.over_budget"] if over_budget_text is None else over_budget_text
        self.timeout_text = self.lang["ask.timeout"] if timeout_text is None else timeout_text
        self.declined_text = self.lang["ask.declined"] if declined_text is None else declined_text
        self.share_root: Path | None = None  # the workspace `share` posts from (share.py; Workflow.run sets it)
        self.mail: list[Mail] = []
        # Exceptions from on_event callbacks and from writing the log/amend files: kept, never raised.
        self.ui_errors: list[BaseException] = []
        # One lock (the questions') guards all bookkeeping; answer/decline/send arrive from arbitrary threads.
        self._questions = Questions()
        self._lock = self._questions.lock
        self._pullers = Pullers(self._questions)
        self._loop: asyncio.AbstractEventLoop | None = None
        # The run's approval policy for tool calls (approval.py; starter_flow sets it), None: nobody is asked.
        self.approvals: ApprovalGate | None = None
        # The run's plan review (plan_review.py; starter_flow sets it when the run plans first), None: no plan step.
        self.plan: PlanReview | None = None
        self.approver = Approver(self._questions, answer=self.answer, decline=self.decline)
        self.parking = Parking(self._questions, self.mail, settle=self._settle_from_anywhere, finish=self._finish,
                               show=self._show, remember_loop=self._remember_loop)
        # Awaited before a question's "asked" event (what shows its card): the runtime makes what brings the
        # question back after a crash durable first (parking.py). Bounded by its owner; errors go to ui_errors.
        self.before_shown: Callable[[Ask], Awaitable[None]] | None = None
        # Who settled a question, by its squashed text, when a front end said so (adapters' Applier): the note
        # a resumed session reads names them (runtime/handover.py).
        self.answered_by: dict[str, str] = {}

    @property
    def asks(self) -> list[Ask]:
        """Every question asked on this channel, oldest first (settled ones too)."""
        return self._questions.asks

    # ----- names and server -------------------------------------------------------------------------

    @property
    def tool_name(self) -> str:
        return self.TOOLS[0]

    def mcp_servers(self) -> dict[str, Any]:
        """{"human": config} for ClaudeAgentOptions(mcp_servers=...). A fresh server per call."""
        from .tools import build_server  # the SDK is only needed once a run is wired

        self._remember_loop()
        return {self.SERVER_NAME: build_server(self)}

    @property
    def remaining(self) -> int:
        """Questions left; -1 when unlimited (max_asks=None)."""
        if self.max_asks is None:
            return -1
        with self._lock:
            return max(0, self.max_asks - self._questions.counted)

    # ----- model side -------------------------------------------------------------------------------

    async def ask(self, question: str, options: list[str] | None = None) -> Ask:
        """Put a question to the human and return the settled Ask (``state``, ``answer``; ``reply`` is the
        text the model reads). Nobody answering is an outcome too; raises only CancelledError."""
        return await self.ask_outcome(question, options)

    async def ask_outcome(self, question: str, options: list[str] | None = None, *, kind: str = "",
                          facts: dict[str, Any] | None = None, timeout_s: float | EllipsisType | None = ...) -> Ask:
        """Like ask(), but returns the settled Ask (state, answer, reply).

        ``kind`` marks a question the runtime asks on its own behalf (e.g. "budget", with ``facts``
        for the payload): it is not counted against ``max_asks`` and never refused as over_budget.
        ``timeout_s`` replaces the channel's for this ask (an approval waits by its own rule).
        """
        wait = self.timeout_s if isinstance(timeout_s, EllipsisType) else timeout_s
        loop = asyncio.get_running_loop()
        self._remember_loop()
        q, opts, problem = check_question(question, options, self.lang)
        immediate = ""
        fut: asyncio.Future[None] | None = None
        questions = self._questions
        with self._lock:
            ask = questions.new(q, opts, kind=kind, facts=facts)
            if problem:
                immediate = "invalid"
            elif not kind and self.max_asks is not None and questions.counted >= self.max_asks:
                immediate = "over_budget"
            else:
                questions.counted += 0 if kind else 1
                if wait is not None and wait <= 0:
                    immediate = "timeout"
            if immediate:
                questions.claimed.add(ask.id)
            else:
                fut = loop.create_future()
                questions.futures[ask.id] = fut
        if fut is None:
            # Settled without waiting: no "asked" event, never pending.
            self._finish(ask, immediate, "", reply=problem)
            return ask
        try:
            await self._before_shown(ask)
            self._show(ask)
            await asyncio.wait({fut}, timeout=wait)
            if ask.id in questions.parked:  # the runtime is closing this call: it must never return to the CLI
                await loop.create_future()
        except asyncio.CancelledError:
            if ask.id not in questions.parked and questions.claim(ask.id):
                self._finish(ask, "cancelled", "")
            raise
        if not fut.done() and questions.claim(ask.id):
            self._finish(ask, "timeout", "")
        else:
            await fut  # someone claimed it first; their settlement is already scheduled onto this loop
        return ask

    async def _before_shown(self, ask: Ask) -> None:
        hook = self.before_shown
        if hook is None:
            return
        try:
            await hook(ask)
        except Exception as exc:  # shown all the same: a card late beats a question nobody sees
            self.ui_errors.append(exc)

    def take_mail(self) -> list[Mail]:
        """Hand all queued mail to the model (the inbox tool) and mark it delivered."""
        self._remember_loop()
        now = time.time()
        with self._lock:
            taken = [m for m in self.mail if m.state == "queued"]
            for m in taken:
                m.state, m.delivered_at = "delivered", now
        for m in taken:
            self._emit(m.event())
        return taken

    def share_file(self, path: str, note: str) -> tuple[str, bool]:
        """Show a workspace file to the person (the share tool): the reply the model reads, and whether it
        is an error (no workspace, outside it, missing, empty)."""
        reply, event = share(self.share_root, path, note, self.lang)
        if event is not None:
            self._emit_on_loop(event)
        return reply, event is None

    # ----- UI side ----------------------------------------------------------------------------------

    def pending(self) -> list[Ask]:
        """Questions still waiting for an answer, oldest first."""
        return self._questions.waiting()

    async def next_ask(self, timeout: float | None = None) -> Ask | None:
        """Pull mode: the next pending question not yet pulled; None if none came within `timeout`."""
        return await self._pullers.next(timeout)

    def answer(self, ask_id: str, text: str) -> bool:
        """Answer a waiting question. False if the id is unknown or the question is no longer waiting."""
        answer = texts.cap(str(text).strip(), marker=self.lang["text.truncated"])
        return self._settle_from_anywhere(ask_id, "answered", answer)

    def decline(self, ask_id: str, reason: str = "") -> bool:
        """Refuse a waiting question; the model decides on its own. False if it is no longer waiting."""
        return self._settle_from_anywhere(ask_id, "declined",
                                          texts.cap(str(reason).strip(), marker=self.lang["text.truncated"]))

    def send(self, text: str, *, mail_id: str | None = None) -> Mail | None:
        """The human speaks up: queue mail for the inbox tool and append it to amend_path. None if empty.

        ``mail_id``: an id that outlives this process (a front end's durable intent id), so the mail can
        be recognised in the stored session later; default "m<n>"."""
        if not isinstance(text, str) or not text.strip():
            return None
        body = texts.cap(text.strip(), marker=self.lang["text.truncated"])
        # Before queueing, so the delivered event reports it too; the path it went to, "" when nowhere.
        amended = str(self.amend_path) if self.amend(body) else ""
        with self._lock:
            mail = Mail(id=mail_id or f"m{len(self.mail) + 1}", text=body, amended=amended)
            self.mail.append(mail)
            event = mail.event()
        self._emit_on_loop(event)
        return mail

    def amend(self, text: str, *, label: str | None = None) -> bool:
        """Append text under a dated heading (``label``, else the language's) to amend_path. True only if written."""
        if self.amend_path is None or not text.strip():
            return False
        label = self.lang["amend.label"] if label is None else label
        try:
            records.append(self.amend_path, records.amend_entry(text.strip(), label, time.time()))
        except OSError as exc:
            self.ui_errors.append(exc)
            return False
        return True

    def pending_mail(self) -> list[Mail]:
        with self._lock:
            return [m for m in self.mail if m.state == "queued"]

    def transcript(self) -> str:
        with self._lock:
            asks = list(self.asks)
        return records.transcript(asks, self.lang)

    # ----- approvals and parking: thin doors to the collaborators (their docs are there) --------------

    def approve(self, ask_id: str, decision: str, text: str = "", *, by: str = "") -> bool:
        return self.approver.approve(ask_id, decision, text, by=by)

    def pending_approvals(self) -> list[Ask]:
        return self.approver.pending()

    def park(self, ask_id: str) -> bool:
        return self.parking.park(ask_id)

    async def settled(self, ask_id: str, timeout_s: float | EllipsisType | None = ...) -> Ask:
        """A parked question's outcome; ``timeout_s`` defaults to the channel's."""
        return await self.parking.settled(ask_id, self.timeout_s if isinstance(timeout_s, EllipsisType) else timeout_s)

    def withdraw(self, ask_id: str) -> bool:
        return self.parking.withdraw(ask_id)

    def restore(self, question: str, options: list[str], asked_at: float, *, kind: str = "",
                facts: dict[str, Any] | None = None) -> Ask:
        return self.parking.restore(question, options, asked_at, kind=kind, facts=facts)

    def requeue(self, kept: list[str] | list[tuple[str, str]]) -> list[Mail]:
        return self.parking.requeue(kept)

    def keep_outcomes(self, ask_id: str, keep: Keeper) -> None:
        self.parking.keep_outcomes(ask_id, keep)

    # ----- internals --------------------------------------------------------------------------------

    def _remember_loop(self) -> None:
        loop = running_loop()
        if loop is not None:
            self._loop = loop

    def _show(self, ask: Ask) -> None:
        """Emit a waiting ask's "asked" event and wake the pullers (``next_ask``)."""
        self._emit(ask.event(self.remaining))
        self._pullers.wake()

    def _settle_from_anywhere(self, ask_id: str, state: str, answer: str) -> bool:
        questions = self._questions
        with self._lock:
            if not questions.claim(ask_id):
                return False
            keep = questions.keepers.get(ask_id)
            try:
                if keep is not None:
                    keep(state, answer)
            except OSError as exc:
                self.ui_errors.append(exc)
                questions.claimed.discard(ask_id)
                return False
            questions.keepers.pop(ask_id, None)
            fut = questions.futures[ask_id]
            ask = next(a for a in questions.asks if a.id == ask_id)
        loop = fut.get_loop()
        if running_loop() is loop:
            self._finish(ask, state, answer)
            return True
        try:
            loop.call_soon_threadsafe(self._finish, ask, state, answer)
        except RuntimeError:  # the loop is closed: nobody waits any more, but keep the record right
            self._finish(ask, state, answer)
        return True

    def _reply_for(self, ask: Ask, state: str, answer: str) -> str:
        if state == "answered":
            return answer or self.lang["ask.empty_answer"]
        if state == "declined":
            return self.declined_text + (f"\n{self.lang['ask.decline_reason']}{answer}" if answer else "")
        if state == "over_budget":
            return self.over_budget_text
        return self.timeout_text  # timeout and cancelled

    def _finish(self, ask: Ask, state: str, answer: str, reply: str = "") -> None:
        """Apply an outcome (on the ask's loop thread): record it, release the waiter, log, emit."""
        with self._lock:
            ask.state, ask.answer, ask.settled_at = AskState(state), answer, time.time()
            ask.reply = reply or self._reply_for(ask, state, answer)
            fut = self._questions.futures.pop(ask.id, None)
        if fut is not None:
            try:
                release(fut)
            except RuntimeError:  # its loop is closed
                pass
        if self.log_path is not None:
            try:
                records.append(self.log_path, records.ask_entry(ask, self.lang) + "\n")
            except OSError as exc:
                self.ui_errors.append(exc)
        self._emit(ask.event(self.remaining))

    def _emit(self, event: Event) -> None:
        callback = self.on_event
        if callback is None:
            return
        try:
            callback(event)
        except Exception as exc:  # a UI bug must never reach the run
            self.ui_errors.append(exc)

    def _emit_on_loop(self, event: Event) -> None:
        """Emit on the run's loop thread when called from elsewhere (on_event is loop-thread only)."""
        loop = self._loop
        if loop is None or not loop.is_running() or running_loop() is loop:
            self._emit(event)
            return
        try:
            loop.call_soon_threadsafe(self._emit, event)
        except RuntimeError:
            self._emit(event)
