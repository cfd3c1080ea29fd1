"""LiveRun: the chat side of one run — its view, pipe to the threads, card ledger and status.

The run itself (workflow, runtime, question channel, oracle) is on the other side of a transport
(adapters/transport): in this process or on a worker. Its events arrive through `on_event`
(synchronous, never raises): ask events are bound to cards first (a question re-asked after a wake
lands on its old card, see wake.py), then the pipe renders them. Intents arrive as coroutines
returning an `IntentResult`; the hub has already checked who may do what.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from adapters.chores import Chores
from adapters.hop import hop
from adapters.hub.ledger import CardLedger, card_gen
from adapters.hub.pipe import RunPipe
from adapters.hub.results import IntentResult
from adapters.state import StateStore
from adapters.state.base import RunRecord
from adapters.transport.base import RunEnd, RunSide, Undelivered
from adapters.transport.plan import RunFactory, RunPlan, default_factory
from adapters.view import AskCard, Outcome
from adapters.view import fmt as _fmt
from flower_core import Event

__all__ = ["KEPT", "REASKED", "LiveRun", "RunFactory", "RunOptions", "RunPlan", "default_factory"]

log = logging.getLogger(__name__)

# view state -> the run status kept in the store
_STORE_STATUS = {"starting": "starting", "running": "running", "interrupted": "running", "waiting": "waiting",
                 "done": "done", "failed": "failed", "stopped": "stopped", "died": "died", "parked": "parked"}
REASKED = "Asked again after the run was woken."
KEPT = "Still open: the run was parked when the bot restarted, and is waiting for this answer."


@dataclass(frozen=True)
class RunOptions:
    """Per-run choices a starter may make (a command option, a form field); None = the bot's default.

    Kept in `<run_dir>/run-options.json` so a woken run keeps them.
    """

    timeout_s: float | None = None
    max_asks: int | None = None
    budget_usd: float | None = None

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None})

    @classmethod
    def load(cls, run_dir: Path) -> RunOptions:
        try:
            data = json.loads((run_dir / OPTIONS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known}) if isinstance(data, dict) else cls()

    def problem(self) -> str | None:
        """What is wrong with these choices, said to the person who made them (None: nothing)."""
        if self.max_asks is not None and self.max_asks < 0:
            return "The question quota must be 0 or more."
        if self.budget_usd is not None and self.budget_usd < 0:
            return "The budget must be 0 or more dollars."
        return None

    def within(self, ceiling: float | None, *, default: float | None) -> tuple[RunOptions, str | None]:
        """A channel's budget ceiling: the cap when none was asked for (nor set as the bot's `default`),
        a refusal above it."""
        if ceiling is None:
            return self, None
        asked = self.budget_usd if self.budget_usd is not None else default
        if asked is None:
            return replace(self, budget_usd=ceiling), None
        if asked > ceiling:
            return self, (f"This channel caps a run's budget at {_fmt.money(ceiling)}; ask for "
                          f"{_fmt.money(ceiling)} or less.")
        return replace(self, budget_usd=asked), None

    def save(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / OPTIONS_FILE).write_text(self.to_json(), encoding="utf-8")


OPTIONS_FILE = "run-options.json"


MOVED = ("Your answer is kept: the run moved to another worker, which gets it when it asks this again (or in "
         "its inbox if it goes on without asking).")
UNHELD = ("The worker that held this run stopped answering. Your answer is kept and reaches the run when "
          "another worker takes it over.")


class LiveRun:
    def __init__(self, record: RunRecord, pipe: RunPipe, *, store: StateStore, clock: Callable[[], float],
                 waking: bool = False, has_oracle: bool = True,
                 on_end: Callable[[LiveRun], object] | None = None,
                 on_ask: Callable[[LiveRun, str, str], object] | None = None,
                 on_handover: Callable[[LiveRun, str, str], object] | None = None,
                 ledger: CardLedger | None = None, restoring: bool = False) -> None:
        self.record, self.run_id = record, record.run_id
        self.pipe = pipe
        self.view = pipe.view
        self.store = store
        self.ledger = ledger or CardLedger(record.run_dir)  # a successor shares its predecessor's (one writer)
        self.successor: LiveRun | None = None  # who shows the run after a takeover
        self.waking, self.has_oracle = waking, has_oracle
        self.side: RunSide | None = None
        self.outcome: Outcome | None = None
        self.finished = asyncio.Event()
        self._clock, self._on_end, self._on_ask, self._on_handover = clock, on_end, on_ask, on_handover
        self._started = clock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_reason, self._stopped_by = "", ""
        self._ending = False
        self._closing: asyncio.Future[None] | None = None
        self._by: dict[str, str] = {}  # card id -> who is settling it
        self._chores = Chores()
        self._oracle_n = 0
        self._status = record.status
        self._reused: set[str] = set()
        # A parked run brought back after a restart: its woken steps pass quietly until it parks again.
        # So is a run this front follows again after its own restart (a worker replays where it is).
        self._restoring = restoring or record.status == "parked"

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
        return self.view.status_card.state == "parked"

    def cancel(self, reason: str, by: str = "") -> bool:
        """Stop the run: reason "stopped" (a person) or "shutdown" (the bot is going away)."""
        if self.side is None or self.finished.is_set() or self._ending:
            return False
        if not self.side.cancel(reason):
            return False
        self._stop_reason, self._stopped_by = reason, by
        return True

    async def ended(self, end: RunEnd) -> None:
        """The run side's last word: settle what is left, show the summary, close the pipe."""
        if self._ending:
            return
        self._ending = True
        try:
            await self._chores.wait()
            if end.state == "died":
                return  # the bot is going away (or the run moved): its cards stay open
            self._settle_old_cards(final=True)
            cost = end.cost_usd or self.view.status_card.cost_usd
            self.outcome = Outcome(end.state, result=end.text, cost_usd=cost, duration_s=self._clock() - self._started,
                                   failed_at=end.failed_at, error=end.error, by=self._stopped_by, steps=end.steps)
            self.pipe.put(self.view.finish(self.outcome))
            self._set_status(end.state)
        finally:
            try:
                await self.pipe.close()
            finally:  # even when a shutdown cancels this very drain: hub.close() waits on `finished`
                self.finished.set()
                if self._on_end is not None:
                    self._on_end(self)

    def handed_over(self, holder: str, previous: str) -> None:
        """The run went on on another worker: this view ends quietly and the hub shows the run afresh."""
        self._closing = asyncio.ensure_future(self.ended(RunEnd("died")))  # not a chore: it waits on those
        if self._on_handover is not None:
            self._on_handover(self, holder, previous)

    # ---- events -------------------------------------------------------------------------------
    def on_event(self, ev: Event) -> None:
        """The run side's sink. Never blocks, never raises."""
        try:
            if hop(self._loop, self.on_event, ev):
                return
            p = ev.payload if isinstance(ev.payload, dict) else {}
            if ev.kind == "step" and p.get("reused"):
                self._reused.add(ev.text)
            if self._restoring:
                if ev.kind == "step":
                    self.view.on_event(ev)  # the card learns the step; the thread needs no step lines again
                    return
                self._restoring = ev.kind == "ask" or (ev.kind == "system" and p.get("subtype") != "parked")
            if ev.kind == "ask" and p.get("kind") != "mail":
                if p.get("state") == "cancelled" and self._stop_reason == "shutdown":
                    return  # the bot is going away: the card stays open, answerable after the restart
                self._ask_event(ev, p)
            else:
                self.pipe.on_event(ev)
            self._set_status(self.view.status_card.state)
        except Exception as exc:
            log.warning("run %s: event %s not handled: %r", self.run_id, ev.kind, exc)

    def step_done(self, name: str) -> None:
        if name not in self._reused:  # reused steps report before anything runs
            self._settle_old_cards(final=False)

    def _ask_event(self, ev: Event, p: dict[str, Any]) -> None:
        ask_id, state = str(p.get("id", "")), str(p.get("state", ""))
        options = [str(o) for o in p.get("options") or []]
        held: tuple[str, str] | None = None
        if state == "asked":
            old = self.ledger.match(ev.text, before_gen=self.view.gen)
            if old is not None:
                note = KEPT if self._restoring else REASKED
                self.view.bind(ask_id, AskCard(old.card_id, ask_id, old.question, old.options, note=note))
                if old.held is not None:
                    held = (old.held, old.held_by)
            else:
                self._deliver_held()  # it asked something else: held answers go to the inbox instead
        card_id = self.view.card_for_ask(ask_id)
        self.pipe.on_event(ev)
        if state == "asked":
            self.ledger.asked(card_id, ev.text, options)
        else:
            self.ledger.settled(card_id, state, by=self._by.pop(card_id, ""), answer=str(p.get("answer") or ""))
        if self._on_ask is not None:
            self._on_ask(self, card_id, state)
        if held is not None:
            # After this event is fully handled, never from inside the channel's own emit.
            self._chores.spawn(self._answer_held(card_id, *held))

    async def _answer_held(self, card_id: str, text: str, by: str) -> None:
        card = self.view.open_card(card_id)
        if card is not None:
            await self._settle(card, text, by, decline=False)

    def _deliver_held(self) -> None:
        for rec in self.ledger.open_cards():
            if rec.held is None or card_gen(rec.card_id) >= self.view.gen:
                continue
            answer, by = rec.held, rec.held_by
            self.ledger.settled(rec.card_id, "answered", by=by, answer=answer)
            self.pipe.put(self.view.show_card(AskCard(
                rec.card_id, "", rec.question, rec.options, state="answered", answer=answer, by=by,
                note="The woken run did not ask this again; the answer went to its inbox.")))
            self._chores.spawn(self._mail(f"The human's answer to your earlier question “{rec.question}” "
                                   f"(given while the run was restarting): {answer}", by))

    async def _mail(self, text: str, by: str, *, origin: str = "", only_in: str = "") -> str | None:
        """Inbox mail with its receipt expected from `by`; the mail id (None: nothing sent)."""
        if self.side is None:
            return None
        self.view.expect_mail(by, origin, only_in)
        mail_id = await self.side.send(text)
        if mail_id is not None:
            self.pipe.put(self.view.mail_sent(mail_id, by))
        return mail_id

    def _settle_old_cards(self, *, final: bool) -> None:
        """Cards from before a wake that the woken run did not ask again: deliver or close them."""
        self._deliver_held()
        for rec in self.ledger.open_cards():
            if self.view.open_card(rec.card_id) is not None:
                continue  # bound to a live question
            if card_gen(rec.card_id) < self.view.gen or final:
                self.ledger.settled(rec.card_id, "cancelled")
                self.pipe.put(self.view.show_card(AskCard(
                    rec.card_id, "", rec.question, rec.options, state="cancelled",
                    note="The run went on without asking this again.")))

    def _set_status(self, view_state: str) -> None:
        status = _STORE_STATUS.get(view_state, view_state)
        if status != self._status:
            self._status = status
            self.store.set_run_status(self.run_id, status)

    # ---- intents (access already checked by the hub) -------------------------------------------
    async def answer(self, card_id: str, text: str, user: str, *, decline: bool = False,
                     where: str = "") -> IntentResult:
        card = self.view.open_card(card_id)
        if card is None:
            rec = self.ledger.get(card_id)
            if rec is None:
                return IntentResult(False, "I don't know that question.", self.run_id)
            if rec.state != "asked":
                who = f" by {self.view.cfg.who(rec.by)}" if rec.by else ""
                return IntentResult(False, f"That question is already settled ({rec.state}{who}).", self.run_id,
                                    duplicate=True)
            if rec.held is not None:
                held_by = self.view.cfg.who(rec.held_by)
                return IntentResult(False, f"An answer from {held_by} is already waiting for that question.",
                                    self.run_id, duplicate=True)
            # An open card from before a wake that the woken run has not asked again (yet).
            if decline:
                self.ledger.settled(card_id, "declined", by=user, answer=text)
                self.pipe.put(self.view.show_card(AskCard(card_id, "", rec.question, rec.options, state="declined",
                                                          answer=text, by=user)))
                return IntentResult(True, "Declined.", self.run_id)
            self.ledger.hold(card_id, text, user)
            if self.holder:  # taken over by a worker that asks its open question again first: wait for it
                return IntentResult(True, MOVED, self.run_id)
            self._deliver_held()
            return IntentResult(True, "The run was restarted since; your answer went to its inbox.", self.run_id)
        return await self._settle(card, text, user, decline=decline, where=where)

    async def _settle(self, card: AskCard, text: str, user: str, *, decline: bool, where: str = "") -> IntentResult:
        if self.side is None:
            return IntentResult(False, "This run has no question channel.", self.run_id)
        self.view.answering(card.card_id, user, where)
        self._by[card.card_id] = user
        try:
            ok = await (self.side.decline(card.ask_id, text) if decline else self.side.answer(card.ask_id, text))
        except Undelivered:
            self._by.pop(card.card_id, None)
            if self.successor is not None:  # the run moved while we waited: its new view has the card
                return await self.successor.answer(card.card_id, text, user, decline=decline, where=where)
            if decline:
                return IntentResult(False, "The run's worker is not answering right now; decline again in a moment.",
                                    self.run_id)
            self.ledger.hold(card.card_id, text, user)
            self.pipe.put(self.view.show_card(replace(card, note=f"Answer from {self.view.cfg.who(user)} kept: "
                                                                  "the run is moving to another worker.")))
            return IntentResult(True, UNHELD, self.run_id)
        if not ok:
            self._by.pop(card.card_id, None)
            return IntentResult(False, "That question is no longer waiting (answered, declined or timed out).",
                                self.run_id, duplicate=True)
        return IntentResult(True, "Declined." if decline else f"Answered: {_fmt.one_line(text, 200)}", self.run_id)

    async def send(self, text: str, user: str, *, origin: str = "", only_in: str = "") -> IntentResult:
        if self.side is None:
            return IntentResult(False, "This run has no inbox.", self.run_id)
        try:
            mail_id = await self._mail(text, user, origin=origin, only_in=only_in)
        except Undelivered:
            return IntentResult(True, "Queued: the run is moving to another worker, which reads it at its next "
                                "checkpoint.", self.run_id)
        if mail_id is None:
            return IntentResult(False, "Nothing to send: the message is empty.", self.run_id)
        return IntentResult(True, "Queued for the agent; it reads its inbox at its next checkpoint.", self.run_id)

    async def interrupt(self, text: str, user: str) -> IntentResult:
        if self.side is None:
            return IntentResult(False, "This run cannot be interrupted.", self.run_id)
        parked = self.parked
        try:
            in_flight = await self.side.interrupt(text)
        except Undelivered:
            self.pipe.put(self.view.interrupted(user, text))
            return IntentResult(True, "Interrupted: the run is moving to another worker, which hears your words "
                                "when it takes it over.", self.run_id)
        self.pipe.put(self.view.interrupted(user, text))
        how = "it stops at the next message boundary and resumes with your words" if in_flight else \
            "no step is in flight; your words go with the next prompt"
        if parked and in_flight:
            how = "it was parked, so its open question is withdrawn and it resumes now with your words"
        return IntentResult(True, f"Interrupted: {how}.", self.run_id)

    def ask_oracle(self, question: str, user: str) -> IntentResult:
        if not self.has_oracle or self.side is None:
            return IntentResult(False, "This run has no oracle.", self.run_id)
        self._oracle_n += 1
        n, side = self._oracle_n, self.side
        self.pipe.put(self.view.oracle(n, question, None, user))

        async def ask() -> None:
            try:
                answer = await side.ask_oracle(question)
            except Exception as exc:  # a side question must never hurt the run
                answer = f"(the oracle failed: {type(exc).__name__}: {exc})"
            self.pipe.put(self.view.oracle(n, question, answer, user))

        self._chores.spawn(ask())
        return IntentResult(True, "Asked the oracle; its answer will appear in the thread.", self.run_id)
