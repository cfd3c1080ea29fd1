"""HubQuery: the read-only questions a platform may ask the hub (`hub.query`), each answered by the
collaborator that owns it.

```
runs        run · is_live · runs · run_in · holder · state · thread_by_id · followers · status · wait · model ·
            run_meant · checkpoints
cards       open_cards · card_state · card_by_key
people      may · followable · resumable · display · upload_limits
routines    routines · routine · routine_firings
```

Nothing here changes anything or tells anyone anything: a platform asks before it opens a form or a
thread, so nobody types into a form, or watches a thread open, for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.access import Access, Decision
from adapters.hub.admission import Admission
from adapters.hub.cards import CardProblem, CardRules, OpenCard
from adapters.hub.checkpoints import Checkpoint, Checkpoints
from adapters.hub.intake import FileIntake
from adapters.hub.intents import Permission
from adapters.hub.mirrors import Mirrors
from adapters.hub.registry import RunRegistry
from adapters.hub.report import status_report
from adapters.hub.results import IntentResult
from adapters.hub.rounds import Rounds
from adapters.hub.routines import RoutineInfo, describe, iso
from adapters.hub.scheduler import Scheduler
from adapters.hub.settings import HubSettings, UploadLimits
from adapters.hub.steering import Chosen, chosen
from adapters.hub.undo import checkpoint_list
from adapters.people import People
from adapters.platform import ThreadRef
from adapters.state import Routine, RunRecord, StateStore

if TYPE_CHECKING:
    from adapters.hub.runs import LiveRun

__all__ = ["HubQuery"]


class HubQuery:
    def __init__(self, registry: RunRegistry, cards: CardRules, mirrors: Mirrors, access: Access, people: People,
                 intake: FileIntake, admission: Admission, rounds: Rounds, settings: HubSettings,
                 scheduler: Scheduler) -> None:
        self.registry, self.cards, self.mirrors, self.access = registry, cards, mirrors, access
        self.people, self.intake, self.admission, self.rounds = people, intake, admission, rounds
        self.settings, self.scheduler = settings, scheduler

    # ---- routines --------------------------------------------------------------------------------
    def routines(self, *, platform: str | None = None, channel: str | None = None) -> list[RoutineInfo]:
        """Routines by place, oldest first (with their last occurrence)."""
        return [self._routine(r, 1) for r in self.store.list_routines()
                if platform in (None, r.place.platform) and channel in (None, r.place.channel)]

    def routine(self, routine_id: str, *, last: int = 10) -> RoutineInfo | None:
        """One routine with its `last` occurrences (None: no such routine)."""
        found = self.store.get_routine(routine_id)
        return None if found is None else self._routine(found, last)

    def routine_firings(self) -> dict[str, int]:
        """Occurrences settled since this process started, by outcome (started, skipped, caught_up, failed)."""
        return dict(self.scheduler.firings)

    def _routine(self, r: Routine, last: int) -> RoutineInfo:
        return RoutineInfo(r, None if r.paused else iso(r, r.next_at), describe(r),
                           tuple(self.store.occurrences_of(r.routine_id, last)))

    @property
    def store(self) -> StateStore:
        return self.registry.store

    # ---- runs ------------------------------------------------------------------------------------
    def run(self, run_id: str) -> RunRecord | None:
        """A run's record (None: no such run)."""
        return self.registry.record(run_id)

    def model(self, run_id: str) -> Chosen | None:
        """The run's model and effort as chosen, or the bot's defaults ("": the CLI's); None: no such run."""
        record = self.registry.record(run_id)
        return chosen(record, self.settings) if record is not None else None

    def run_meant(self, user: str, *, platform: str, channel: str, run_id: str = "") -> RunRecord | str:
        """The run a command typed outside a thread means (`/flower model opus [run id]`): the one named, else
        the person's one live run in the channel; else what to say (no such run, none, or which of several)."""
        if run_id:
            record = self.registry.record(run_id)
            return record if record is not None else f"No run {run_id}."
        mine = self.registry.runs(user=user, platform=platform, channel=channel, live_only=True)
        if len(mine) == 1:
            return mine[0]
        if not mine:
            return "You have no live run in this channel; name the run (its id is on its status card)."
        return f"You have {len(mine)} live runs here ({', '.join(r.run_id for r in mine)}); name one of them."

    def checkpoints(self, run_id: str) -> list[tuple[Checkpoint, list[str]]] | None:
        """The run's checkpoints, newest first, each with the files Undo to it would put back (None: no such
        run). Reads the workspace: call it off the loop for a big one."""
        record = self.registry.record(run_id)
        return checkpoint_list(Checkpoints(record.run_dir, record.workspace)) if record is not None else None

    def is_live(self, run_id: str) -> bool:
        """Running (or parked) in this process's care, as opposed to ended or asleep."""
        return self.registry.is_live(run_id)

    def runs(self, *, user: str | None = None, platform: str | None = None, channel: str | None = None,
             live_only: bool = True) -> list[RunRecord]:
        """Runs by owner and place, newest first; `live_only`: only those running in this process."""
        return self.registry.runs(user=user, platform=platform, channel=channel, live_only=live_only)

    def run_in(self, thread: ThreadRef) -> str | None:
        """The run a thread shows: its own, or the one it follows (a live one first)."""
        return self.registry.run_in(thread)

    def holder(self, run_id: str) -> str:
        """The worker a live run is on ("" in this process, or not live)."""
        return self.registry.holder(run_id)

    def state(self, run_id: str) -> str:
        """What a run is doing now as its status card says (running, waiting, parked…), else its stored status."""
        live = self.registry.live.get(run_id)
        if live is not None:
            return live.view.status_card.state
        record = self.store.get_run(run_id)
        return record.status if record is not None else "unknown"

    def thread_by_id(self, platform: str, thread_id: str) -> ThreadRef | None:
        """The full reference of a thread a platform knows only by its own id: a run's home thread, or a
        thread (or direct message) showing a live run."""
        own = (r.thread for r in self.registry.runs(platform=platform, live_only=False) if r.thread.thread == thread_id)
        shown = (m.thread for rid in list(self.registry.live) for m in self.store.mirrors_of(rid)
                 if m.thread.platform == platform and m.thread.thread == thread_id)
        return next(own, None) or next(shown, None)

    def followers(self, run_id: str) -> list[ThreadRef]:
        """The threads that follow a run, on the platforms this hub serves."""
        return self.mirrors.threads_of(run_id)

    def status(self, *, thread: ThreadRef | None = None, run_id: str | None = None) -> IntentResult:
        """One run's state (by id, or the run a thread shows), or every live run, parked ones apart."""
        if run_id is None and thread is not None:
            run_id = self.run_in(thread)
        return status_report(self.registry.live, self.store, run_id, running=self.registry.running(),
                             parked=self.registry.parked(),
                             max_runs=None if self.admission.remote else self.admission.max_runs,
                             max_parked=self.admission.max_parked)

    async def wait(self, run_id: str) -> LiveRun | None:
        """Wait until a live run has ended and its thread is flushed; the LiveRun (None if not live)."""
        live = self.registry.live.get(run_id)
        if live is not None:
            await live.finished.wait()
        return live

    # ---- cards -----------------------------------------------------------------------------------
    def open_cards(self, run_id: str) -> list[OpenCard]:
        return self.cards.open_cards(run_id)

    def card_state(self, run_id: str, card_id: str) -> tuple[CardProblem, str]:
        """Whether a card takes an answer now: (CardProblem.NONE, "") or the problem and what to say."""
        check = self.cards.check(run_id, card_id)
        return check.problem, check.message

    def card_by_key(self, run_id: str, key: str) -> str | None:
        return self.cards.by_key(run_id, key)

    # ---- people ----------------------------------------------------------------------------------
    def may(self, user: str, verb: Permission, *, run_id: str = "", channel: str = "") -> Decision:
        """Whether `user` may start runs in `channel` ("platform:channel"), or answer / send to / stop a run:
        the rule the door applies to every intent (intents.PERMISSIONS)."""
        if verb == "start":
            return self.access.can_start(channel, user)
        record = self.store.get_run(run_id)
        if record is None:
            return Decision(False, f"No run {run_id}.")
        return self.access.decide(verb, record, user)

    def followable(self, run_id: str, user: str) -> IntentResult:
        """Whether `user` may follow the run now (mirrors.py); platforms ask before they open a thread for it."""
        return self.mirrors.followable(run_id, user)

    def resumable(self, run_id: str, user: str) -> IntentResult:
        """Whether `user` may resume the run now (rounds.py); platforms ask before they open a thread for it."""
        return self.rounds.resumable(run_id, user)

    def display(self, user: str) -> str:
        """How cards name a person."""
        return self.people.display(user)

    def upload_limits(self, run_id: str, where: ThreadRef | None = None) -> UploadLimits:
        """How much may be attached to the run from `where`: a platform stops downloading past it."""
        record = self.registry.record(run_id)
        return self.intake.limits_for(record, where) if record is not None else self.intake.limits
