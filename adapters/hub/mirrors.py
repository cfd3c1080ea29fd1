"""One run, many places: followed threads, the web page's copy of every run, and the owner's DM.

- `follow(run_id, thread, user)` shows a live run in one more thread from now on: the status card
  and the open questions at once, then everything the home thread gets. `unfollow(thread, user)`
  ends that. Both are kept in the state store, so a restarted bot shows its runs in the same places.
- `auto` functions (a front end registers them; the web page does) name a thread every run should
  also show in, whatever surface started it.
- A question that has waited `dm_after_s` goes to the run's owner as a direct message, where the
  owner's platform can open one (`Platforms.direct`; the web page cannot): that thread carries only that
  card and its outcome, so a push notification reaches a phone and one tap answers.

A question settles once, in the run; every place shows the outcome because every place gets the
same card update, naming who answered and where.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from adapters.access import Access
from adapters.chores import Chores
from adapters.hub.cards import CardRules
from adapters.hub.fanout import ALL, Target
from adapters.hub.outboxes import Outboxes
from adapters.hub.platforms import Platforms
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult, Refuse
from adapters.platform import OutMessage, SurfaceError, ThreadRef
from adapters.state import Mirror, RunRecord, StateStore
from adapters.view import asks as _asks
from adapters.view import fmt as _fmt
from adapters.view import notices

if TYPE_CHECKING:
    from adapters.hub.runs import LiveRun

log = logging.getLogger(__name__)

AutoMirror = Callable[[RunRecord], ThreadRef | None]


class Mirrors:
    def __init__(self, registry: RunRegistry, store: StateStore, platforms: Platforms, access: Access,
                 outboxes: Outboxes, cards: CardRules, *, refuse: Refuse, who: Callable[[str], str] = _fmt.plain_who,
                 dm_after_s: float | None = 60.0) -> None:
        self.registry, self.store, self.platforms, self.access = registry, store, platforms, access
        self.outboxes, self.cards, self.refuse, self.who = outboxes, cards, refuse, who
        self.dm_after_s = dm_after_s
        self.auto: list[AutoMirror] = []
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._chores = Chores()

    # ---- wiring a run's fanout ------------------------------------------------------------------
    def targets_for(self, record: RunRecord) -> list[Mirror]:
        """The places a run (re)launched now shows in besides home: stored mirrors plus auto ones."""
        for auto in self.auto:
            try:
                thread = auto(record)
            except Exception as exc:  # a front end's rule must not stop a run from starting
                log.warning("auto mirror failed for %s: %r", record.run_id, exc)
                continue
            if thread is not None and thread != record.thread and \
                    all(m.thread != thread for m in self.store.mirrors_of(record.run_id)):
                self.store.add_mirror(Mirror(record.run_id, thread, ALL, "auto"))
        return [m for m in self.store.mirrors_of(record.run_id)
                if m.thread != record.thread and self.platforms.has(m.thread.platform)]

    def threads_of(self, run_id: str) -> list[ThreadRef]:
        """The threads following a run (scope "all"; not direct messages), on platforms this process serves."""
        return [m.thread for m in self.store.mirrors_of(run_id)
                if m.scope == ALL and self.platforms.has(m.thread.platform)]

    # ---- intents ---------------------------------------------------------------------------------
    def followable(self, run_id: str, user: str) -> IntentResult:
        """Whether `user` may follow the run now (seeing a run takes what answering it takes, and it must be
        live). Nothing is said to anyone."""
        record = self.store.get_run(run_id)
        if record is None:
            return IntentResult(False, f"No run {run_id}.", run_id)
        decision = self.access.can_answer(record, user)
        if not decision:
            return IntentResult(False, f"You cannot follow run {run_id}: {decision.reason}.", run_id)
        if not self.registry.is_live(run_id):
            return IntentResult(False, f"Run {run_id} is not running ({record.status}).", run_id)
        return IntentResult(True, "", run_id)

    async def follow(self, record: RunRecord, thread: ThreadRef, user: str) -> IntentResult:
        """`record`: a run `user` may act on (`followable` said so)."""
        run_id = record.run_id
        if not self.platforms.has(thread.platform):
            return IntentResult(False, f"No surface for platform {thread.platform!r}.", run_id)
        if thread == record.thread or self._shown_in(run_id, thread):
            return await self.refuse(thread, user, f"Run {run_id} is already shown here.", run_id)
        other = self.store.run_for_thread(thread) or self.store.mirrored_run(thread)
        if other is not None and self.registry.is_live(other):
            return await self.refuse(thread, user, f"This thread already shows run {other}; follow from a new "
                                     "thread or channel.", run_id)
        live = self.registry.live.get(run_id)
        if live is None:
            return await self.refuse(thread, user, f"Run {run_id} is not running ({record.status}).", run_id)
        self.store.add_mirror(Mirror(run_id, thread, ALL, user))
        self.attach(live, Mirror(run_id, thread, ALL, user), catch_up=True)
        here = self.platforms.name(thread)
        live.pipe.put(live.view.notice(f"👀 {self.who(user)} is following this run from {here}."))
        return IntentResult(True, f"Following run {run_id} here: {_fmt.one_line(record.task, 80)}", run_id)

    async def unfollow(self, thread: ThreadRef, user: str) -> IntentResult:
        run_id = self.store.mirrored_run(thread)
        if run_id is None:
            return await self.refuse(thread, user, "This thread does not follow a run (a run's own thread cannot "
                                     "be unfollowed; stop the run instead).", "")
        record = self.store.get_run(run_id)
        if record is not None and not self.access.can_answer(record, user):
            return await self.refuse(thread, user, "Only people who may act on the run can stop following it here.",
                                     run_id)
        self.store.remove_mirror(run_id, thread)
        live = self.registry.live.get(run_id)
        fanout = live.pipe.fanout if live is not None else None
        bye = notices.line(f"mirror:{uuid.uuid4().hex[:8]}", f"👋 Stopped following run {run_id} here.")
        if live is not None and fanout is not None and fanout.has(thread) and not live.finished.is_set():
            fanout.put(_only(bye, thread))
            fanout.remove(thread)
        else:  # the run has ended meanwhile: say it through an outbox of its own
            await self.outboxes.say(thread, [bye])
        return IntentResult(True, f"Stopped following run {run_id} here.", run_id)

    # ---- pieces -------------------------------------------------------------------------------------
    def attach(self, live: LiveRun, mirror: Mirror, *, catch_up: bool) -> None:
        outbox = self.outboxes.outbox(mirror.thread, on_sent=self.cards.recorder(live.run_id, mirror.thread))
        first = []
        if catch_up:
            first = [live.view.status_now(), *(_asks.render(live.run_id, c, self.who) for c in live.view.open_cards())]
        live.pipe.fanout.add(Target(mirror.thread, outbox, mirror.scope), catch_up=first)

    def spread(self, live: LiveRun) -> bool:
        """Whether the run shows in more than one place (cards then say where an answer came from)."""
        return len(live.pipe.fanout.targets) > 1

    def _shown_in(self, run_id: str, thread: ThreadRef) -> bool:
        return any(m.thread == thread for m in self.store.mirrors_of(run_id))

    # ---- the owner's phone ------------------------------------------------------------------------
    def asked(self, live: LiveRun, card_id: str) -> None:
        """A question opened: arm the owner's DM for when it has waited long enough."""
        if self.dm_after_s is None or not self.platforms.can_dm(live.record.thread.platform):
            return
        loop = asyncio.get_running_loop()
        key = (live.run_id, card_id)
        self._timers[key] = loop.call_later(max(0.0, self.dm_after_s), self._dm_due, live, card_id)

    def settled(self, run_id: str, card_id: str) -> None:
        timer = self._timers.pop((run_id, card_id), None)
        if timer is not None:
            timer.cancel()

    def _dm_due(self, live: LiveRun, card_id: str) -> None:
        self._timers.pop((live.run_id, card_id), None)
        self._chores.spawn(self._dm(live, card_id))

    async def _dm(self, live: LiveRun, card_id: str) -> None:
        card = live.view.open_card(card_id)
        if card is None or live.finished.is_set():
            return
        try:
            thread = await self.platforms.direct(live.record.thread.platform, live.record.owner)
        except (SurfaceError, OSError) as exc:  # a DM that cannot be opened costs only the ping
            log.warning("run %s: no direct message to its owner: %r", live.run_id, exc)
            return
        if thread is None:
            return
        mirror = Mirror(live.run_id, thread, _asks.ask_key(card_id), "dm")
        self.store.add_mirror(mirror)
        self.attach(live, mirror, catch_up=False)
        if live.view.open_card(card_id) is not None:
            note = f"Run {live.run_id} ({_fmt.one_line(live.record.task, 60)}) is waiting on this question."
            live.pipe.fanout.put(_only(_asks.render(live.run_id, replace(card, note=note), self.who), thread))

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


def _only(msg: OutMessage, thread: ThreadRef) -> OutMessage:
    return replace(msg, only_in=str(thread))
