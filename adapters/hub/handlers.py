"""What each intent does once the door has let it through: three handlers, each given what it uses.

    StartHandler    Start                        checks a new run's thread, limits and options, launches it
    CardHandler     Answer · Decline · Approve   settles a card in the live run, or in a sleeping one
    RunHandler      Send · Interrupt · Oracle ·  a run's inputs and lifecycle; Follow / Unfollow (mirrors.py),
                    Stop · Wake · Continue ·     Resume (rounds.py), Attach (intake.py) and ShowFiles
                    ShowFiles                    (changes.py) are their collaborators' own

The door (door.py) has already found the run and checked who may act (intents.PERMISSIONS): a handler
gets the run's record and applies only what is its own (the run must be live, the card still open…).
A refusal is told to the person alone (`refuse`) and changes nothing.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from adapters.access import Access
from adapters.chores import Chores
from adapters.hub.admission import Admission
from adapters.hub.cards import CardCheck, CardProblem, CardRules
from adapters.hub.changes import post_files
from adapters.hub.checkpoints import checkpoint
from adapters.hub.intents import Answer, Approve, Decline, Interrupt, Oracle, Send, Start, Stop, Wake
from adapters.hub.launcher import Launcher
from adapters.hub.mirrors import Mirrors
from adapters.hub.options import RunOptions
from adapters.hub.outboxes import Outboxes
from adapters.hub.platforms import Platforms
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult, Refuse
from adapters.hub.settings import HubSettings
from adapters.hub.wake import Restarts
from adapters.platform import ThreadRef
from adapters.state import RunRecord, RunStatus, StateStore
from adapters.transport import Transport
from adapters.view.approval_card import approval_option

if TYPE_CHECKING:
    from adapters.hub.runs import LiveRun

__all__ = ["CardHandler", "RunHandler", "StartHandler", "new_run_id", "not_running"]


def new_run_id() -> str:
    return "r" + uuid.uuid4().hex[:8]


def not_running(record: RunRecord) -> str:
    if record.status == RunStatus.DIED:
        return f"Run {record.run_id} stopped when the bot restarted; wake it first."
    return f"Run {record.run_id} is not running ({record.status})."


class StartHandler:
    def __init__(self, settings: HubSettings, store: StateStore, registry: RunRegistry, admission: Admission,
                 launcher: Launcher, transport: Transport, refuse: Refuse) -> None:
        self.settings, self.store, self.registry, self.admission = settings, store, registry, admission
        self.launcher, self.transport, self.refuse = launcher, transport, refuse
        self._chores = Chores()

    async def start(self, start: Start, thread: ThreadRef, user: str, *, run_id: str = "",
                    origin: str = "") -> IntentResult:
        """`thread`: the new run's home; the door has checked that `user` may start runs in its channel. A
        routine's occurrence passes the `run_id` it recorded (a run of that id already saved has started:
        nothing more happens) and its `origin` ("⏰ Daily triage, 09:00", the status card's title)."""
        if run_id and self.store.get_run(run_id) is not None:
            return IntentResult(True, f"Run {run_id} has started already.", run_id)
        channel = f"{thread.platform}:{thread.channel}"
        if not start.task.strip():
            return await self.refuse(thread, user, "Say what the run should do, e.g. `start build me a CLI`.", "")
        bound = self.store.run_for_thread(thread)
        if bound is not None and self.registry.is_live(bound):
            return await self.refuse(thread, user, f"Run {bound} is already going in this thread; send it a "
                                     "message or interrupt it instead.", bound)
        if (full := self.admission.over_limit()) is not None:
            return await self.refuse(thread, user, full, "")
        run_id = run_id or new_run_id()
        workspace, run_dir = self.admission.dirs(run_id, channel)
        if (busy := self.admission.busy(workspace)) is not None:
            return await self.refuse(thread, user, f"This channel's workspace is busy with run {busy}.", busy)
        options = start.options or RunOptions()
        if (bad := options.problem() or self.settings.model_problem(options.model, channel)) is not None:
            return await self.refuse(thread, user, bad, "")
        options, over = options.within(self.settings.budget_ceilings.get(channel), default=self.settings.budget_usd)
        if over is not None:
            return await self.refuse(thread, user, over, "")
        record = self.store.save_run(RunRecord(run_id, thread, user, start.task.strip(), RunStatus.STARTING,
                                               str(workspace), str(run_dir), origin=origin))
        self.store.bind_thread(thread, run_id)
        try:
            options.save(run_dir)
            await checkpoint(run_dir, workspace, "round 1 started")
            self.launcher.launch(record)
        except Exception as exc:  # the factory refused (bad task, unreadable workspace...)
            self.store.set_run_status(run_id, RunStatus.FAILED)
            return await self.refuse(thread, user, f"Could not start the run: {exc}", run_id)
        if self.transport.remote:
            self._chores.spawn(self._say_if_queued(run_id))
        return IntentResult(True, f"Started run {run_id}.", run_id)

    async def _say_if_queued(self, run_id: str) -> None:
        """With workers: tell the thread when none has room, so a run that waits is not a mystery."""
        waits = await self.transport.waits(run_id)
        live = self.registry.live.get(run_id)
        if waits and live is not None and not live.holder:
            live.pipe.put(live.view.notice("⏳ Every worker is busy (or none is running): the run starts as soon "
                                           "as one has room."))


class CardHandler:
    def __init__(self, registry: RunRegistry, cards: CardRules, platforms: Platforms, mirrors: Mirrors,
                 restarts: Restarts, refuse: Refuse) -> None:
        self.registry, self.cards, self.platforms, self.mirrors = registry, cards, platforms, mirrors
        self.restarts, self.refuse = restarts, refuse

    async def answer(self, answer: Answer, record: RunRecord, user: str, where: ThreadRef | None) -> IntentResult:
        """On a tool approval's card only its two allow options allow; any words (the Deny… form, a `q1: …`
        reply) deny with them. A plan card likewise: only its two approve options approve, any words (the Keep
        planning… form) decline it, which the run reads as feedback, so no words can approve a plan."""
        live = self.registry.live.get(answer.run_id)
        card = live.view.open_card(answer.card_id) if live is not None else None
        deny = card is not None and card.kind in ("approval", "plan") and answer.text not in card.options[:2]
        return await self._settle(record, answer.card_id, answer.text, user, decline=deny, where=where)

    async def decline(self, decline: Decline, record: RunRecord, user: str, where: ThreadRef | None) -> IntentResult:
        return await self._settle(record, decline.card_id, decline.reason, user, decline=True, where=where)

    async def approve(self, approve: Approve, record: RunRecord, user: str, where: ThreadRef | None) -> IntentResult:
        """"once"/"run" answer the card's first two options, "deny" declines it (ValueError: other)."""
        option = approval_option(self.cards.options(approve.run_id, approve.card_id), approve.decision)
        if option is None:
            return await self.decline(Decline(approve.run_id, approve.card_id, approve.text), record, user, where)
        return await self.answer(Answer(approve.run_id, approve.card_id, option), record, user, where)

    async def _settle(self, record: RunRecord, card_id: str, text: str, user: str, *, decline: bool,
                      where: ThreadRef | None) -> IntentResult:
        run_id = record.run_id
        check = self.cards.check(run_id, card_id)
        if check.card is None:
            return late(check, run_id)
        if not decline:  # what the workspace held while the question waited: Undo can go back to it
            await checkpoint(record.run_dir, record.workspace, f"question {card_id} answered")
        if (live := self.registry.live.get(run_id)) is not None:
            place = self.platforms.name(where) if where is not None and self.mirrors.spread(live) else ""
            result = await live.answer(check.card, text, user, decline=decline, where=place)
            if not result.ok and result.duplicate and not (now := self.cards.check(run_id, card_id)):
                return late(now, run_id)  # settled meanwhile: say by whom, as for any late click
        else:
            result = await self.restarts.answer_sleeping(record, check.card, text, user, decline=decline)
        if not result.ok and not result.duplicate:
            return await self.refuse(record.thread, user, result.message, run_id)
        return result


def late(check: CardCheck, run_id: str) -> IntentResult:
    """A click (or reply) on a card that takes no answer: CardRules.check said why, and the platform shows
    it to the person, every time, where they clicked. An unknown card is a plain refusal."""
    return IntentResult(False, check.message, run_id, duplicate=check.problem is not CardProblem.UNKNOWN)


class RunHandler:
    def __init__(self, registry: RunRegistry, store: StateStore, restarts: Restarts, access: Access, outboxes: Outboxes,
                 refuse: Refuse) -> None:
        self.registry, self.store, self.restarts, self.access = registry, store, restarts, access
        self.outboxes, self.refuse = outboxes, refuse

    async def send(self, send: Send, record: RunRecord, user: str, where: ThreadRef | None) -> IntentResult:
        """Inbox mail; its receipt shows on the person's own message (`origin`), in `where` only."""
        live = await self._live(record, user)
        if isinstance(live, IntentResult):
            return live
        return await live.send(send.text, user, origin=send.origin, only_in=str(where) if where is not None else "")

    async def interrupt(self, interrupt: Interrupt, record: RunRecord, user: str) -> IntentResult:
        live = await self._live(record, user)
        return await live.interrupt(interrupt.text, user) if not isinstance(live, IntentResult) else live

    async def oracle(self, oracle: Oracle, record: RunRecord, user: str) -> IntentResult:
        live = await self._live(record, user)
        if isinstance(live, IntentResult):
            return live
        if not oracle.question.strip():
            return await self.refuse(record.thread, user, "Ask the oracle something.", record.run_id)
        return live.ask_oracle(oracle.question, user)

    async def stop(self, stop: Stop, record: RunRecord, user: str) -> IntentResult:
        run_id = stop.run_id
        live = self.registry.live.get(run_id)
        if live is not None and await live.stop(user):
            return IntentResult(True, f"Stopping run {run_id}.", run_id)
        if record.status in (RunStatus.DIED, RunStatus.PARKED):  # asleep since a restart: "do not wake it"
            self.store.set_run_status(run_id, RunStatus.STOPPED)
            return IntentResult(True, f"Run {run_id} will not be woken.", run_id)
        return await self.refuse(record.thread, user, not_running(record), run_id)

    async def wake(self, wake: Wake, record: RunRecord, user: str) -> IntentResult:
        return await self.restarts.wake(record, user, wake.remark)

    async def show_files(self, record: RunRecord, user: str, where: ThreadRef | None) -> IntentResult:
        return await post_files(record, user, where, access=self.access, refuse=self.refuse, outboxes=self.outboxes)

    async def _live(self, record: RunRecord, user: str) -> LiveRun | IntentResult:
        """The live run, or the refusal (already told) that says it is not running."""
        live = self.registry.live.get(record.run_id)
        if live is None:
            return await self.refuse(record.thread, user, not_running(record), record.run_id)
        return live
