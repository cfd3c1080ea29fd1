"""LiveRun: the chat side of one run — its view, pipe to the threads, card ledger and status.

The run itself (workflow, runtime, question channel, oracle) is on the other side of a transport
(adapters/transport): in this process or on a worker. Its events arrive through `on_event`
(synchronous, never raises): ask events are bound to cards first (a question restored after a
restart or a takeover lands on its old card), then the pipe renders them. What people say arrives
as coroutines returning an `IntentResult` (the hub has already checked who may do what); each
becomes an `Intent` submitted to the run side, which logs it durably before anything is said back
(adapters/transport/intents.py). A card holds at most one answer at a time (the ledger's `held`),
so two people clicking at once cannot both be told "answered".
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from adapters.chores import Chores
from adapters.hub.changes import changed, with_changes
from adapters.hub.ledger import CardLedger, card_gen
from adapters.hub.options import RunOptions
from adapters.hub.pipe import RunPipe
from adapters.hub.results import IntentResult
from adapters.hub.spend import SpendTally
from adapters.hub.workspace import Bookkeeping
from adapters.state import StateStore
from adapters.state.base import RunRecord, RunStatus
from adapters.transport.base import RunEnd, RunSide, Undelivered
from adapters.transport.intents import Intent, IntentReply, Op
from adapters.transport.plan import RunFactory, RunPlan, default_factory
from adapters.view import AskCard, RunOutcome
from adapters.view import fmt as _fmt
from adapters.view.status import PARKED_STATES
from flower_core import Event
from flower_core.payloads import (
    AskPayload,
    BudgetPayload,
    CutOffPayload,
    InputNotePayload,
    RetryPayload,
    StepPayload,
    SystemPayload,
)

__all__ = ["KEPT", "REASKED", "LiveRun", "RunCallbacks", "RunFactory", "RunOptions", "RunPlan", "default_factory"]

log = logging.getLogger(__name__)

# view state -> the run status kept in the store
_STORE_STATUS = {"starting": RunStatus.STARTING, "running": RunStatus.RUNNING, "interrupted": RunStatus.RUNNING,
                 "waiting": RunStatus.WAITING, "approving": RunStatus.WAITING, "done": RunStatus.DONE,
                 "failed": RunStatus.FAILED, "stopped": RunStatus.STOPPED, "died": RunStatus.DIED,
                 "parked": RunStatus.PARKED, "parked_approving": RunStatus.PARKED,
                 "reviewing": RunStatus.WAITING, "parked_reviewing": RunStatus.PARKED}
REASKED = "Asked again after the run was woken."
KEPT = "Still open after a restart: the run is waiting for this answer."
MOVED = ("Your answer is kept: the run moved to another worker, which gets it when it asks this again (or in "
         "its inbox if it goes on without asking).")
UNHELD = ("The worker that held this run stopped answering. Your answer is kept and reaches the run when "
          "another worker takes it over.")
TOO_LATE = ("The run ended just before your words reached it, so nothing heard them. Write them in its thread "
            "again to continue the run.")


@dataclass(frozen=True)
class RunCallbacks:
    """What a LiveRun tells the hub: it ended (`on_end`), a card was asked or settled (`on_ask`: card id,
    "asked"/"settled"), another worker took it over (`on_handover`: holder, previous holder)."""

    on_end: Callable[[LiveRun], object] | None = None
    on_ask: Callable[[LiveRun, str, str], object] | None = None
    on_handover: Callable[[LiveRun, str, str], object] | None = None


class LiveRun:
    def __init__(self, record: RunRecord, pipe: RunPipe, *, store: StateStore, clock: Callable[[], float],
                 waking: bool = False, has_oracle: bool = True, callbacks: RunCallbacks = RunCallbacks(),
                 ledger: CardLedger | None = None, restoring: bool = False) -> None:
        self.record, self.run_id = record, record.run_id
        self.pipe = pipe
        self.view = pipe.view
        self.store = store
        self.ledger = ledger or CardLedger(record.run_dir)  # a successor shares its predecessor's (one writer)
        self.spend = SpendTally(record.run_id, store, record.spent_usd)
        self.successor: LiveRun | None = None  # who shows the run after a takeover
        self.waking, self.has_oracle = waking, has_oracle
        self.side: RunSide | None = None
        self.outcome: RunOutcome | None = None
        self.finished = asyncio.Event()
        self._clock, self._callbacks = clock, callbacks
        self._started = clock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_reason, self._stopped_by = "", ""
        self._ending = False
        self._closing: asyncio.Future[None] | None = None
        self._chores = Chores()
        self._oracle_n = 0
        self._status = record.status
        self._reused: set[str] = set()
        # A run brought back after a restart, or followed again by a restarted front: its woken steps pass
        # quietly until the run does something new (it parks again, or a step starts a CLI).
        self._restoring = restoring or record.status == RunStatus.PARKED
        self._when_back: list[Callable[[], object]] | None = None

    def when_back(self, call: Callable[[], object]) -> None:
        """Call `call` once the run has come back: it waits again (parked), does something new, or ended.
        (A restart brings parked runs back a few at a time: each holds its stores open until then.)"""
        if not self._restoring or self.finished.is_set():
            call()
        else:
            self._when_back = [*(self._when_back or ()), call]

    def _came_back(self) -> None:
        calls, self._when_back = self._when_back or [], None
        for call in calls:
            try:
                call()
            except Exception as exc:
                log.warning("run %s: a came-back callback failed: %r", self.run_id, exc)

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self, side: RunSide) -> None:
        """Begin showing the run whose run side is `side` (already started by the transport)."""
        self.side = side
        self._loop = asyncio.get_running_loop()
        self.pipe.start()
        self.pipe.put([self.view.status_now()])

    @property
    def holder(self) -> str:
        """The worker holding the run ("" in this process)."""
        return self.side.holder if self.side is not None else ""

    @property
    def parked(self) -> bool:
        """Waiting on a question with no CLI process (the hub counts these apart from running runs)."""
        return self.view.status_card.state in PARKED_STATES

    def cancel(self, reason: str, by: str = "") -> bool:
        """Stop the run side without a word to it: reason "shutdown" (this process is going away)."""
        if self.side is None or self.finished.is_set() or self._ending:
            return False
        if not self.side.cancel(reason):
            return False
        self._stop_reason, self._stopped_by = reason, by
        return True

    async def stop(self, user: str) -> bool:
        """A person ends the run: a durable intent, so a restart in between cannot bring the run back."""
        if self.side is None or self.finished.is_set() or self._ending:
            return False
        self._stop_reason, self._stopped_by = "stopped", user
        try:
            reply = await self.side.submit(Intent(Op.STOP, user=user))
        except Undelivered:
            return True  # logged: whoever holds the run next ends it
        if not reply.ok:
            self._stop_reason, self._stopped_by = "", ""
        return reply.ok

    async def ended(self, end: RunEnd) -> None:
        """The run side's last word: settle what is left, show the summary, close the pipe."""
        if self._ending:
            return
        self._ending = True
        try:
            await self._chores.wait()
            self._book(end)
            if end.state == "died":
                return  # the bot is going away (or the run moved): its cards stay open
            self._settle_old_cards(final=True)
            cost = end.cost_usd or self.view.status_card.cost_usd
            self.outcome = RunOutcome(end.state, result=end.text, cost_usd=cost,
                                      duration_s=self._clock() - self._started, failed_at=end.failed_at,
                                      error=end.error, by=self._stopped_by, steps=end.steps)
            workspace = Path(self.record.workspace)  # the Files line: the run's work, not the bookkeeping
            changes = await changed(workspace, self.record.created_at, Bookkeeping.of(workspace, self.record.run_dir))
            self.pipe.put(with_changes(self.view.finish(self.outcome), changes, self.run_id))
            self._set_status(end.state)
        finally:
            try:
                await self.pipe.close()
            finally:  # even when a shutdown cancels this very drain: hub.close() waits on `finished`
                self.finished.set()
                self._came_back()
                if (on_end := self._callbacks.on_end) is not None:
                    on_end(self)

    def _book(self, end: RunEnd) -> None:
        """Keep what the run cost, and its cap as last raised, in its record: the next round (or the wake
        after a restart) counts them against the cap (spend.py)."""
        card = self.view.status_card
        self.spend.ended(end.cost_usd, card.aside_usd, card.cap_usd)

    def handed_over(self, holder: str, previous: str) -> None:
        """The run went on on another worker: this view ends quietly and the hub shows the run afresh."""
        self._closing = asyncio.ensure_future(self.ended(RunEnd("died")))  # not a chore: it waits on those
        if (on_handover := self._callbacks.on_handover) is not None:
            on_handover(self, holder, previous)

    # ---- events -------------------------------------------------------------------------------
    def on_event(self, ev: Event) -> None:
        """The run side's sink, on the chat loop (the transport brought the event here). Never blocks, never
        raises."""
        try:
            subtype = SystemPayload.of(ev).subtype if ev.kind == "system" else ""
            if ev.kind == "step" and StepPayload.of(ev).reused:
                self._reused.add(ev.text)
            if self._restoring:
                if ev.kind == "step":
                    self.view.on_event(ev)  # the card learns the step; the thread needs no step lines again
                    return
                self._restoring = ev.kind == "ask" or (ev.kind == "system" and subtype != "parked")
                if not self._restoring or ev.kind == "ask":  # (a question asked again live: back too)
                    self._came_back()
            ask = AskPayload.of(ev) if ev.kind == "ask" else None
            if ask is not None and ask.is_question:  # questions: cards
                if ask.state == "cancelled" and self._stop_reason == "shutdown":
                    return  # the bot is going away: the card stays open, answerable after the restart
                self._ask_event(ev, ask)
            elif subtype in _RUN_SIDE_NOTES:
                self._run_side_note(subtype, ev)
            else:
                if subtype == "budget":
                    # in the record at once: a kill before the end loses none of it
                    self.spend.reported(BudgetPayload.of(ev))
                elif ev.kind == "retry" and (refused := RetryPayload.of(ev)).model_refused:
                    self._model_taken_back(refused.model)
                self.pipe.on_event(ev)
            self._set_status(self.view.status_card.state)
        except Exception as exc:
            log.warning("run %s: event %s not handled: %r", self.run_id, ev.kind, exc)

    def _model_taken_back(self, model: str) -> None:
        """The endpoint refused the run's chosen model when a CLI started: a restart must not choose it again."""
        run_dir = Path(self.record.run_dir)
        replace(RunOptions.load(run_dir), model=model or None).save(run_dir)

    def step_done(self, name: str) -> None:
        if name not in self._reused:  # reused steps report before anything runs
            self._settle_old_cards(final=False)

    def _ask_event(self, ev: Event, ask: AskPayload) -> None:
        ask_id, state = ask.id, ask.state
        options = list(ask.options)
        if state == "asked":
            old = self.ledger.match(ev.text, before_gen=self.view.gen)
            if old is not None:
                note = KEPT if ask.restored else REASKED
                self.view.bind(ask_id, AskCard(old.card_id, ask_id, old.question, old.options, note=note))
        card_id = self.view.card_for_ask(ask_id)
        if state != "asked":
            held = self.ledger.get(card_id)
            if held is not None and held.held is not None:
                self.view.answering(card_id, held.held_by)  # the answer the run side applied names its giver
        self.pipe.on_event(ev)
        if state == "asked":
            self.ledger.asked(card_id, ev.text, options, kind=ask.kind, facts=dict(ask.facts))
        else:
            rec = self.ledger.get(card_id)
            held = rec if rec is not None and rec.held is not None else None  # the answer it applied names its giver
            self.ledger.settled(card_id, state, by=held.held_by if held else "", place=held.held_place if held else "",
                                answer=ask.answer)
        if (on_ask := self._callbacks.on_ask) is not None:
            on_ask(self, card_id, state)

    def _run_side_note(self, what: str, ev: Event) -> None:
        """What the run side says about inputs it replayed after a restart, and calls a restart cut off."""
        said = InputNotePayload.of(ev)
        if what == "answer_to_inbox":
            card_id, answer, by = said.card, said.answer, said.user
            rec = self.ledger.get(card_id)
            if rec is not None and rec.state == "asked":
                self.ledger.settled(card_id, "answered", by=by, answer=answer)
                self.pipe.put(self.view.show_card(AskCard(
                    card_id, "", rec.question, rec.options, state="answered", answer=answer, by=by,
                    note="The restarted run did not ask this again; the answer went to its inbox.")))
        elif what == "oracle":
            self._oracle_n += 1
            self.pipe.put(self.view.oracle(self._oracle_n, said.question, said.answer, said.user))
        elif what == "unheard":
            self.pipe.put(self.view.notice(
                f"⚠️ The run ended before it heard {self.view.cfg.who(said.user)}: "
                f"{_fmt.quote(said.text, 300)} — reply in the thread to continue it."))
        elif what == "cut_off":
            for call in CutOffPayload.of(ev).calls:
                if not call.safe:
                    self.pipe.put(self.view.notice(
                        f"⚠️ The restart cut off {_fmt.tool_call(call.tool, call.summary, 80)} mid-call: the agent "
                        "was told it may or may not have taken effect, and checks before running it again."))

    def _settle_old_cards(self, *, final: bool) -> None:
        """Cards from before a wake that the woken run did not ask again: close them."""
        for rec in self.ledger.open_cards():
            if self.view.open_card(rec.card_id) is not None:
                continue  # bound to a live question
            if card_gen(rec.card_id) < self.view.gen or final:
                self.ledger.settled(rec.card_id, "cancelled", left_behind=card_gen(rec.card_id) < self.view.gen)
                self.pipe.put(self.view.show_card(AskCard(
                    rec.card_id, "", rec.question, rec.options, state="cancelled",
                    note="The run went on without asking this again.")))

    def _set_status(self, view_state: str) -> None:
        status = _STORE_STATUS.get(view_state, RunStatus.of(view_state))
        if status != self._status:
            self._status = status
            self.store.set_run_status(self.run_id, status)

    # ---- intents (access already checked by the hub) -------------------------------------------
    async def _submit(self, intent: Intent) -> IntentReply:
        if self.side is None:
            raise Undelivered("this run has no run side")
        return await self.side.submit(intent)

    async def answer(self, card: AskCard, text: str, user: str, *, decline: bool = False,
                     where: str = "") -> IntentResult:
        """Answer (or decline) a card the hub found answerable (CardRules.check); `where`: the place it came
        from, when the run shows in several."""
        return await self._settle(card, text, user, decline=decline, where=where)

    async def _settle(self, card: AskCard, text: str, user: str, *, decline: bool, where: str = "") -> IntentResult:
        by = self.view.cfg.who(user) if user else ""  # how a note the model may read names them (handover.py)
        intent = Intent(Op.DECLINE if decline else Op.ANSWER, text, card=card.card_id, ask=card.ask_id,
                        question=card.question, user=user, kind=card.kind, by=by + (f" on {where}" if where else ""))
        self.ledger.hold(card.card_id, text, user, where)  # one answer per card at a time, even across a restart
        self.view.answering(card.card_id, user, where)
        try:
            reply = await self._submit(intent)
        except Undelivered:
            # The intent is logged: whoever holds the run next replays it (never submitted again under a
            # new id, which would answer twice). The card stays held; the run's newest view shows why.
            shown = self.successor or self
            there = shown.view.open_card(card.card_id) if shown is not self else card
            if there is not None:  # (a successor that already applied it shows the card answered)
                shown.pipe.put(shown.view.show_card(replace(
                    there, note=f"Answer from {self.view.cfg.who(user)} kept: the run is moving to another worker.")))
            return IntentResult(True, MOVED if self.successor is not None else UNHELD, self.run_id)
        if not reply.ok:
            self.ledger.release(card.card_id)
            return IntentResult(False, "That question is no longer waiting (answered, declined or timed out).",
                                self.run_id, duplicate=True)
        if reply.kept:  # applied to nothing yet: a restart is bringing its question back
            return IntentResult(True, "Your answer is kept: the run was restarted since, and it reaches the run when "
                                "the question is asked again (or its inbox if it goes on without asking).",
                                self.run_id)
        return IntentResult(True, _settled(card.kind, text, decline=decline), self.run_id)

    async def send(self, text: str, user: str, *, origin: str = "", only_in: str = "") -> IntentResult:
        if self.side is None:
            return IntentResult(False, "This run has no inbox.", self.run_id)
        if not text.strip():
            return IntentResult(False, "Nothing to send: the message is empty.", self.run_id)
        self.view.expect_mail(user, origin, only_in)
        try:
            reply = await self._submit(Intent(Op.SEND, text, user=user))
        except Undelivered:
            return IntentResult(True, "Queued: the run is moving to another worker, which reads it at its next "
                                "checkpoint.", self.run_id)
        if reply.ended:
            return IntentResult(False, TOO_LATE, self.run_id)
        if not reply.mail:
            return IntentResult(False, "Nothing to send: the message is empty.", self.run_id)
        self.pipe.put(self.view.mail_sent(reply.mail, user))
        return IntentResult(True, "Queued for the agent; it reads its inbox at its next checkpoint.", self.run_id)

    async def steer(self, model: str | None, effort: str | None, user: str) -> IntentResult:
        """A new model and/or effort (already checked and saved in the run's options by the handler)."""
        if self.side is None:
            return IntentResult(False, "This run cannot be steered.", self.run_id)
        try:
            reply = await self._submit(Intent(Op.MODEL, json.dumps({"model": model, "effort": effort}), user=user))
        except Undelivered:
            reply = IntentReply()  # its options are saved: the worker taking the run over starts with them
        if reply.ended:
            return IntentResult(False, TOO_LATE, self.run_id)
        if not reply.ok:
            return IntentResult(False, f"The endpoint refused model {model!r} ({_fmt.one_line(reply.error, 200)}); "
                                "the run goes on with the model it had.", self.run_id)
        self.pipe.put(self.view.steered(model, effort))
        said = " · ".join(p for p in (f"model {model}" if model else "", f"effort {effort}" if effort else "") if p)
        return IntentResult(True, f"Run {self.run_id} now uses {said} (from its next turn).", self.run_id)

    async def interrupt(self, text: str, user: str) -> IntentResult:
        if self.side is None:
            return IntentResult(False, "This run cannot be interrupted.", self.run_id)
        parked = self.parked
        try:
            reply = await self._submit(Intent(Op.INTERRUPT, text, user=user))
        except Undelivered:
            self.pipe.put(self.view.interrupted(user, text))
            return IntentResult(True, "Interrupted: the run is moving to another worker, which hears your words "
                                "when it takes it over.", self.run_id)
        if reply.ended:
            return IntentResult(False, TOO_LATE, self.run_id)
        self.pipe.put(self.view.interrupted(user, text))
        how = "it stops at the next message boundary and resumes with your words" if reply.in_flight else \
            "no step is in flight; your words go with the next prompt"
        if parked and reply.in_flight:
            how = "it was parked, so its open question is withdrawn and it resumes now with your words"
        return IntentResult(True, f"Interrupted: {how}.", self.run_id)

    def ask_oracle(self, question: str, user: str) -> IntentResult:
        if not self.has_oracle or self.side is None:
            return IntentResult(False, "This run has no oracle.", self.run_id)
        self._oracle_n += 1
        n = self._oracle_n
        self.pipe.put(self.view.oracle(n, question, None, user))
        intent = Intent(Op.ORACLE, question, user=user)
        submitted = self._chores.spawn(self._submit(intent))

        async def answer() -> None:
            try:
                reply = await submitted
                text = reply.answer if not reply.error else f"(the oracle failed: {reply.error})"
            except Undelivered:
                text = "(the run is moving to another worker; the oracle answers once it has taken it over)"
            except Exception as exc:  # a side question must never hurt the run
                text = f"(the oracle failed: {type(exc).__name__}: {exc})"
            self.pipe.put(self.view.oracle(n, question, text, user))

        self._chores.spawn(answer())
        return IntentResult(True, "Asked the oracle; its answer will appear in the thread.", self.run_id)


# Events the run side sends about inputs it replayed (adapters/transport/applier.py) and cut-off calls.
_RUN_SIDE_NOTES = frozenset({"answer_to_inbox", "oracle", "cut_off", "unheard"})


def _settled(kind: str, text: str, *, decline: bool) -> str:
    """What the person who settled a card is told: a plan sent back is not a refusal, it is more planning."""
    if decline and kind == "plan":
        return f"Sent back to planning: {_fmt.one_line(text, 200)}"
    return "Declined." if decline else f"Answered: {_fmt.one_line(text, 200)}"
