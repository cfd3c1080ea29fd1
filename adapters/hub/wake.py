"""Restart and wake: runs outlive the bot process only on disk, and this is how they come back.

- `recover()` (at bot start): every run the store still calls starting/running/waiting died with
  the old process. Its thread is told so (status card edited in place, one notice); its open
  ask cards stay as they are, buttons and all.
- A click on such a card (`answer_sleeping`): the answer is held in the run's card ledger and the
  run is woken. Workflow continuity does the rest: finished steps are not redone and the step
  that was cut off resumes its session. When the woken run asks the same question again it is
  bound to the old card (no second card) and the held answer is given at once. If it asks
  something else first, or its step ends without asking, the held answer goes to its inbox (and
  so into the brief) instead, and the card says so — an answer is never silently lost.
- `wake()`: the same without an answer (a person asks for it); open old cards come back to life
  when their questions are re-asked.
- A run that was parked (no CLI, waiting on a question: flower_core/runtime/parking.py) did not die:
  `recover()` brings it back at once, still parked. Its step resumes the parked session, which asks
  the same question again without starting a CLI; the question lands on its old card, so an answer
  there resumes the run exactly as it would have in the old process.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.hub.ledger import CardLedger
from adapters.hub.results import IntentResult
from adapters.state import RunRecord
from adapters.view import AskCard, RunView

if TYPE_CHECKING:
    from adapters.hub.hub import Hub

log = logging.getLogger(__name__)

LIVE_STATUSES = ("starting", "running", "waiting")


async def recover(hub: Hub) -> list[str]:
    died: list[str] = []
    for record in hub.store.list_runs():
        if record.status not in (*LIVE_STATUSES, "parked") or record.run_id in hub.live:
            continue
        if hub.transport.remote and _follow_again(hub, record):
            continue  # it never stopped: it is on a worker
        if record.status == "parked" and _bring_back_parked(hub, record):
            continue
        hub.store.set_run_status(record.run_id, "died")
        died.append(record.run_id)
        try:
            await _report_death(hub, record)
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


def _bring_back_parked(hub: Hub, record: RunRecord) -> bool:
    """Relaunch a parked run in this process (it parks again before any CLI starts); False if it cannot."""
    try:
        hub.launch(record, waking=True)
    except Exception as exc:
        log.warning("parked run %s could not be brought back: %r", record.run_id, exc)
        return False
    return True


async def _report_death(hub: Hub, record: RunRecord) -> None:
    view = RunView(record.run_id, record.task, clock=hub.clock, config=hub.view_config, epoch=uuid.uuid4().hex[:6])
    view.status_card.state = "died"
    open_cards = len(CardLedger(record.run_dir).open_cards())
    asks = (f" Its {open_cards} open question{'s' if open_cards != 1 else ''} can still be answered on the "
            "card — an answer wakes the run —" if open_cards else "")
    text = (f"💤 The bot restarted and run {record.run_id} stopped with it.{asks} or wake it to continue where it "
            "was cut off (finished steps are not redone).")
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
    if record.status not in ("died", "parked"):
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
    if decline:
        ledger.settled(card_id, "declined", by=user, answer=text)
        outbox = hub.outbox(record.thread)
        view = RunView(run_id, record.task, clock=hub.clock, config=hub.view_config)
        for msg in view.show_card(AskCard(card_id, "", card.question, card.options, state="declined", answer=text,
                                          by=user)):
            outbox.put(msg)
        await outbox.flush()
        await outbox.close()
        return IntentResult(True, "Declined; the run stays asleep.", run_id)
    ledger.hold(card_id, text, user)
    woke = await wake(hub, run_id, user)
    if not woke.ok:
        return IntentResult(False, f"Your answer is kept for when the run wakes; it cannot wake now: {woke.message}",
                            run_id)
    live = hub.live[run_id]
    note = f"Answer from {hub.view_config.who(user)} received; waking the run to give it."
    live.pipe.put(live.view.show_card(AskCard(card_id, "", card.question, card.options, note=note)))
    return IntentResult(True, "The run had stopped with a bot restart: it is waking up and gets your answer when it "
                        "asks again.", run_id)
