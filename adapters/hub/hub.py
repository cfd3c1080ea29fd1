"""Hub: the chat-agnostic owner of runs, and the one face platforms see.

Platforms forward intents — start, answer, decline, send (inbox), attach (files), interrupt, oracle, stop, wake,
continue_run, follow, unfollow, a plain message (`said`), a button (`handle_action`) — and may ask a few questions
of it (who may act, was this delivery seen, which run is this, who is this person). Nothing else:
`tests/test_boundaries.py` fails when a platform package touches any other hub member. Every intent
checks who may act first (`_allowed`: one rule), answers with an `IntentResult`, and tells a refused
person why, alone (`Places.tell`), changing nothing.

Inside, each job has a collaborator handed only what it needs (the hub wires them):

    RunBook     the live runs and the store's records (look-ups)
    Admission   limits (max_runs, max_parked), busy workspaces, where a run lives
    CardBook    which card a person means, whether it still takes an answer, its message ids
    Outboxes    one rate-limited outbox per thread
    Mirrors     followed threads, auto mirrors, the owner's DM
    Launcher    a run's view, threads and chat side, started through the transport
    Restarts    runs coming back after a restart, waking, answers to sleeping runs
    Rounds      a run that has ended goes on: its next round
    FileIntake  files people attach, saved in the run's inbox/ before its mail says so

Runs go through a transport (adapters/transport): in this process by default, to `flower-worker`s
over Redis; either way each input is logged durably before anyone is told "ok".
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Literal

from adapters.access import Access, Decision
from adapters.chores import Chores
from adapters.hub import routing as _routing
from adapters.hub.admission import Admission
from adapters.hub.book import RunBook
from adapters.hub.cards import CardBook, CardCheck, CardProblem
from adapters.hub.files import Attached, FileIntake, Incoming
from adapters.hub.launcher import Launcher, Tap
from adapters.hub.lookups import HubLookups
from adapters.hub.mirrors import Mirrors
from adapters.hub.outboxes import Outboxes
from adapters.hub.places import Places
from adapters.hub.report import status_report
from adapters.hub.results import IntentResult
from adapters.hub.rounds import Rounds
from adapters.hub.runs import LiveRun, RunOptions
from adapters.hub.settings import HubSettings
from adapters.hub.wake import Restarts
from adapters.people import People
from adapters.state import RunRecord, RunStatus, StateStore
from adapters.surface import Surface, ThreadRef
from adapters.transport import LocalTransport, Transport
from adapters.transport.engine import EngineKit
from adapters.transport.intents import StoreIntentLog
from adapters.view import fmt as _fmt
from adapters.view.approval_card import approval_option
from flower_core import WarmPool

log = logging.getLogger(__name__)

Verb = Literal["start", "answer", "send", "stop"]

# What a platform package may use of a Hub: the intents, the questions it may ask, and attaching a
# front end's own rules. tests/platforms/test_facade.py fails when a platform touches anything else.
PLATFORM_FACADE = frozenset({
    # intents
    "start", "answer", "decline", "approve", "send", "attach", "interrupt", "oracle", "stop", "wake",
    "continue_run", "resume", "follow", "unfollow", "said", "handle_action", "status", "refuse",
    # questions
    "run", "is_live", "runs", "run_in", "holder", "state", "thread_by_id", "followers", "open_cards",
    "card_state", "card_by_key", "may", "followable", "resumable", "seen", "display", "upload_limits",
    # what a platform tells the hub
    "note", "remember_message", "tap", "auto_mirror", "wait",
})


class Hub(HubLookups):
    def __init__(self, surfaces: Surface | Iterable[Surface] | Mapping[str, Surface], store: StateStore,
                 settings: HubSettings | None = None, *, kit: EngineKit | None = None,
                 transport: Transport | None = None, clock: Callable[[], float] = time.monotonic,
                 sleeper: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        """`kit` builds runs in this process (the workflow factory, the model's environment); `transport`
        hands them elsewhere instead (RedisTransport)."""
        s = self.settings = settings or HubSettings()
        self.store, self.places, self.people = store, Places(surfaces), People()
        self.access = Access(store, self.people)
        # Cards name people through the registry platforms fill (display names), unless told otherwise.
        self.view_config = replace(s.view, who=self.people.display) if s.view.who is _fmt.plain_who else s.view
        who = self.view_config.who
        self.book = RunBook(store)
        # In process, inputs are logged in the state store (so they outlive the process) and a question a
        # dead process left open in its session is picked up again (adopt).
        self.admission = Admission(self.book, s, remote=transport is not None and transport.remote)
        local = replace(kit or EngineKit(), park_after_s=s.park_after_s, may_park=self.admission.may_park,
                        oracle=s.oracle, adopt=True, warm=WarmPool(max(0, min(s.warm_pool, s.max_runs))))
        self.transport: Transport = transport or LocalTransport(local, StoreIntentLog(store))
        self.admission.remote = self.transport.remote
        self.cards = CardBook(self.book, store, who=who)
        self.outboxes = Outboxes(self.places, store, clock=clock, sleeper=sleeper)
        self.mirrors = Mirrors(self.book, store, self.places, self.access, self.outboxes, self.cards,
                               refuse=self.refuse, who=who, dm_after_s=s.dm_after_s)
        self.launcher = Launcher(self.book, store, self.transport, self.outboxes, self.cards, self.mirrors, s,
                                 self.view_config, clock=clock)
        self.restarts = Restarts(self.book, store, self.launcher, self.admission, self.mirrors, self.outboxes,
                                 self.transport, self.view_config, wake_on_start=s.wake_on_start,
                                 refuse=self.refuse, clock=clock)
        self.rounds = Rounds(self.book, store, self.launcher, self.admission, self.view_config, self.access,
                             refuse=self.refuse)
        self.intake = FileIntake(s.uploads, s.channel_uploads)
        self.clock = clock
        self._chores = Chores()

    # ---- intents --------------------------------------------------------------------------------
    async def start(self, task: str, thread: ThreadRef, user: str, *,
                    options: RunOptions | None = None) -> IntentResult:
        channel = f"{thread.platform}:{thread.channel}"
        if not self.places.has(thread.platform):
            return IntentResult(False, f"No surface for platform {thread.platform!r}.")
        decision = self.access.can_start(channel, user)
        if not decision:
            return await self.refuse(thread, user, decision.reason)
        if not task.strip():
            return await self.refuse(thread, user, "Say what the run should do, e.g. `start build me a CLI`.")
        bound = self.store.run_for_thread(thread)
        if bound is not None and self.book.is_live(bound):
            return await self.refuse(thread, user, f"Run {bound} is already going in this thread; send it a "
                                     "message or interrupt it instead.", bound)
        if (full := self.admission.over_limit()) is not None:
            return await self.refuse(thread, user, full)
        run_id = "r" + uuid.uuid4().hex[:8]
        workspace, run_dir = self.admission.places(run_id, channel)
        if (busy := self.admission.busy(workspace)) is not None:
            return await self.refuse(thread, user, f"This channel's workspace is busy with run {busy}.", busy)
        options = options or RunOptions()
        if (bad := options.problem()) is not None:
            return await self.refuse(thread, user, bad)
        options, over = options.within(self.settings.budget_ceilings.get(channel), default=self.settings.budget_usd)
        if over is not None:
            return await self.refuse(thread, user, over)
        record = self.store.save_run(RunRecord(run_id, thread, user, task.strip(), RunStatus.STARTING, str(workspace),
                                               str(run_dir)))
        self.store.bind_thread(thread, run_id)
        try:
            options.save(run_dir)
            self.launcher.launch(record, waking=False)
        except Exception as exc:  # the factory refused (bad task, unreadable workspace...)
            self.store.set_run_status(run_id, RunStatus.FAILED)
            return await self.refuse(thread, user, f"Could not start the run: {exc}", run_id)
        if self.transport.remote:
            self._chores.spawn(self._say_if_queued(run_id))
        return IntentResult(True, f"Started run {run_id}.", run_id)

    async def answer(self, run_id: str, card_id: str, text: str, user: str, *,
                     where: ThreadRef | None = None) -> IntentResult:
        """`where`: the thread the answer came from (cards of a mirrored run say where). On a tool approval's
        card only its two allow options allow; any words (the Deny… form, a `q1: …` reply) deny with them."""
        live = self.book.live.get(run_id)
        card = live.view.open_card(card_id) if live is not None else None
        deny = card is not None and card.kind == "approval" and text not in card.options[:2]
        return await self._answer(run_id, card_id, text, user, decline=deny, where=where)

    async def decline(self, run_id: str, card_id: str, user: str, reason: str = "", *,
                      where: ThreadRef | None = None) -> IntentResult:
        return await self._answer(run_id, card_id, reason, user, decline=True, where=where)

    async def approve(self, run_id: str, card_id: str, decision: str, user: str, text: str = "", *,
                      where: ThreadRef | None = None) -> IntentResult:
        """A tool approval: "once"/"run" answer its first two options, "deny" declines it (ValueError: other)."""
        option = approval_option(self.cards.options(run_id, card_id), decision)
        if option is None:
            return await self.decline(run_id, card_id, user, text, where=where)
        return await self.answer(run_id, card_id, option, user, where=where)

    async def _answer(self, run_id: str, card_id: str, text: str, user: str, *, decline: bool,
                      where: ThreadRef | None) -> IntentResult:
        record, refusal = await self._allowed(run_id, user, "answer")
        if record is None:
            return refusal
        check = self.cards.check(run_id, card_id)
        if check.card is None:
            return self._late(check, run_id)
        if (live := self.book.live.get(run_id)) is not None:
            place = self.places.name(where) if where is not None and self.mirrors.spread(live) else ""
            result = await live.answer(check.card, text, user, decline=decline, where=place)
            if not result.ok and result.duplicate and not (now := self.cards.check(run_id, card_id)):
                return self._late(now, run_id)  # settled meanwhile: say by whom, as for any late click
        else:
            result = await self.restarts.answer_sleeping(record, check.card, text, user, decline=decline)
        if not result.ok and not result.duplicate:
            return await self.refuse(record.thread, user, result.message, run_id)
        return result

    @staticmethod
    def _late(check: CardCheck, run_id: str) -> IntentResult:
        """A click (or reply) on a card that takes no answer: CardBook.check said why, and the platform shows
        it to the person, every time, where they clicked. An unknown card is a plain refusal."""
        return IntentResult(False, check.message, run_id, duplicate=check.problem is not CardProblem.UNKNOWN)

    async def send(self, run_id: str, text: str, user: str, *, origin: str = "",
                   where: ThreadRef | None = None) -> IntentResult:
        """Inbox mail. `origin`: the platform id of the person's own message, so its receipt can be
        shown on it (a reaction) where the platform can; `where`: the thread it was written in (its
        receipt shows there only)."""
        live, refusal = await self._live(run_id, user, "send")
        if live is None:
            return refusal
        return await live.send(text, user, origin=origin, only_in=str(where) if where is not None else "")

    async def attach(self, run_id: str, files: Sequence[Incoming], text: str, user: str, *, origin: str = "",
                     where: ThreadRef | None = None) -> Attached:
        """Files a person attached, with their message's words: saved in the run's inbox/ before one inbox
        mail names them (an ended run: they start its next round). See files.py."""
        record, refusal = await self._allowed(run_id, user, "send")
        if record is None:
            return Attached.of(refusal)
        return await self.intake.attach(self, record, files, text, user, origin=origin, where=where)

    async def interrupt(self, run_id: str, text: str, user: str) -> IntentResult:
        live, refusal = await self._live(run_id, user, "send")
        return await live.interrupt(text, user) if live is not None else refusal

    async def oracle(self, run_id: str, question: str, user: str) -> IntentResult:
        live, refusal = await self._live(run_id, user, "answer")
        if live is None:
            return refusal
        if not question.strip():
            return await self.refuse(live.record.thread, user, "Ask the oracle something.", run_id)
        return live.ask_oracle(question, user)

    async def stop(self, run_id: str, user: str) -> IntentResult:
        record, refusal = await self._allowed(run_id, user, "stop")
        if record is None:
            return refusal
        live = self.book.live.get(run_id)
        if live is not None and await live.stop(user):
            return IntentResult(True, f"Stopping run {run_id}.", run_id)
        if record.status in (RunStatus.DIED, RunStatus.PARKED):  # asleep since a restart: "do not wake it"
            self.store.set_run_status(run_id, RunStatus.STOPPED)
            return IntentResult(True, f"Run {run_id} will not be woken.", run_id)
        return await self.refuse(record.thread, user, self._not_running(record), run_id)

    async def wake(self, run_id: str, user: str, remark: str = "") -> IntentResult:
        record, refusal = await self._allowed(run_id, user, "answer")
        if record is None:
            return refusal
        return await self.restarts.wake(record, user, remark)

    async def continue_run(self, run_id: str, text: str, user: str, *,
                           where: ThreadRef | None = None) -> IntentResult:
        """A run that has ended goes on with `text`: its next round (see rounds.py). Who may write to the run
        may continue it; `where`: the thread the words came from."""
        record, refusal = await self._allowed(run_id, user, "send")
        if record is None:
            return refusal
        return await self.rounds.continue_run(record, text, user, where=where)

    async def resume(self, run_id: str, thread: ThreadRef, user: str, text: str = "") -> IntentResult:
        """Show a run in one more thread and, with `text`, continue it (see rounds.py)."""
        return await self.rounds.resume(run_id, thread, user, text, follow=self.follow, send=self.send,
                                        go_on=self.continue_run)

    def resumable(self, run_id: str, user: str) -> IntentResult:
        """Whether `user` may resume the run; platforms ask before they open a thread for it."""
        return self.rounds.resumable(run_id, user)

    async def follow(self, run_id: str, thread: ThreadRef, user: str) -> IntentResult:
        """Show a live run in one more thread (see mirrors.py)."""
        may = self.followable(run_id, user)
        record = self.store.get_run(run_id)
        if not may.ok or record is None:
            return await self.refuse(thread, user, may.message, run_id)
        return await self.mirrors.follow(record, thread, user)

    def followable(self, run_id: str, user: str) -> IntentResult:
        """Whether `user` may follow the run now (seeing a run takes what answering it takes, and it must be
        live); platforms ask before they open a thread for it. Nothing is said to anyone."""
        record = self.store.get_run(run_id)
        if record is None:
            return IntentResult(False, f"No run {run_id}.", run_id)
        decision = self.access.can_answer(record, user)
        if not decision:
            return IntentResult(False, f"You cannot follow run {run_id}: {decision.reason}.", run_id)
        if not self.book.is_live(run_id):
            return IntentResult(False, f"Run {run_id} is not running ({record.status}).", run_id)
        return IntentResult(True, "", run_id)

    async def unfollow(self, thread: ThreadRef, user: str) -> IntentResult:
        return await self.mirrors.unfollow(thread, user)

    async def said(self, thread: ThreadRef, user: str, text: str, *, origin: str = "",
                   reply_to: str = "") -> IntentResult | None:
        """A person's plain message in a thread (see routing.said); None when the thread holds no run."""
        return await _routing.said(self, thread, user, text, origin=origin, reply_to=reply_to)

    async def handle_action(self, action_id: str, user: str, *, delivery_id: str | None = None,
                            text: str | None = None, where: ThreadRef | None = None) -> IntentResult:
        """A button (or a form submitted after one): see routing.handle_action."""
        return await _routing.handle_action(self, action_id, user, delivery_id=delivery_id, text=text, where=where)

    def status(self, *, thread: ThreadRef | None = None, run_id: str | None = None) -> IntentResult:
        """One run's state (by id, or the run a thread shows), or every live run, parked ones apart."""
        if run_id is None and thread is not None:
            run_id = self.run_in(thread)
        return status_report(self.book.live, self.store, run_id, running=self.running(), parked=self.parked(),
                             max_runs=None if self.transport.remote else self.max_runs,
                             max_parked=self.admission.max_parked)

    async def refuse(self, thread: ThreadRef, user: str, reason: str, run_id: str = "") -> IntentResult:
        """Tell the actor alone why not; nothing else changes."""
        await self.places.tell(thread, user, reason)
        return IntentResult(False, reason, run_id, told=True)

    # ---- who may act (the rule every intent applies) --------------------------------------------
    def may(self, user: str, verb: Verb, *, run_id: str = "", channel: str = "") -> Decision:
        """Whether `user` may start runs in `channel` ("platform:channel"), or answer / send to / stop a run.
        The same rule every intent applies; platforms ask before opening a form."""
        if verb == "start":
            return self.access.can_start(channel, user)
        record = self.store.get_run(run_id)
        if record is None:
            return Decision(False, f"No run {run_id}.")
        return self._decide(verb, record, user)


    # ---- lifecycle -------------------------------------------------------------------------------
    async def wait(self, run_id: str) -> LiveRun | None:
        """Wait until a live run has ended and its thread is flushed; the LiveRun (None if not live)."""
        live = self.book.live.get(run_id)
        if live is not None:
            await live.finished.wait()
        return live

    async def close(self, *, deadline_s: float = 30.0) -> None:
        """The bot is going away: live runs stop quietly, their cards stay open and their status
        stays live in the store, so the next process brings them back exactly as after a crash.
        A run whose thread does not flush within `deadline_s` is left as it is (named in the log): the
        store already says it was live, so the next process brings it back all the same."""
        self.mirrors.close()
        runs = list(self.book.live.values())
        for live in runs:
            live.cancel("shutdown")
        waits = [asyncio.ensure_future(live.finished.wait()) for live in runs]
        if waits:
            _done, late = await asyncio.wait(waits, timeout=deadline_s)
            for task in late:
                task.cancel()
            stuck = [live.run_id for live in runs if not live.finished.is_set()]
            if stuck:
                log.warning("closing: runs %s did not flush within %gs; left for the next process", stuck, deadline_s)
        await self.transport.close()

    async def open(self) -> None:
        """Connect the transport (a no-op in process); before `recover`."""
        await self.transport.start()

    async def recover(self) -> list[str]:
        """After a restart: bring back the runs the old process left (see wake.py); returns the ids of
        those that could not come back (their threads were told, with a Wake button)."""
        return await self.restarts.recover()

    # ---- for tests, benchmarks and the bot's own books ------------------------------------------------
    @property
    def live(self) -> dict[str, LiveRun]:
        return self.book.live

    @property
    def surfaces(self) -> dict[str, Surface]:
        return self.places.surfaces

    @property
    def taps(self) -> list[Tap]:
        return self.launcher.taps

    @property
    def max_runs(self) -> int:
        return self.admission.max_runs

    @max_runs.setter
    def max_runs(self, value: int) -> None:
        self.admission.max_runs = value

    def running(self) -> list[str]:
        return self.book.running()

    def parked(self) -> list[str]:
        return self.book.parked()

    # ---- internals -------------------------------------------------------------------------------
    async def _allowed(self, run_id: str, user: str, verb: Verb) -> tuple[RunRecord | None, IntentResult]:
        """The run `user` may act on, or None and the refusal already shown to them: the one rule."""
        record = self.store.get_run(run_id)
        if record is None:
            return None, IntentResult(False, f"No run {run_id}.", run_id)
        decision = self._decide(verb, record, user)
        if not decision:
            return None, await self.refuse(record.thread, user, decision.reason, run_id)
        return record, IntentResult(True, "", run_id)

    def _decide(self, verb: Verb, record: RunRecord, user: str) -> Decision:
        check = {"answer": self.access.can_answer, "send": self.access.can_send, "stop": self.access.can_stop}
        return check[verb](record, user)

    async def _live(self, run_id: str, user: str, verb: Verb) -> tuple[LiveRun | None, IntentResult]:
        """The live run the user may act on, or None and the refusal already shown to them."""
        record, refusal = await self._allowed(run_id, user, verb)
        if record is None:
            return None, refusal
        live = self.book.live.get(run_id)
        if live is None:
            return None, await self.refuse(record.thread, user, self._not_running(record), run_id)
        return live, refusal

    async def _say_if_queued(self, run_id: str) -> None:
        """With workers: tell the thread when none has room, so a run that waits is not a mystery."""
        waits = await self.transport.waits(run_id)
        live = self.book.live.get(run_id)
        if waits and live is not None and not live.holder:
            live.pipe.put(live.view.notice("⏳ Every worker is busy (or none is running): the run starts as soon "
                                           "as one has room."))

    @staticmethod
    def _not_running(record: RunRecord) -> str:
        if record.status == RunStatus.DIED:
            return f"Run {record.run_id} stopped when the bot restarted; wake it first."
        return f"Run {record.run_id} is not running ({record.status})."

