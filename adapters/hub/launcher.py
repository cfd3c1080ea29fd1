"""Launcher: how a run comes to be shown — its view, its threads (home and mirrors) and its chat side
(`LiveRun`), started through the transport; and how a run taken over by another worker is shown afresh.

Used for a new run, a woken one, a run this front follows again after its own restart, and a takeover.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from adapters.hub.cards import CardRules
from adapters.hub.checkpoints import take_note
from adapters.hub.fanout import ALL, Fanout, Target
from adapters.hub.mirrors import Mirrors
from adapters.hub.options import RunOptions
from adapters.hub.outboxes import Outboxes
from adapters.hub.pipe import RunPipe
from adapters.hub.registry import RunRegistry
from adapters.hub.runs import LiveRun, RunCallbacks
from adapters.hub.settings import HubSettings
from adapters.platform import ThreadRef
from adapters.state import RunRecord, StateStore
from adapters.transport import RunPlan, Transport
from adapters.view import RunView, ViewConfig
from flower_core import Event
from flower_core.human.approval import merge_rules

Tap = Callable[[str, Event], object]


@dataclass(frozen=True)
class Launch:
    """How a run is shown and started. The default: a new run. The named constructors say the others."""

    waking: bool = False  # it ran before: the run side resumes its session
    remark: str = ""  # a person's words to a run they woke
    said: str = ""  # the words that start a next round
    attach: bool = False  # the run side is already going on a worker (a takeover, this front restarted)
    restoring: bool = False  # brought back after a restart: its steps so far pass quietly
    after: LiveRun | None = None  # the LiveRun that showed it until a takeover

    @classmethod
    def woken(cls, remark: str = "") -> Launch:
        return cls(waking=True, remark=remark)

    @classmethod
    def next_round(cls, said: str) -> Launch:
        return cls(waking=True, said=said)

    @classmethod
    def restored(cls, *, attach: bool = False) -> Launch:
        return cls(waking=True, attach=attach, restoring=True)

    @classmethod
    def takeover(cls, after: LiveRun) -> Launch:
        return cls(waking=True, attach=True, after=after)


class Launcher:
    def __init__(self, registry: RunRegistry, store: StateStore, transport: Transport, outboxes: Outboxes,
                 cards: CardRules, mirrors: Mirrors, settings: HubSettings, view: ViewConfig, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.registry, self.store, self.transport, self.outboxes = registry, store, transport, outboxes
        self.cards, self.mirrors, self.settings, self.view, self.clock = cards, mirrors, settings, view, clock
        # Taps see every event of every run as (run id, event), beside the view: e.g. the web's event log.
        self.taps: list[Tap] = []

    def plan(self, record: RunRecord, how: Launch = Launch()) -> RunPlan:
        """What the run side builds the run from: the task, its places, the starter's choices, its round
        (`how.said`: the words that start a next round; a round woken after a restart has none) and its books
        so far (what it spent, its cap as last raised)."""
        opts, s = RunOptions.load(Path(record.run_dir)), self.settings
        where = f"{record.thread.platform}:{record.thread.channel}"  # the channel's approvals add to the bot's
        # What a person undid since the run's last turn goes with the words that start its next one.
        said = take_note(record.run_dir, how.said) if how.said else how.said
        remark = take_note(record.run_dir, how.remark) if how.remark else how.remark
        return RunPlan(record.task, Path(record.workspace), Path(record.run_dir), waking=how.waking,
                       remark=remark, round=record.round, said=said, language=s.language,
                       timeout_s=s.timeout_s if opts.timeout_s is None else opts.timeout_s,
                       max_asks=s.max_asks if opts.max_asks is None else opts.max_asks,
                       budget_usd=record.cap_usd if record.cap_usd is not None else
                       s.budget_usd if opts.budget_usd is None else opts.budget_usd, spent_usd=record.spent_usd,
                       approvals=merge_rules(s.approvals, s.channel_approvals.get(where),
                                             {"ask_tools": list(opts.approve or ())}),
                       model=opts.model or s.model, effort=opts.effort or s.effort, plan_first=bool(opts.plan))

    def launch(self, record: RunRecord, how: Launch = Launch()) -> LiveRun:
        """Show a run in its threads and start its run side through the transport (`how`: see Launch)."""
        plan = self.plan(record, how)
        view = RunView(record.run_id, record.task, clock=self.clock, config=self.view, epoch=uuid.uuid4().hex[:6],
                       owner=f"{record.thread.platform}:{record.owner}")
        view.status_card.round = record.round
        view.status_card.model, view.status_card.effort = plan.model or "", plan.effort or ""
        view.status_card.origin = record.origin
        fanout = Fanout(self._target(record, record.thread))
        for mirror in self.mirrors.targets_for(record):
            fanout.add(self._target(record, mirror.thread, mirror.scope))
        observers = [partial(tap, record.run_id) for tap in self.taps]
        callbacks = RunCallbacks(on_end=self.registry.ended, on_ask=self._on_ask, on_handover=self._handed_over)
        live = LiveRun(record, RunPipe(view, fanout, observers=observers), store=self.store, waking=how.waking,
                       has_oracle=self.settings.oracle, clock=self.clock, callbacks=callbacks,
                       ledger=how.after.ledger if how.after is not None else None, restoring=how.restoring)
        side = self.transport.launch(record.run_id, plan, live, attach=how.attach)  # raises: nothing was shown
        self.registry.live[record.run_id] = live
        live.start(side)
        return live

    def _target(self, record: RunRecord, thread: ThreadRef, scope: str = ALL) -> Target:
        return Target(thread, self.outboxes.outbox(thread, on_sent=self.cards.recorder(record.run_id, thread)), scope)

    def _on_ask(self, live: LiveRun, card_id: str, state: str) -> None:
        if state == "asked":
            self.mirrors.asked(live, card_id)
        else:
            self.mirrors.settled(live.run_id, card_id)

    def _handed_over(self, old: LiveRun, holder: str, previous: str) -> None:
        """A worker took over a run whose worker went silent: show it afresh, with one notice line."""
        record = self.store.get_run(old.run_id) or old.record
        live = old.successor = self.launch(record, Launch.takeover(old))
        was = f" (worker {previous} stopped answering)" if previous else ""
        live.pipe.put(live.view.notice(f"🔁 Worker {holder} took the run over{was} and resumes it where it was."))
