"""Rounds: a thread is a conversation, so a person's words to a run that has ended start its next round.

    ended run (done, failed, stopped)  ──continue(text)──▶  round N+1: the record says so, the run side
                                                            resumes the session of the run's last agent
                                                            step with the words (flower_core.next_round),
                                                            in the same workspace and run dir
    live run                            refused: its words are inbox mail (`send`)
    asleep run (died, parked)           refused: it was cut off, not finished; wake it

A round is launched the way a wake is (`Launcher.launch(waking=True)`): the same thread and status card,
the same cards rule (the lineage's wake count gives the round's cards ids of their own, so a click on
an old card still says it is settled), the same human channel, oracle, stop and mirrors. The round
number lives in the run's record, so a round cut off by a restart is woken as that round.
The hub has checked who may write to the run before anything here runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from adapters.hub.admission import Admission
from adapters.hub.book import RunBook
from adapters.hub.launcher import Launcher
from adapters.hub.results import IntentResult
from adapters.state import LIVE_STATUSES, RunRecord, RunStatus, StateStore
from adapters.surface import ThreadRef
from adapters.view import ViewConfig
from adapters.view import fmt as _fmt

Refuse = Callable[[ThreadRef, str, str, str], Awaitable[IntentResult]]  # (thread, user, reason, run_id)


def has_ended(record: RunRecord) -> bool:
    """Finished for good as the store says (done, failed, stopped, or an ending a newer version wrote), as
    opposed to live or asleep (died, parked: those are woken, not continued)."""
    return record.status not in LIVE_STATUSES and record.status != RunStatus.DIED


class Rounds:
    def __init__(self, book: RunBook, store: StateStore, launcher: Launcher, admission: Admission,
                 view: ViewConfig, *, refuse: Refuse) -> None:
        self.book, self.store, self.launcher, self.admission = book, store, launcher, admission
        self.view, self.refuse = view, refuse

    async def continue_run(self, record: RunRecord, text: str, user: str, *,
                           where: ThreadRef | None = None) -> IntentResult:
        """`record`: a run `user` may write to (the hub checked); `where`: the thread the words came from
        (refusals are told there)."""
        run_id, here = record.run_id, where or record.thread
        words = text.strip()
        if not words:
            return await self.refuse(here, user, "Say what the run should do next.", run_id)
        if self.book.is_live(run_id):
            return await self.refuse(here, user, f"Run {run_id} is still going: send it a message instead "
                                     "(its inbox), or interrupt it.", run_id)
        if not has_ended(record):
            return await self.refuse(here, user, f"Run {run_id} was cut off, not finished ({record.status}): "
                                     "wake it to let it pick up where it was.", run_id)
        if (full := self.admission.over_limit()) is not None:
            return await self.refuse(here, user, full, run_id)
        if (busy := self.admission.busy(Path(record.workspace))) is not None:
            return await self.refuse(here, user, f"The workspace is busy with run {busy}.", run_id)
        n = record.round + 1
        started = self.store.save_run(replace(record, status=RunStatus.STARTING, round=n, updated_at=0.0))
        try:
            live = self.launcher.launch(started, waking=True, said=words)
        except Exception as exc:  # the run side refused (no session to continue, an unreadable workspace…)
            self.store.save_run(record)  # as it was, to the second: a refusal changes nothing
            return await self.refuse(here, user, f"Could not continue the run: {exc}", run_id)
        live.pipe.put(live.view.notice(f"💬 {self.view.who(user)} continued the run, round {n}: "
                                       f"{_fmt.quote(words, 500)}"))
        return IntentResult(True, f"Run {run_id} goes on: round {n}.", run_id)
