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

import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.hub.ledger import CardLedger
from adapters.hub.results import IntentResult
from adapters.state import RunRecord
from adapters.transport.intents import Intent, Op
from adapters.view import RunView

if TYPE_CHECKING:
    from adapters.hub.hub import Hub

log = logging.getLogger(__name__)

LIVE_STATUSES = ("starting", "running", "waiting")
ASLEEP = ("died", "parked")
BACK = "🔁 The bot restarted; the run picks up where it was (finished steps are not redone)."


async def recover(hub: Hub) -> list[str]:
    """Bring back what the last process left; returns the runs that could not come back."""
    died: list[str] = []
    for record in hub.store.list_runs():
        if record.status not in (*LIVE_STATUSES, *ASLEEP) or record.run_id in hub.live:
            continue
        if record.status == "died" and not hub.wake_on_start:
            continue  # left asleep by an earlier process: only a person wakes it
        if hub.transport.remote and _follow_again(hub, record):
            continue  # it never stopped: it is on a worker
        why = ""
        if hub.wake_on_start or record.status == "parked":
            why = _bring_back(hub, record)
            if not why:
                continue
        hub.store.set_run_status(record.run_id, "died")
        died.append(record.run_id)
        try:
            await _report_death(hub, record, why)
        except Exception as exc:  # one unreachable thread must not stop the others being reported
            log.warning("could not report run %s: %r", record.run_id, exc)
    return died


def _follow_again(hub: Hub, record: RunRecord) -> bool:
    """This front restarted but the run is on a worker: show it again from where the front stopped reading."""
    try:
        hub.launch(record, waking=True, attach=True, restoring=True)
    except Exception as exc:
        log.warning("run %s could not be followed again: %r", record.run_id, exc)
        return False
    return True


def _bring_back(hub: Hub, record: RunRecord) -> str:
    """Relaunch a run in this process where it was; "" on success, else why it could not come back."""
    parked = record.status == "parked"
    try:
        live = hub.launch(record, waking=True, restoring=True)
    except Exception as exc:
        log.warning("run %s could not come back: %r", record.run_id, exc)
        return f"{type(exc).__name__}: {exc}"
    if not parked:  # a parked run just goes on waiting: its thread needs no word
        live.pipe.put(live.view.notice(BACK))
    return ""


async def _report_death(hub: Hub, record: RunRecord, why: str) -> None:
    view = RunView(record.run_id, record.task, clock=hub.clock, config=hub.view_config, epoch=uuid.uuid4().hex[:6])
    view.status_card.state = "died"
    open_cards = len(CardLedger(record.run_dir).open_cards())
    asks = (f" Its {open_cards} open question{'s' if open_cards != 1 else ''} can still be answered on the "
            "card — an answer wakes the run." if open_cards else "")
    cause = f" It could not come back by itself: {why}." if why else ""
    text = (f"💤 The bot restarted and run {record.run_id} is not running.{cause}{asks} Wake it to continue where "
            f"it was cut off (the Wake button, `/flower wake {record.run_id}`; finished steps are not redone).")
    places = [record.thread, *(m.thread for m in hub.store.mirrors_of(record.run_id)
                               if m.scope == "all" and m.thread.platform in hub.surfaces)]
    for thread in places:
        outbox = hub.outbox(thread)
        for msg in [view.status_now(), *view.notice(text)]:
            outbox.put(msg)
        await outbox.flush()
        await outbox.close()


async def wake(hub: Hub, run_id: str, user: str, remark: str = "") -> IntentResult:
    record = hub.store.get_run(run_id)
    if record is None:
        return IntentResult(False, f"No run {run_id}.", run_id)
    decision = hub.access.can_answer(record, user)
    if not decision:
        return await hub.refuse(record.thread, user, decision.reason, run_id)
    if run_id in hub.live:
        return await hub.refuse(record.thread, user, f"Run {run_id} is already running.", run_id)
    if record.status == "done" and not remark.strip():
        return await hub.refuse(record.thread, user, f"Run {run_id} finished; wake it with what to do next.",
                                run_id)
    if (full := hub._over_limit()) is not None:
        return await hub.refuse(record.thread, user, full, run_id)
    if (busy := hub._busy(Path(record.workspace))) is not None:
        return await hub.refuse(record.thread, user, f"The workspace is busy with run {busy}.", run_id)
    hub.store.set_run_status(run_id, "starting")
    try:
        live = hub.launch(record, waking=True, remark=remark.strip())
    except Exception as exc:
        hub.store.set_run_status(run_id, record.status)
        return await hub.refuse(record.thread, user, f"Could not wake the run: {exc}", run_id)
    said = f": “{remark.strip()}”" if remark.strip() else ""
    live.pipe.put(live.view.notice(f"⏰ {hub.view_config.who(user)} woke the run{said}"))
    return IntentResult(True, f"Woke run {run_id}.", run_id)


async def answer_sleeping(hub: Hub, record: RunRecord, card_id: str, text: str, user: str, *,
                          decline: bool) -> IntentResult:
    """An answer (or decline) on a card of a run that is not running in this process."""
    run_id = record.run_id
    if record.status not in ASLEEP:
        return IntentResult(False, f"Run {run_id} has ended ({record.status}); its questions are closed.", run_id)
    ledger = CardLedger(record.run_dir)
    card = ledger.get(card_id)
    if card is None:  # the ledger is gone but the store remembers the card: rebuild its entry
        stored = hub.store.get_ask_message(run_id, card_id)
        if stored is None:
            return IntentResult(False, "I don't know that question.", run_id)
        card = ledger.asked(card_id, stored.question, list(stored.options))
    if card.state != "asked":
        who = f" by {hub.view_config.who(card.by)}" if card.by else ""
        return IntentResult(False, f"That question is already settled ({card.state}{who}).", run_id, duplicate=True)
    if card.held is not None:
        held_by = hub.view_config.who(card.held_by)
        return IntentResult(False, f"An answer from {held_by} is already waiting for that question.", run_id,
                            duplicate=True)
    intent = Intent(Op.DECLINE if decline else Op.ANSWER, text, card=card_id, question=card.question, user=user)
    await hub.transport.keep(run_id, intent)  # durable before anything is said
    ledger.hold(card_id, text, user)
    woke = await wake(hub, run_id, user)
    if not woke.ok:
        return IntentResult(True, f"Your answer is kept for when the run wakes; it cannot wake now: {woke.message}",
                            run_id)
    return IntentResult(True, "The run had stopped with a bot restart: it is waking up and gets your answer when it "
                        "asks again.", run_id)
