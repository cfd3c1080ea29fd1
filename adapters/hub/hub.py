"""Hub: the chat-agnostic owner of runs, and the top of the hub package: it wires the collaborators
and gives platforms three names (PLATFORM_FACADE), nothing else:

```
hub.submit(intent, actor, delivery_id=, where=) -> IntentResult    everything a person does (door.py)
hub.query                                                         read-only questions (query.py)
hub.hooks                                                         what a platform tells the hub (hooks.py)
```

`tests/platforms/test_facade.py` fails when a platform package touches any other hub member. The
bot itself also opens, recovers and closes the hub; tests and benchmarks may look inside.

Inside, each job has a collaborator handed only what it needs (wired here, none of them sees the Hub):

    Door        the one pipeline: click ids, duplicate deliveries, routing, who may, the handler
    StartHandler / CardHandler / RunHandler    what each intent does (handlers.py)
    RunRegistry     the live runs and the store's records (look-ups)
    Admission   limits (max_runs, max_parked), busy workspaces, where a run lives
    CardRules    which card a person means, whether it still takes an answer, its message ids
    Outboxes    one rate-limited outbox per thread
    Mirrors     followed threads, auto mirrors, the owner's DM (Follow, Unfollow)
    Launcher    a run's view, threads and chat side, started through the transport
    Restarts    runs coming back after a restart, waking, answers to sleeping runs
    Rounds      a run that has ended goes on: its next round (Continue, Resume)
    FileIntake  files people attach, saved in the run's inbox/ before its mail says so (Attach)
    Scheduler   the clock loop that fires routines, each occurrence exactly once (scheduler.py); started
                by `open`, firing once `recover` is done, stopped by `close`
    RoutineHandler  AddRoutine, RoutineAction and the configuration's routines (routines.py)

Runs go through a transport (adapters/transport): in this process by default, to `flower-worker`s
over Redis; either way each input is logged durably before anyone is told "ok".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import overload

from adapters.access import Access
from adapters.hub.admission import Admission
from adapters.hub.cards import CardRules
from adapters.hub.door import Door, Handlers, attached
from adapters.hub.files import Attached
from adapters.hub.handlers import CardHandler, RunHandler, StartHandler, new_run_id
from adapters.hub.hooks import HubHooks
from adapters.hub.intake import FileIntake
from adapters.hub.intents import Attach, Intent, Start
from adapters.hub.launcher import Launcher, Tap
from adapters.hub.mirrors import Mirrors
from adapters.hub.options import RunOptions
from adapters.hub.outboxes import Outboxes
from adapters.hub.platforms import Platforms
from adapters.hub.query import HubQuery
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult
from adapters.hub.rounds import Rounds
from adapters.hub.routines import RoutineHandler
from adapters.hub.runs import LiveRun
from adapters.hub.scheduler import Opener, Scheduler
from adapters.hub.settings import HubSettings
from adapters.hub.steering import SteerHandler
from adapters.hub.undo import UndoHandler
from adapters.hub.wake import Restarts
from adapters.people import People
from adapters.platform import Surface, ThreadRef
from adapters.state import Occurrence, Routine, StateStore
from adapters.transport import LocalTransport, Transport
from adapters.transport.engine import EngineKit
from adapters.transport.intents import StoreIntentLog
from adapters.view import fmt as _fmt
from flower_core import WarmPool

log = logging.getLogger(__name__)

# What a platform package may use of a Hub. tests/platforms/test_facade.py fails when a platform
# touches anything else.
PLATFORM_FACADE = frozenset({"submit", "query", "hooks"})


class Hub:
    def __init__(self, surfaces: Surface | Iterable[Surface] | Mapping[str, Surface], store: StateStore,
                 settings: HubSettings | None = None, *, kit: EngineKit | None = None,
                 transport: Transport | None = None, clock: Callable[[], float] = time.monotonic,
                 sleeper: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 wall_clock: Callable[[], float] = time.time) -> None:
        """`kit` builds runs in this process (the workflow factory, the model's environment); `transport`
        hands them elsewhere instead (RedisTransport). `wall_clock`: what routines fire by (epoch seconds)."""
        s = self.settings = settings or HubSettings()
        self.store, self.platforms, self.people = store, Platforms(surfaces), People()
        self.access = Access(store, self.people)
        refuse = self.platforms.refuse
        # Cards name people through the registry platforms fill (display names), unless told otherwise.
        self.view_config = replace(s.view, who=self.people.display) if s.view.who is _fmt.plain_who else s.view
        who = self.view_config.who
        self.registry = RunRegistry(store)
        # In process, inputs are logged in the state store (so they outlive the process) and a question a
        # dead process left open in its session is picked up again (adopt).
        self.admission = Admission(self.registry, s, remote=transport is not None and transport.remote)
        local = replace(kit or EngineKit(), park_after_s=s.park_after_s, may_park=self.admission.may_park,
                        oracle=s.oracle, adopt=True, warm=WarmPool(max(0, min(s.warm_pool, s.max_runs))))
        self.transport: Transport = transport or LocalTransport(local, StoreIntentLog(store))
        self.admission.remote = self.transport.remote
        self.cards = CardRules(self.registry, store, who=who)
        self.outboxes = Outboxes(self.platforms, store, clock=clock, sleeper=sleeper)
        self.mirrors = Mirrors(self.registry, store, self.platforms, self.access, self.outboxes, self.cards,
                               refuse=refuse, who=who, dm_after_s=s.dm_after_s)
        self.launcher = Launcher(self.registry, store, self.transport, self.outboxes, self.cards, self.mirrors, s,
                                 self.view_config, clock=clock)
        self.restarts = Restarts(self.registry, self.launcher, self.admission, self.mirrors, self.outboxes,
                                 self.transport, self.view_config, wake_on_start=s.wake_on_start,
                                 refuse=refuse, clock=clock)
        self.rounds = Rounds(self.registry, store, self.launcher, self.admission, self.view_config, self.access,
                             refuse=refuse)
        self.intake = FileIntake(s.uploads, s.channel_uploads, refuse=refuse, who=who)
        self.clock = clock
        starts = StartHandler(s, store, self.registry, self.admission, self.launcher, self.transport, refuse)

        async def start_routine(routine: Routine, occurrence: Occurrence, thread: ThreadRef,
                                origin: str) -> IntentResult:
            options = RunOptions.of_json(routine.options)
            return await starts.start(Start(routine.task, options), thread, routine.owner, run_id=occurrence.run_id,
                                      origin=origin)

        self.openers: dict[str, Opener] = {}
        self.scheduler = Scheduler(store, self.registry, self.openers, start_routine,
                                   room=self.admission.over_limit, may_start=self.access.can_start,
                                   new_run_id=new_run_id, clock=wall_clock)
        self.routines = RoutineHandler(store, self.scheduler, default_zone=s.timezone, clock=wall_clock)
        self.door = Door(store, self.registry, self.cards, self.access, self.platforms, Handlers(
            starts=starts,
            cards=CardHandler(self.registry, self.cards, self.platforms, self.mirrors, self.restarts, refuse),
            runs=RunHandler(self.registry, store, self.restarts, self.access, self.outboxes, refuse),
            mirrors=self.mirrors, rounds=self.rounds, intake=self.intake,
            steers=SteerHandler(s, self.registry, refuse),
            undos=UndoHandler(self.registry, self.admission, self.outboxes, refuse),
            routines=self.routines))
        self._query = HubQuery(self.registry, self.cards, self.mirrors, self.access, self.people, self.intake,
                              self.admission, self.rounds, s, self.scheduler)
        self._hooks = HubHooks(store, self.people, self.launcher.taps, self.mirrors, self.openers)

    @property
    def query(self) -> HubQuery:
        """Read-only questions a platform may ask (query.py)."""
        return self._query

    @property
    def hooks(self) -> HubHooks:
        """What a platform tells the hub that is not a person's intent (hooks.py)."""
        return self._hooks

    # ---- the door ---------------------------------------------------------------------------------
    @overload
    async def submit(self, intent: Attach, actor: str, *, delivery_id: str | None = None,
                     where: ThreadRef | None = None) -> Attached: ...

    @overload
    async def submit(self, intent: Intent, actor: str, *, delivery_id: str | None = None,
                     where: ThreadRef | None = None) -> IntentResult: ...

    async def submit(self, intent: Intent, actor: str, *, delivery_id: str | None = None,
                     where: ThreadRef | None = None) -> IntentResult:
        """Everything a person does (see door.py): `actor` is who did it, `delivery_id` the platform's id of
        this delivery (a retried one is answered "Already handled." and changes nothing), `where` the
        thread it came from (required by Start, Said, Follow, Resume, Unfollow)."""
        result = await self.door.submit(intent, actor, delivery_id=delivery_id, where=where)
        return attached(result) if isinstance(intent, Attach) else result

    # ---- lifecycle -------------------------------------------------------------------------------
    async def close(self, *, deadline_s: float = 30.0) -> None:
        """The bot is going away: live runs stop quietly, their cards stay open and their status
        stays live in the store, so the next process brings them back exactly as after a crash.
        A run whose thread does not flush within `deadline_s` is left as it is (named in the log): the
        store already says it was live, so the next process brings it back all the same."""
        await self.scheduler.stop(min(5.0, deadline_s))
        self.mirrors.close()
        runs = list(self.registry.live.values())
        for live in runs:
            live.cancel("shutdown")
        waits = [asyncio.ensure_future(live.finished.wait()) for live in runs]
        if waits:
            _done, late = await asyncio.wait(waits, timeout=deadline_s)
            for task in late:
                task.cancel()
            stuck = [live.run_id for live in runs if not live.finished.is_set()]
            if stuck:
                log.warning("closing: runs %s did not flush within %gs; left for the next process", stuck, deadline_s)
        await self.transport.close()

    async def open(self) -> None:
        """Connect the transport (a no-op in process) and start the routines' clock; before `recover`."""
        await self.transport.start()
        self.scheduler.start()

    async def recover(self) -> list[str]:
        """After a restart: bring back the runs the old process left (see wake.py); returns the ids of
        those that could not come back (their threads were told, with a Wake button). Routines fire from
        then on (an occurrence whose run is among those brought back is not started again)."""
        try:
            return await self.restarts.recover()
        finally:
            self.scheduler.ready.set()

    # ---- for tests, benchmarks and the bot's own books ------------------------------------------------
    @property
    def live(self) -> dict[str, LiveRun]:
        return self.registry.live

    @property
    def surfaces(self) -> dict[str, Surface]:
        return self.platforms.surfaces

    @property
    def taps(self) -> list[Tap]:
        return self.launcher.taps

    @property
    def max_runs(self) -> int:
        return self.admission.max_runs

    @max_runs.setter
    def max_runs(self, value: int) -> None:
        self.admission.max_runs = value

    def running(self) -> list[str]:
        return self.registry.running()

    def parked(self) -> list[str]:
        return self.registry.parked()

    def pending_inputs(self) -> int:
        """Inputs accepted and not yet carried out (the durable intent log)."""
        return self.store.count_unsettled_intents()
