"""HubLookups: what platforms may ask the hub besides the intents — run look-ups, cards, people, dedupe.

Reads only (and a platform's notes about people and messages it posted itself); each delegates to the
collaborator that owns the answer. `Hub` inherits them, so `PLATFORM_FACADE` names them on the hub.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from adapters.hub.book import RunBook
from adapters.hub.cards import CardBook, CardProblem, OpenCard
from adapters.hub.files import FileIntake
from adapters.hub.launcher import Launcher, Tap
from adapters.hub.mirrors import Mirrors
from adapters.hub.settings import UploadLimits
from adapters.people import People
from adapters.state import RunRecord, StateStore
from adapters.surface import ThreadRef


class HubLookups:
    book: RunBook
    store: StateStore
    cards: CardBook
    mirrors: Mirrors
    people: People
    launcher: Launcher
    intake: FileIntake

    def run(self, run_id: str) -> RunRecord | None:
        """A run's record (None: no such run)."""
        return self.book.record(run_id)

    def is_live(self, run_id: str) -> bool:
        """Running (or parked) in this process's care, as opposed to ended or asleep."""
        return self.book.is_live(run_id)

    def runs(self, *, user: str | None = None, platform: str | None = None, channel: str | None = None,
             live_only: bool = True) -> list[RunRecord]:
        """Runs by owner and place, newest first; `live_only`: only those running in this process."""
        return self.book.runs(user=user, platform=platform, channel=channel, live_only=live_only)

    def run_in(self, thread: ThreadRef) -> str | None:
        """The run a thread shows: its own, or the one it follows (a live one first)."""
        return self.book.run_in(thread)

    def holder(self, run_id: str) -> str:
        """The worker a live run is on ("" in this process, or not live)."""
        return self.book.holder(run_id)

    def state(self, run_id: str) -> str:
        """What a run is doing now as its status card says (running, waiting, parked…), else its stored status."""
        live = self.book.live.get(run_id)
        if live is not None:
            return live.view.status_card.state
        record = self.store.get_run(run_id)
        return record.status if record is not None else "unknown"

    def thread_by_id(self, platform: str, thread_id: str) -> ThreadRef | None:
        """The full reference of a thread a platform knows only by its own id: a run's home thread, or a
        thread (or direct message) showing a live run."""
        own = (r.thread for r in self.book.runs(platform=platform, live_only=False) if r.thread.thread == thread_id)
        shown = (m.thread for rid in list(self.book.live) for m in self.store.mirrors_of(rid)
                 if m.thread.platform == platform and m.thread.thread == thread_id)
        return next(own, None) or next(shown, None)

    def followers(self, run_id: str) -> list[ThreadRef]:
        """The threads that follow a run, on the platforms this hub serves."""
        return self.mirrors.threads_of(run_id)

    def open_cards(self, run_id: str) -> list[OpenCard]:
        return self.cards.open_cards(run_id)

    def card_state(self, run_id: str, card_id: str) -> tuple[CardProblem, str]:
        """Whether a card takes an answer now: (CardProblem.NONE, "") or the problem and what to say."""
        check = self.cards.check(run_id, card_id)
        return check.problem, check.message

    def card_by_key(self, run_id: str, key: str) -> str | None:
        return self.cards.by_key(run_id, key)

    def seen(self, key: str) -> bool:
        """Deduplicate an inbound delivery: True when `key` was seen within the dedupe window (else it is noted)."""
        return self.store.seen(key)

    def upload_limits(self, run_id: str, where: ThreadRef | None = None) -> UploadLimits:
        """How much may be attached to the run from `where`: a platform stops downloading past it."""
        record = self.book.record(run_id)
        return self.intake.limits_for(record, where) if record is not None else self.intake.limits

    def display(self, user: str) -> str:
        """How cards name a person."""
        return self.people.display(user)

    def note(self, user: str, name: str = "", groups: Iterable[str] | None = None) -> None:
        """What a platform just learned about a person (a display name, group memberships for access)."""
        self.people.note(user, name, groups)

    def remember_message(self, thread: ThreadRef, key: str, message_id: str) -> None:
        """A platform posted a run's message itself (a status card it opened a thread under): later edits
        of that key edit it."""
        self.store.save_message(thread, key, message_id)

    def tap(self, fn: Tap) -> None:
        """See every event of every run as (run id, event), synchronously: never block, never raise."""
        self.launcher.taps.append(fn)

    def auto_mirror(self, fn: Callable[[RunRecord], ThreadRef | None]) -> None:
        """Name a thread every run should also show in (None: not this one)."""
        self.mirrors.auto.append(fn)

    def pending_inputs(self) -> int:
        """Inputs accepted and not yet carried out (the durable intent log)."""
        return self.store.count_unsettled_intents()
