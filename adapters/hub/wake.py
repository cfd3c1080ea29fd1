"""Restart and wake: runs outlive the bot process on disk, and this is how they come back.

- `recover()` (at bot start): every run the store still calls live (starting, running, waiting,
  parked — and runs an older process left stopped) comes back by itself (`Hub.wake_on_start`,
  default on). The run side resumes it where it was: finished steps are not redone, the cut-off step
  resumes its session; a question the session still holds open is restored parked on its old card
  (no CLI, no dependence on the model asking again); inputs the last process accepted but had not
  carried out are replayed once (adapters/transport/applier.py). With workers (Redis) the runs never
  stopped: the front follows them again.
- A run that cannot come back (its launch fails), or every run when `wake_on_start` is off, is
  marked "died": its thread says why, its status card gets a Wake button, and its old question cards
  stay answerable. A person wakes it with the button, `/flower wake`, or `POST /api/runs/{id}/wake`.
- An answer (or decline) on a card of a run that is not running (`answer_sleeping`): it is logged as
  an intent and held on its card, and the run is woken; the woken run applies it to the restored
  question (or, if the question was never stored, delivers it to the inbox).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from pathlib import Path

from adapters.hub.admission import Admission
from adapters.hub.cards import ended_line
from adapters.hub.launcher import Launch, Launcher
from adapters.hub.ledger import CardLedger
from adapters.hub.mirrors import Mirrors
from adapters.hub.outboxes import Outboxes
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult, Refuse
from adapters.hub.runs import LiveRun
from adapters.state import LIVE_STATUSES, RunRecord, RunStatus
from adapters.transport import Transport
from adapters.transport.intents import Intent, Op, StoreIntentLog
from adapters.view import AskCard, RunView, ViewConfig

log = logging.getLogger(__name__)

ASLEEP = frozenset({RunStatus.DIED, RunStatus.PARKED})
BACK = "🔁 The bot restarted; the run picks up where it was (finished steps are not redone)."
# Runs coming back at once after a restart: each holds its session store and card ledger open until it waits
# again (about 3 files), so 10,000 parked runs restored all at once would pass the open-file limit.
COMING_BACK_AT_ONCE = 32
COME_BACK_DEADLINE_S = 60.0  # a run slower than this to come back no longer holds up the others


class Window:
    """At most `size` runs coming back at once; a slot is free again when its run is back, or after the deadline."""

    def __init__(self, size: int, deadline_s: float) -> None:
        self.size, self.deadline_s = size, deadline_s
        self._slots = asyncio.Semaphore(size)

    async def enter(self) -> Callable[[], None]:
        """Wait for a slot; returns what frees it (once, whoever calls it first: the run or the deadline)."""
        await self._slots.acquire()
        freed = False

        def leave() -> None:
            nonlocal freed
            if not freed:
                freed = True
                timer.cancel()
                self._slots.release()

        timer = asyncio.get_running_loop().call_later(self.deadline_s, leave)
        return leave

    async def drain(self) -> None:
        """Until every run let in is back (each slot is freed by its deadline at the latest)."""
        for _ in range(self.size):
            await self._slots.acquire()
        for _ in range(self.size):
            self._slots.release()


class Restarts:
    def __init__(self, registry: RunRegistry, launcher: Launcher, admission: Admission, mirrors: Mirrors,
                 outboxes: Outboxes, transport: Transport, view: ViewConfig, *, wake_on_start: bool, refuse: Refuse,
                 clock: Callable[[], float]) -> None:
        self.registry, self.store, self.launcher, self.admission = registry, registry.store, launcher, admission
        self.mirrors, self.outboxes, self.transport, self.view = mirrors, outboxes, transport, view
        self.wake_on_start, self.refuse, self.clock = wake_on_start, refuse, clock

    async def recover(self) -> list[str]:
        """Bring back what the last process left; returns the runs that could not come back."""
        died: list[str] = []
        window = Window(COMING_BACK_AT_ONCE, COME_BACK_DEADLINE_S)
        for record in self.store.list_runs():
            if record.status not in LIVE_STATUSES | ASLEEP or self.registry.is_live(record.run_id):
                continue
            if record.status == RunStatus.DIED and not self.wake_on_start:
                continue  # left asleep by an earlier process: only a person wakes it
            if self.transport.remote and self._follow_again(record):
                continue  # it never stopped: it is on a worker
            why = ""
            if self.wake_on_start or record.status == RunStatus.PARKED:
                leave = await window.enter()
                now = self.store.get_run(record.run_id)  # a person may have woken it (or it ended) meanwhile
                if now is None or self.registry.is_live(record.run_id) or now.status not in LIVE_STATUSES | ASLEEP:
                    leave()
                    continue
                record = now
                live, why = self._bring_back(record)
                if live is not None:
                    live.when_back(leave)
                    continue
                leave()
            self.store.set_run_status(record.run_id, RunStatus.DIED)
            died.append(record.run_id)
            try:
                await self._report_death(record, why)
            except Exception as exc:  # one unreachable thread must not stop the others being reported
                log.warning("could not report run %s: %r", record.run_id, exc)
        await window.drain()
        return died

    def _follow_again(self, record: RunRecord) -> bool:
        """This front restarted but the run is on a worker: show it again from where the front stopped reading."""
        try:
            self.launcher.launch(record, Launch.restored(attach=True))
        except Exception as exc:
            log.warning("run %s could not be followed again: %r", record.run_id, exc)
            return False
        return True

    def _release_unlogged_holds(self, record: RunRecord) -> None:
        """A card holds the answer being given from just before its intent is logged; a kill in between
        leaves a hold nothing will ever apply, which would refuse every later answer to that card.
        (Local runs only: a remote run's intents are in Redis, where its next holder replays them.)"""
        if self.transport.remote:
            return
        ledger = CardLedger(record.run_dir)
        held = [r.card_id for r in ledger.open_cards() if r.held is not None]
        if not held:
            return
        logged = {i.card for i in StoreIntentLog(self.store).unsettled(record.run_id)
                  if i.op in (Op.ANSWER, Op.DECLINE)}
        for card_id in held:
            if card_id not in logged:
                log.info("run %s: card %s held an answer that was never logged; it takes answers again",
                         record.run_id, card_id)
                ledger.release(card_id)

    def _bring_back(self, record: RunRecord) -> tuple[LiveRun | None, str]:
        """Relaunch a run in this process where it was: (its LiveRun, "") or (None, why it could not come back)."""
        parked = record.status == RunStatus.PARKED
        self._release_unlogged_holds(record)
        try:
            live = self.launcher.launch(record, Launch.restored())
        except Exception as exc:
            log.warning("run %s could not come back: %r", record.run_id, exc)
            return None, f"{type(exc).__name__}: {exc}"
        if not parked:  # a parked run just goes on waiting: its thread needs no word
            live.pipe.put(live.view.notice(BACK))
        return live, ""

    async def _report_death(self, record: RunRecord, why: str) -> None:
        view = RunView(record.run_id, record.task, clock=self.clock, config=self.view, epoch=uuid.uuid4().hex[:6],
                       owner=f"{record.thread.platform}:{record.owner}")
        view.status_card.state = "died"
        open_cards = len(CardLedger(record.run_dir).open_cards())
        asks = (f" Its {open_cards} open question{'s' if open_cards != 1 else ''} can still be answered on the "
                "card — an answer wakes the run." if open_cards else "")
        cause = f" It could not come back by itself: {why}." if why else ""
        text = (f"💤 The bot restarted and run {record.run_id} is not running.{cause}{asks} Wake it to continue "
                f"where it was cut off (the Wake button, `/flower wake {record.run_id}`; finished steps are not "
                "redone).")
        for thread in [record.thread, *self.mirrors.threads_of(record.run_id)]:
            await self.outboxes.say(thread, [view.status_now(), *view.notice(text)])

    async def wake(self, record: RunRecord, user: str, remark: str = "") -> IntentResult:
        """`record`: a run `user` may act on (the hub checked)."""
        run_id = record.run_id
        if self.registry.is_live(run_id):
            return await self.refuse(record.thread, user, f"Run {run_id} is already running.", run_id)
        if record.status == RunStatus.DONE and not remark.strip():
            return await self.refuse(record.thread, user, f"Run {run_id} finished; wake it with what to do next.",
                                     run_id)
        if (full := self.admission.over_limit()) is not None:
            return await self.refuse(record.thread, user, full, run_id)
        if (busy := self.admission.busy(Path(record.workspace))) is not None:
            return await self.refuse(record.thread, user, f"The workspace is busy with run {busy}.", run_id)
        self._release_unlogged_holds(record)
        self.store.set_run_status(run_id, RunStatus.STARTING)
        try:
            live = self.launcher.launch(record, Launch.woken(remark.strip()))
        except Exception as exc:
            self.store.set_run_status(run_id, record.status)
            return await self.refuse(record.thread, user, f"Could not wake the run: {exc}", run_id)
        said = f": “{remark.strip()}”" if remark.strip() else ""
        live.pipe.put(live.view.notice(f"⏰ {self.view.who(user)} woke the run{said}"))
        return IntentResult(True, f"Woke run {run_id}.", run_id)

    async def answer_sleeping(self, record: RunRecord, card: AskCard, text: str, user: str, *,
                              decline: bool) -> IntentResult:
        """An answer (or decline) on an open card (the hub checked) of a run not running in this process."""
        run_id = record.run_id
        if record.status not in ASLEEP:  # (CardRules.check says so first; a run that ended meanwhile)
            return IntentResult(False, ended_line(record.status), run_id)
        intent = Intent(Op.DECLINE if decline else Op.ANSWER, text, card=card.card_id, question=card.question,
                        user=user, kind=card.kind)
        await self.transport.keep(run_id, intent)  # durable before anything is said
        CardLedger(record.run_dir).hold(card.card_id, text, user)
        woke = await self.wake(record, user)
        if not woke.ok:
            return IntentResult(True, "Your answer is kept for when the run wakes; it cannot wake now: "
                                f"{woke.message}", run_id)
        return IntentResult(True, "The run had stopped with a bot restart: it is waking up and gets your answer "
                            "when it asks again.", run_id)
