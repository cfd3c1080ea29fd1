"""When a routine fires: a schedule read from what a person typed, and its next firing (pure: no I/O).

```
what people type                       stored as (`Schedule.spec`)          fires
0 9 * * 1-5                            0 9 * * 1-5                          cron, in the routine's zone
every weekday at 9:00                  0 9 * * 1-5
every day at 18:30 · daily at 18:30    30 18 * * *
every monday at 8:30                   30 8 * * 1                           (any day name; "mondays" too)
every weekend at 10:00                 0 10 * * 0,6
every 2 hours · every hour             0 */2 * * * · 0 * * * *              N must divide 24
every 15 minutes · every minute        */15 * * * * · * * * * *             N must divide 60
at 2026-12-24 09:00                    at 2026-12-24T09:00:00+01:00         once, at that local time
at 22:00                               at <the next 22:00, resolved now>    once
in 30 minutes · in 3 seconds           at <now + that, resolved now>        once
```

A one-off is resolved to an absolute time with its offset when it is read, so a restart neither moves nor
repeats it. Cron and time arithmetic are cronsim's and zoneinfo's (with tzdata): across a daylight-saving
change a time that does not exist that day fires at the first minute after the gap, and a time that
happens twice fires once (the first); "every N minutes/hours" fire on the wall clock in both folds.
Anything else is a `ScheduleError` whose message says what is accepted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

__all__ = ["ACCEPTED", "Schedule", "ScheduleError", "parse_schedule", "split_schedule", "zone"]

ACCEPTED = ('a schedule is a cron expression of five fields ("0 9 * * 1-5"), "every weekday at 9:00", '
            '"every day at 18:30", "every monday at 8:30", "every 2 hours", "every 15 minutes", '
            '"at 2026-12-24 09:00", "at 22:00" or "in 30 minutes"')

_DAYS = {"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5",
         "saturday": "6"}
_EVERY_DAYS = {"day": "*", "weekday": "1-5", "weekend": "0,6", **_DAYS}
_TIME = r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?(?:\s*(?P<ampm>am|pm))?"
_DAY_WORDS = "|".join(sorted(_EVERY_DAYS, key=len, reverse=True))
# Each phrase anchored at the start; what follows it (in chat) is the task.
_PHRASES = {
    "days": re.compile(rf"(?:every\s+(?P<days>{_DAY_WORDS})s?|(?P<daily>daily))\s+at\s+{_TIME}", re.I),
    "interval": re.compile(r"every\s+(?:(?P<n>\d+)\s+)?(?P<unit>second|minute|hour|day)s?", re.I),
    "at_date": re.compile(r"at\s+(?P<date>\d{4}-\d{2}-\d{2})[ T]" + _TIME, re.I),
    "at_time": re.compile(rf"at\s+{_TIME}", re.I),
    "in": re.compile(r"in\s+(?P<n>\d+)\s*(?P<unit>second|sec|s|minute|min|m|hour|h|day|d)s?\b", re.I),
    "cron": re.compile(r"(?:cron\s+)?(?P<cron>[\d*][\d*/,\-]*(?:\s+[\d*/,\-?LW#a-z]+){4})", re.I),
}
_SECONDS = {"second": 1, "sec": 1, "s": 1, "minute": 60, "min": 60, "m": 60, "hour": 3600, "h": 3600,
            "day": 86400, "d": 86400}
_AT = re.compile(r"at\s+(\S+)")


class ScheduleError(ValueError):
    """A schedule or zone nobody can fire on; the message says what is wrong and what is accepted."""


def zone(name: str) -> ZoneInfo:
    """An IANA zone ("Europe/Berlin", "UTC"), or a ScheduleError naming it."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin, "
                            "America/New_York or UTC") from None


@dataclass(frozen=True)
class Schedule:
    """`spec`: a cron expression, or "at <ISO time with offset>" for a one-off. `zone`: the IANA zone the
    cron expression is read in (and a one-off is shown in)."""

    spec: str
    zone: str = "UTC"

    @property
    def once(self) -> float | None:
        """A one-off's time (epoch seconds); None for a repeating schedule."""
        m = _AT.fullmatch(self.spec)
        return datetime.fromisoformat(m.group(1)).timestamp() if m else None

    def next_after(self, t: float) -> float | None:
        """The first firing strictly after `t` (epoch seconds), or None (a one-off already past)."""
        once = self.once
        if once is not None:
            return once if once > t else None
        start = datetime.fromtimestamp(math.floor(t / 60) * 60 + 60, zone(self.zone))
        return next(CronSim(self.spec, start)).timestamp()

    def local(self, t: float) -> datetime:
        return datetime.fromtimestamp(t, zone(self.zone))

    def describe(self) -> str:
        once = self.once
        if once is not None:
            return f"once at {self.local(once).strftime('%Y-%m-%d %H:%M %Z')}"
        return f"cron {self.spec} ({self.zone})"


def parse_schedule(text: str, tz: str, now: float) -> Schedule:
    """What a person typed, in zone `tz`, read at `now` (epoch seconds); ScheduleError when it cannot fire."""
    words = " ".join(text.split())
    where = zone(tz or "UTC")
    tz = tz or "UTC"
    if not words:
        raise ScheduleError(f"no schedule given: {ACCEPTED}")
    for kind, pattern in _PHRASES.items():
        m = pattern.fullmatch(words)
        if m is not None:
            return _read(kind, m, tz, where, now)
    raise ScheduleError(f"cannot read the schedule {words!r}: {ACCEPTED}")


def split_schedule(text: str) -> tuple[str, str] | None:
    """A chat command's words as (schedule, task): the longest schedule phrase at the start, the rest the
    task. None when the words start with no schedule phrase (a cron expression needs "cron " first here)."""
    words = " ".join(text.split())
    best = ""
    for kind, pattern in _PHRASES.items():
        if kind == "cron" and not words.lower().startswith("cron "):
            continue
        m = pattern.match(words)
        if m is not None and (m.end() == len(words) or words[m.end()] == " ") and m.end() > len(best):
            best = words[:m.end()]
    if not best:
        return None
    return best, words[len(best):].strip()


def _read(kind: str, m: re.Match[str], tz: str, where: ZoneInfo, now: float) -> Schedule:
    if kind == "cron":
        spec = " ".join(m.group("cron").split())
        try:
            CronSim(spec, datetime.fromtimestamp(now, where))
        except CronSimError as exc:
            raise ScheduleError(f"bad cron expression {spec!r} ({exc}): {ACCEPTED}") from None
        return Schedule(spec, tz)
    if kind == "days":
        hour, minute = _clock(m)
        days = "*" if m.group("daily") else _EVERY_DAYS[m.group("days").lower()]
        return Schedule(f"{minute} {hour} * * {days}", tz)
    if kind == "interval":
        n, unit = int(m.group("n") or 1), m.group("unit").lower()
        if unit == "second" or n == 0:
            raise ScheduleError(f"an interval under a minute cannot be scheduled: the shortest is \"every minute\"; "
                                f"{ACCEPTED}")
        if unit == "minute":
            if 60 % n:
                raise ScheduleError(f"every {n} minutes does not divide the hour: use 1, 2, 3, 4, 5, 6, 10, 12, 15, "
                                    "20, 30 minutes, or a cron expression")
            return Schedule("* * * * *" if n == 1 else f"*/{n} * * * *", tz)
        if unit == "hour":
            if 24 % n:
                raise ScheduleError(f"every {n} hours does not divide the day: use 1, 2, 3, 4, 6, 8 or 12 hours, or "
                                    "a cron expression")
            return Schedule("0 * * * *" if n == 1 else f"0 */{n} * * *", tz)
        raise ScheduleError(f"\"every {m.group(0)[6:]}\" needs a time: say \"every day at 9:00\"; {ACCEPTED}")
    if kind == "in":
        delta = int(m.group("n")) * _SECONDS[m.group("unit").lower()]
        if delta <= 0:
            raise ScheduleError(f"\"{m.group(0)}\" is not in the future: {ACCEPTED}")
        return _once(datetime.fromtimestamp(now + delta, where), tz, now)
    hour, minute = _clock(m)
    if kind == "at_date":
        try:
            day = datetime.strptime(m.group("date"), "%Y-%m-%d")
        except ValueError:
            raise ScheduleError(f"no such date {m.group('date')!r}: write it as YYYY-MM-DD") from None
        return _once(day.replace(hour=hour, minute=minute, tzinfo=where), tz, now)
    today = datetime.fromtimestamp(now, where)
    at = today.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at.timestamp() <= now:
        at = (today + timedelta(days=1)).replace(hour=hour, minute=minute, second=0, microsecond=0)
    return _once(at, tz, now)


def _clock(m: re.Match[str]) -> tuple[int, int]:
    hour, minute, ampm = int(m.group("h")), int(m.group("m") or 0), (m.group("ampm") or "").lower()
    if ampm:
        if not 1 <= hour <= 12:
            raise ScheduleError(f"no such time {m.group(0)!r}: with am/pm the hour is 1 to 12")
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    if hour > 23 or minute > 59:
        raise ScheduleError(f"no such time in {m.group(0)!r}: write it as H:MM, 0:00 to 23:59")
    return hour, minute


def _once(at: datetime, tz: str, now: float) -> Schedule:
    # A local time that does not exist (a spring-forward gap) reads with the offset before the gap: it fires
    # once, shortly after the gap. Normalised through the epoch so the stored offset is the real one.
    at = datetime.fromtimestamp(math.floor(at.timestamp()), at.tzinfo)
    if at.timestamp() <= now:
        raise ScheduleError(f"{at.isoformat(timespec='minutes')} is in the past: a one-off must be in the future "
                            f"(\"in 30 minutes\", \"at 22:00\", \"at 2026-12-24 09:00\")")
    return Schedule(f"at {at.isoformat()}", tz)
