"""Scheduler: the clock loop that fires routines, each occurrence exactly once, whatever crashes around it.

```
loop (Hub.open starts it once Hub.recover is done; Hub.close stops it)
  1. pending occurrences     recorded earlier, not yet settled: carry each on (below)
  2. routines that are due   record the occurrence and the routine's next firing in ONE transaction
                             (unique per routine and due time, with the run id its run will have),
                             then carry it on
  3. sleep                   until the next due time, a poke (a routine changed), or POLL_S
carry on an occurrence
  a. its run's record exists          it started before a crash: settled "started", nothing more
  b. the routine's last run is live   overlap "skip": settled "skipped", that run's thread says so;
                                      "queue": stays pending until that run ends
  c. the bot is at max_runs           stays pending; it starts as soon as there is room, and says so
     its owner may no longer start    settled "failed" (who may is checked at every firing, not only when
     runs in its channel              the routine was made)
  d. open its thread                  the platform's opener (hub.hooks.open_threads) posts the root; the
                                      thread is recorded, so a restart reuses it
  e. start the run                    StartHandler.start with the recorded run id → "started" (or "failed")
```

Exactly once: an occurrence is durable before its run can start (2), and the run's record (saved by the
start before anything runs, in the same store) is what says it started (a). A process killed anywhere in
between leaves a pending occurrence whose run does not exist yet: the next process starts it, once. Killed
after the run's record was saved, the next process finds the record, brings the run back as any live run
(Hub.recover) and settles the occurrence without a second start.

Downtime: a routine whose next firing passed more than `grace_s` ago when the loop looks (the bot was
down) fires once, as "catch_up", for all it missed, or not at all with `catch_up = false`; either way its
next firing is the first one after now. Within `grace_s` it is simply on time.

At most one occurrence of a routine waits at a time: another one due meanwhile is recorded "skipped".
Every settled occurrence is one log line with the routine and run ids, and one count in `firings`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from adapters.access import Decision
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult
from adapters.hub.schedule import Schedule, ScheduleError
from adapters.platform import OutMessage, ThreadRef
from adapters.state import Occurrence, Routine, StateStore
from adapters.view import fmt as _fmt
from adapters.view.status import STATUS_KEY

__all__ = ["OUTCOMES", "Opener", "Scheduler", "StartRoutine"]

log = logging.getLogger(__name__)

OUTCOMES = ("started", "skipped", "caught_up", "failed")
# A platform's way to open a thread for a routine's run in a channel: post `card` as the thread's root
# (remembering it as the status card, hub.hooks.remember_message) and return the thread.
Opener = Callable[[str, OutMessage], Awaitable[ThreadRef]]
# Start a routine's run in a thread as its owner: (routine, occurrence, thread, origin) → the start's result.
StartRoutine = Callable[[Routine, Occurrence, ThreadRef, str], Awaitable[IntentResult]]


class Scheduler:
    POLL_S = 30.0
    WAIT_POLL_S = 1.0  # while an occurrence waits (overlap "queue", no room)

    def __init__(self, store: StateStore, registry: RunRegistry, openers: dict[str, Opener], start: StartRoutine,
                 *, room: Callable[[], str | None], may_start: Callable[[str, str], Decision],
                 new_run_id: Callable[[], str], clock: Callable[[], float] = time.time, grace_s: float = 60.0) -> None:
        self.store, self.registry, self.openers, self._start = store, registry, openers, start
        self.room, self.may_start, self.new_run_id = room, may_start, new_run_id
        self.clock, self.grace_s = clock, grace_s
        self.firings: Counter[str] = Counter({o: 0 for o in OUTCOMES})
        self.lock = asyncio.Lock()
        self._poke = asyncio.Event()
        self._waiting: set[tuple[str, float]] = set()  # occurrences already said to be waiting
        # routine -> (the live run its skips were told to, how many): one line in that thread, edited in place
        self._skips: dict[str, tuple[str, int]] = {}
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # set by Hub.recover: nothing fires before the old runs are back
        # A test seam for crash tests of a real process: seconds to stand still at a moment of a firing
        # ("recorded", "opened", "started"), so a SIGKILL lands exactly there (bots: FLOWER_ROUTINE_HOLD).
        self.hold: dict[str, float] = {}

    # ---- the loop ---------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="routines")

    async def stop(self, deadline_s: float = 5.0) -> None:
        """Stop the loop; a firing in progress gets `deadline_s` to finish (what it left pending, the next
        process carries on)."""
        task, self._task = self._task, None
        if task is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(deadline_s):
                async with self.lock:
                    task.cancel()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    def poke(self) -> None:
        """A routine changed: look again now."""
        self._poke.set()

    async def _loop(self) -> None:
        await self.ready.wait()
        while True:
            try:
                await self.tick()
            except Exception:  # one bad routine must not stop the others; said, then tried again
                log.exception("routines: a tick failed")
            self._poke.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), self.delay())

    def delay(self) -> float:
        now = self.clock()
        wait = self.POLL_S
        if self.store.pending_occurrences():
            wait = self.WAIT_POLL_S
        for r in self.store.list_routines():
            if not r.paused and r.next_at is not None:
                wait = min(wait, r.next_at - now)
        return max(wait, 0.05)

    async def tick(self) -> None:
        """One look: carry on what is pending, fire what is due."""
        async with self.lock:
            for occurrence in self.store.pending_occurrences():
                await self._carry(occurrence)
            now = self.clock()
            for routine in self.store.list_routines():
                if not routine.paused and routine.next_at is not None and routine.next_at <= now:
                    await self._due(routine, now)

    # ---- firing ----------------------------------------------------------------------------------------
    async def run_now(self, routine: Routine) -> IntentResult:
        """Run now: one more occurrence at this moment; the routine's schedule stays as it was."""
        async with self.lock:
            occurrence = Occurrence(routine.routine_id, self.clock(), self.new_run_id(), "manual")
            if self._waiting_of(routine.routine_id):
                return IntentResult(False, f"An occurrence of routine {routine.routine_id} is already waiting.",
                                    routine_id=routine.routine_id)
            self.store.record_occurrence(occurrence, routine.next_at)
            settled = await self._carry(occurrence)
        if settled == "pending":
            return IntentResult(True, f"Run {occurrence.run_id} of routine {routine.routine_id} waits (the previous "
                                "run is still going, or the bot is full).", occurrence.run_id,
                                routine_id=routine.routine_id)
        ok = settled in ("started", "caught_up")
        note = next((o.note for o in self.store.occurrences_of(routine.routine_id, 5) if o.due == occurrence.due), "")
        return IntentResult(ok, f"Started run {occurrence.run_id} of routine {routine.routine_id}." if ok else
                            f"Routine {routine.routine_id} did not start: {note or settled}.",
                            occurrence.run_id, routine_id=routine.routine_id)

    async def _due(self, routine: Routine, now: float) -> None:
        assert routine.next_at is not None
        try:
            following = Schedule(routine.schedule, routine.timezone).next_after(now)
        except ScheduleError as exc:  # its zone vanished from the system's database
            log.error("routine %s: cannot compute its next firing (%s); paused", routine.routine_id, exc)
            self.store.save_routine(dataclasses.replace(routine, paused=True))
            return
        late = routine.next_at < now - self.grace_s
        if late and not routine.catch_up:
            self.store.save_routine(dataclasses.replace(routine, next_at=following))
            self._settled(routine, None, "skipped", "missed while the bot was down (catch_up = false)")
            return
        occurrence = Occurrence(routine.routine_id, routine.next_at, self.new_run_id(), "catch_up" if late else "due")
        if self._waiting_of(routine.routine_id):
            occurrence = dataclasses.replace(occurrence, state="skipped", note="an earlier occurrence is still waiting")
            if self.store.record_occurrence(occurrence, following):
                self._settled(routine, occurrence, "skipped", occurrence.note)
            return
        if not self.store.record_occurrence(occurrence, following):  # recorded before: only move on
            self.store.save_routine(dataclasses.replace(routine, next_at=following))
            return
        await self._carry(occurrence)

    def _waiting_of(self, routine_id: str) -> bool:
        return any(o.routine_id == routine_id for o in self.store.pending_occurrences())

    async def _carry(self, occurrence: Occurrence) -> str:
        """Carry a recorded occurrence on as far as it can go now; returns its state (or outcome)."""
        o = occurrence
        key = (o.routine_id, o.due)
        await self._hold("recorded", o)
        routine = self.store.get_routine(o.routine_id)
        if routine is None:
            self.store.update_occurrence(o.routine_id, o.due, state="skipped", note="the routine was deleted")
            return "skipped"
        if self.store.get_run(o.run_id) is not None:  # its run started before the process went away
            return self._started(routine, o, again=True)
        if routine.paused and o.kind != "manual":  # paused while it waited: a pause means no more runs
            self._waiting.discard(key)
            self.store.update_occurrence(o.routine_id, o.due, state="skipped", note="the routine was paused")
            return self._settled(routine, o, "skipped", "the routine was paused")
        previous = self.last_run(routine.routine_id, but=o.run_id)
        if previous and self.registry.is_live(previous):
            if routine.overlap == "queue":
                if key not in self._waiting:
                    self._waiting.add(key)
                    log.info("routine %s: occurrence %s waits for run %s to end (overlap = queue)",
                             routine.routine_id, self._when(routine, o.due), previous)
                return "pending"
            note = f"run {previous} is still going"
            self.store.update_occurrence(o.routine_id, o.due, state="skipped", note=note)
            self._tell_skip(routine, previous, self._when(routine, o.due))
            return self._settled(routine, o, "skipped", note)
        full = self.room()
        if full is not None:
            if key not in self._waiting:
                self._waiting.add(key)
                log.info("routine %s: occurrence %s waits for room: %s", routine.routine_id,
                         self._when(routine, o.due), full)
            return "pending"
        late_for_room = key in self._waiting
        self._waiting.discard(key)
        place = routine.place
        if not (allowed := self.may_start(f"{place.platform}:{place.channel}", routine.owner)):
            return self._failed(routine, o, f"its owner may no longer start runs there ({allowed.reason})")
        origin = f"⏰ {routine.name}, {self._when(routine, o.due)}"
        thread = o.thread
        if thread is None:
            opener = self.openers.get(routine.place.platform)
            if opener is None:
                return self._failed(routine, o, f"no front end for {routine.place.platform!r} is running")
            card = OutMessage(STATUS_KEY, "status", f"Task: {_fmt.one_line(routine.task, 200)}",
                              title=f"{origin} · starting")
            try:
                thread = await opener(routine.place.channel, card)
            except Exception as exc:  # the platform refused (not in the channel, an outage)
                return self._failed(routine, o, f"could not open a thread in {routine.place}: {exc}")
            self.store.update_occurrence(o.routine_id, o.due, thread=thread)
            await self._hold("opened", o)
        result = await self._start(routine, o, thread, origin)
        if not result.ok:
            return self._failed(routine, o, result.message)
        await self._hold("started", o)
        if late_for_room:
            self._tell(o.run_id, "⏳ This routine's run waited for room (the bot was at max_runs) and started now.")
        return self._started(routine, o)

    async def _hold(self, moment: str, o: Occurrence) -> None:
        wait = self.hold.get(moment)
        if wait:
            log.warning("routine %s: holding %gs at %r (run %s): FLOWER_ROUTINE_HOLD is a test seam", o.routine_id,
                        wait, moment, o.run_id)
            await asyncio.sleep(wait)

    def last_run(self, routine_id: str, *, but: str = "") -> str:
        """The run id of the routine's latest started occurrence ("" when none): however many were skipped
        since (a long run, an hourly routine), that is the one that may still be going."""
        return next((o.run_id for o in self.store.occurrences_of(routine_id, 2, state="started") if o.run_id != but),
                    "")

    # ---- settling and saying ---------------------------------------------------------------------------
    def _started(self, routine: Routine, o: Occurrence, *, again: bool = False) -> str:
        self.store.update_occurrence(o.routine_id, o.due, state="started")
        outcome = "caught_up" if o.kind == "catch_up" else "started"
        return self._settled(routine, o, outcome, "its run had started before the restart" if again else "")

    def _failed(self, routine: Routine, o: Occurrence, why: str) -> str:
        self.store.update_occurrence(o.routine_id, o.due, state="failed", note=why)
        return self._settled(routine, o, "failed", why)

    def _settled(self, routine: Routine, o: Occurrence | None, outcome: str, note: str) -> str:
        self.firings[outcome] += 1
        due = self._when(routine, o.due) if o is not None else "-"
        log.info("routine %s fired: outcome=%s run_id=%s due=%s kind=%s%s", routine.routine_id, outcome,
                 o.run_id if o is not None and outcome in ("started", "caught_up") else "-", due,
                 o.kind if o is not None else "missed", f" ({note})" if note else "")
        return outcome

    def _tell(self, run_id: str, text: str, *, key: str = "") -> None:
        live = self.registry.live.get(run_id)
        if live is not None:
            live.pipe.put(live.view.notice(text, key=key))

    def _tell_skip(self, routine: Routine, run_id: str, when: str) -> None:
        """The first skip while a run goes on is said as it is; later ones edit that line with their count, so an
        hourly routine beside a day-long run leaves one line, not twenty-four."""
        told, count = self._skips.get(routine.routine_id, ("", 0))
        count = count + 1 if told == run_id else 1
        self._skips[routine.routine_id] = (run_id, count)
        text = (f"⏰ {routine.name}, {when}: skipped, this run is still going (overlap = skip)." if count == 1 else
                f"⏰ {routine.name}: skipped {count} times while this run goes on, the last at {when} "
                "(overlap = skip).")
        self._tell(run_id, text, key=f"routine-skip-{routine.routine_id}")

    @staticmethod
    def _when(routine: Routine, t: float) -> str:
        try:
            return Schedule(routine.schedule, routine.timezone).local(t).strftime("%H:%M")
        except ScheduleError:
            return time.strftime("%H:%M", time.gmtime(t))
