"""Rounds: a thread is a conversation, so a person's words to a run that has ended start its next round.

    ended run (done, failed, stopped)  ──continue(text)──▶  round N+1: the record says so, the run side
                                                            resumes the session of the run's last agent
                                                            step with the words (flower_core.next_round),
                                                            in the same workspace and run dir
    live run                            refused: its words are inbox mail (`send`)
    asleep run (died, parked)           refused: it was cut off, not finished; wake it

A round is launched the way a wake is (`Launch.next_round`): the same thread and status card,
the same cards rule (the lineage's wake count gives the round's cards ids of their own, so a click on
an old card still says it is settled), the same human channel, oracle, stop and mirrors. The round
number lives in the run's record, so a round cut off by a restart is woken as that round.
The hub has checked who may write to the run before anything here runs.

`resume(run_id, thread, user, text)` (`/flower resume` on Slack and Discord) shows a run in one more
thread, elsewhere, and with words continues it:

    live run     followed there (as `follow` does); the words go to its inbox, as a reply there would
    ended run    the thread is kept as a mirror first, so the round it starts shows there from its
                 first line; the words start the next round (a refused round removes the mirror again);
                 with no words the thread waits there, and a reply in it continues the run
    asleep run   refused: wake it first
`resumable` is the same rule asked beforehand, so a platform opens no thread for a refusal.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from adapters.access import Access
from adapters.hub.admission import Admission
from adapters.hub.checkpoints import checkpoint
from adapters.hub.fanout import ALL
from adapters.hub.intents import Continue, Follow, Send, Submit
from adapters.hub.launcher import Launch, Launcher
from adapters.hub.registry import RunRegistry, has_ended
from adapters.hub.results import IntentResult, Refuse
from adapters.platform import ThreadRef
from adapters.state import Mirror, RunRecord, RunStatus, StateStore
from adapters.view import ViewConfig
from adapters.view import fmt as _fmt


class Rounds:
    def __init__(self, registry: RunRegistry, store: StateStore, launcher: Launcher, admission: Admission,
                 view: ViewConfig, access: Access, *, refuse: Refuse) -> None:
        self.registry, self.store, self.launcher, self.admission = registry, store, launcher, admission
        self.view, self.access, self.refuse = view, access, refuse

    async def continue_run(self, record: RunRecord, text: str, user: str, *,
                           where: ThreadRef | None = None) -> IntentResult:
        """`record`: a run `user` may write to (the hub checked); `where`: the thread the words came from
        (refusals are told there)."""
        run_id, here = record.run_id, where or record.thread
        words = text.strip()
        if not words:
            return await self.refuse(here, user, "Say what the run should do next.", run_id)
        if self.registry.is_live(run_id):
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
        await checkpoint(record.run_dir, record.workspace, f"round {n} started")
        started = self.store.save_run(replace(record, status=RunStatus.STARTING, round=n, updated_at=0.0))
        try:
            live = self.launcher.launch(started, Launch.next_round(words))
        except Exception as exc:  # the run side refused (no session to continue, an unreadable workspace…)
            self.store.save_run(record)  # as it was, to the second: a refusal changes nothing
            return await self.refuse(here, user, f"Could not continue the run: {exc}", run_id)
        live.pipe.put(live.view.notice(f"💬 {self.view.who(user)} continued the run, round {n}: "
                                       f"{_fmt.quote(words, 500)}"))
        return IntentResult(True, f"Run {run_id} goes on: round {n}.", run_id)

    def resumable(self, run_id: str, user: str) -> IntentResult:
        """Whether `user` may resume the run now (seeing it takes what answering it takes; it must be live or
        ended, not asleep). Nothing is said to anyone."""
        record = self.store.get_run(run_id)
        if record is None:
            return IntentResult(False, f"No run {run_id}.", run_id)
        decision = self.access.can_answer(record, user)
        if not decision:
            return IntentResult(False, f"You cannot resume run {run_id}: {decision.reason}.", run_id)
        if not self.registry.is_live(run_id) and not has_ended(record):
            return IntentResult(False, f"Run {run_id} was cut off, not finished ({record.status}): wake it first "
                                "(`/flower wake`).", run_id)
        return IntentResult(True, "", run_id)

    async def resume(self, run_id: str, thread: ThreadRef, user: str, text: str, *, submit: Submit) -> IntentResult:
        """Show the run in `thread` (a new one, elsewhere) and, with `text`, continue it; see the docstring."""
        may = self.resumable(run_id, user)
        record = self.store.get_run(run_id)
        if not may.ok or record is None:
            return await self.refuse(thread, user, may.message, run_id)
        words = text.strip()
        if self.registry.is_live(run_id):
            shown = await submit(Follow(run_id), user, where=thread)
            if not shown.ok or not words:
                return shown
            sent = await submit(Send(run_id, words), user, where=thread)
            return IntentResult(sent.ok, f"{shown.message}\n{sent.message}", run_id)
        if any(m.thread == thread for m in self.store.mirrors_of(run_id)) or thread == record.thread:
            return await self.refuse(thread, user, f"Run {run_id} is already shown here.", run_id)
        self.store.add_mirror(Mirror(run_id, thread, ALL, user))  # before the round: it shows here from the start
        if not words:
            return IntentResult(True, f"Run {run_id} is shown here. It has ended ({record.status}): a reply in "
                                f"this thread continues it (round {record.round + 1}).", run_id)
        went = await submit(Continue(run_id, words), user, where=thread)
        if not went.ok:
            self.store.remove_mirror(run_id, thread)  # a refused round leaves nothing behind
        return went
