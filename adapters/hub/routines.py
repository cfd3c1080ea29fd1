"""RoutineHandler: what AddRoutine and RoutineAction do once the door has let them through, and the
routines a deployment declares in its configuration.

```
AddRoutine      read the schedule in its zone (the one asked for, else the person's, else the bot's, else UTC);
                bad input is refused with what is accepted and nothing is saved; else saved with its next
                firing, and the scheduler looks again
RoutineAction   pause · resume (its next firing from now: what it missed while paused is not caught up) ·
                run (one occurrence now, scheduler.py) · delete (its waiting occurrence, if any, is skipped)
declare         [[routines]] of the TOML file: each kept under a stable id ("cfg-<name>"), updated in place,
                and those no longer in the file deleted
```
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from adapters.hub.intents import AddRoutine, RoutineAction
from adapters.hub.options import RunOptions
from adapters.hub.results import IntentResult
from adapters.hub.schedule import Schedule, ScheduleError, parse_schedule
from adapters.hub.scheduler import Scheduler
from adapters.platform import ThreadRef
from adapters.state import Occurrence, Routine, StateStore
from adapters.view import fmt as _fmt

__all__ = ["OVERLAPS", "RoutineHandler", "RoutineInfo", "describe", "iso", "routine_of"]

OVERLAPS = ("skip", "queue")


@dataclass(frozen=True)
class RoutineInfo:
    """A routine as `hub.query.routines` shows it: `next` its next firing (ISO 8601 with offset, None: none
    left or paused), `last` its latest occurrences (newest first), `said` its schedule as said, with its zone."""

    routine: Routine
    next: str | None
    said: str
    last: tuple[Occurrence, ...] = ()

    @property
    def state(self) -> str:
        """Where it stands, in the words every list shows: "paused", "next <when>" or "nothing left to fire"."""
        return "paused" if self.routine.paused else f"next {self.next}" if self.next else "nothing left to fire"

    @property
    def last_run(self) -> str:
        """The latest occurrence as a list's line ends with (markdown code for its run id), "" when none yet."""
        return f" · last run `{self.last[0].run_id}` ({self.last[0].state})" if self.last else ""


def iso(routine: Routine, t: float | None) -> str | None:
    """A firing time as ISO 8601 with its offset, in the routine's zone (None: no firing left)."""
    if t is None:
        return None
    return Schedule(routine.schedule, routine.timezone).local(t).isoformat(timespec="seconds")


def routine_of(add: AddRoutine, place: ThreadRef, owner: str, *, default_zone: str, now: float,
               routine_id: str = "", source: str = "", keep: Routine | None = None) -> Routine:
    """A routine from what was asked, or ValueError (ScheduleError among them) saying what is accepted.
    `keep`: a routine whose schedule and next firing stay as they are (a configuration's unchanged one, whose
    one-off may be past by now)."""
    task = add.task.strip()
    if not task:
        raise ValueError("Say what the routine should do: a task is required.")
    if add.overlap not in OVERLAPS:
        raise ValueError(f"overlap must be \"skip\" or \"queue\", not {add.overlap!r}.")
    options = add.options or RunOptions()
    if (bad := options.problem()) is not None:
        raise ValueError(bad)
    if keep is not None:
        spec, zone, first, said = keep.schedule, keep.timezone, keep.next_at, keep.said
    else:
        schedule = parse_schedule(add.schedule, add.timezone.strip() or add.zone_hint or default_zone or "UTC", now)
        first = schedule.next_after(now)
        if first is None:
            raise ScheduleError("that schedule never fires again")
        spec, zone, said = schedule.spec, schedule.zone, " ".join(add.schedule.split())
    return Routine(routine_id or "rt" + uuid.uuid4().hex[:6], add.name.strip() or _fmt.one_line(task, 40), task,
                   spec, zone, ThreadRef(place.platform, place.channel), owner, options=options.to_json(),
                   overlap=add.overlap, catch_up=add.catch_up, next_at=first, source=source, said=said)


class RoutineHandler:
    def __init__(self, store: StateStore, scheduler: Scheduler, *, default_zone: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.scheduler, self.default_zone, self.clock = store, scheduler, default_zone, clock

    async def add(self, add: AddRoutine, place: ThreadRef, owner: str) -> IntentResult:
        try:
            routine = routine_of(add, place, owner, default_zone=self.default_zone, now=self.clock())
        except ValueError as exc:
            return IntentResult(False, str(exc))
        self.store.save_routine(routine)
        self.scheduler.poke()
        return IntentResult(True, f"Routine {routine.routine_id} \"{routine.name}\" saved: {describe(routine)}; "
                            f"next {iso(routine, routine.next_at)}.", routine_id=routine.routine_id)

    async def act(self, action: RoutineAction, routine: Routine, actor: str) -> IntentResult:
        rid = routine.routine_id
        match action.verb:
            case "pause":
                async with self.scheduler.lock:
                    self.store.save_routine(dataclasses.replace(routine, paused=True))
                return IntentResult(True, f"Routine {rid} paused.", routine_id=rid)
            case "resume":
                async with self.scheduler.lock:
                    now = self.clock()
                    current = self.store.get_routine(rid) or routine
                    following = current.next_at
                    if following is None or following <= now:
                        following = Schedule(current.schedule, current.timezone).next_after(now)
                    self.store.save_routine(dataclasses.replace(current, paused=False, next_at=following))
                self.scheduler.poke()
                return IntentResult(True, f"Routine {rid} resumed; next {iso(routine, following) or 'never'}.",
                                    routine_id=rid)
            case "run":
                return await self.scheduler.run_now(routine)
            case "delete":
                async with self.scheduler.lock:
                    self.store.delete_routine(rid)
                self.scheduler.poke()
                return IntentResult(True, f"Routine {rid} deleted.", routine_id=rid)
        raise ValueError(f"unknown routine verb {action.verb!r}")

    def declare(self, declared: Iterable[tuple[AddRoutine, ThreadRef, str]]) -> list[str]:
        """The configuration's routines, as code: each under "cfg-<name>", its next firing kept while its
        schedule is unchanged; a routine of the file no longer in it is deleted. All are checked before any is
        saved: ValueError names the bad one, and nothing changes."""
        now, routines = self.clock(), []
        for add, place, owner in declared:
            rid = "cfg-" + re.sub(r"[^a-z0-9]+", "-", (add.name or add.task).lower()).strip("-")[:40]
            old = self.store.get_routine(rid)
            said, tz = " ".join(add.schedule.split()), add.timezone.strip() or self.default_zone or "UTC"
            unchanged = old is not None and (old.said, old.timezone) == (said, tz)
            try:
                routine = routine_of(add, place, owner, default_zone=self.default_zone, now=now, routine_id=rid,
                                     source="config", keep=old if unchanged else None)
            except ValueError as exc:
                raise ValueError(f"routine {add.name or add.task!r}: {exc}") from None
            if old is not None:
                routine = dataclasses.replace(routine, paused=old.paused, created_at=old.created_at)
            routines.append(routine)
        kept = {r.routine_id for r in routines}
        for routine in routines:
            self.store.save_routine(routine)
        for old in self.store.list_routines():
            if old.source == "config" and old.routine_id not in kept:
                self.store.delete_routine(old.routine_id)
        self.scheduler.poke()
        return sorted(kept)


def describe(routine: Routine) -> str:
    """"every weekday at 9:00 (Europe/Berlin)" — as it was said, with its zone."""
    said = routine.said or Schedule(routine.schedule, routine.timezone).describe()
    return f"{said} ({routine.timezone})"
