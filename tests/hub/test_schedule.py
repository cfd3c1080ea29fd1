"""Routine schedules (adapters/hub/schedule.py), pure: phrases, cron, one-offs, zones and daylight saving."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from adapters.hub.schedule import ACCEPTED, Schedule, ScheduleError, parse_schedule, split_schedule

BERLIN = ZoneInfo("Europe/Berlin")
NY = ZoneInfo("America/New_York")


def at(y: int, mo: int, d: int, h: int, mi: int = 0, tz: ZoneInfo = BERLIN, fold: int = 0) -> float:
    return datetime(y, mo, d, h, mi, tzinfo=tz, fold=fold).timestamp()


def local(t: float | None, tz: ZoneInfo = BERLIN) -> str:
    assert t is not None
    return datetime.fromtimestamp(t, tz).isoformat(timespec="minutes")


def firings(s: Schedule, start: float, n: int) -> list[str]:
    out, t = [], start
    for _ in range(n):
        nxt = s.next_after(t)
        assert nxt is not None
        out.append(local(nxt, ZoneInfo(s.zone)))
        t = nxt
    return out


NOW = at(2026, 12, 4, 22, 15)  # a Friday


@pytest.mark.parametrize(("said", "spec"), [
    ("0 9 * * 1-5", "0 9 * * 1-5"),
    ("cron 0 9 * * 1-5", "0 9 * * 1-5"),
    ("every weekday at 9:00", "0 9 * * 1-5"),
    ("Every Weekday at 09:00", "0 9 * * 1-5"),
    ("every day at 18:30", "30 18 * * *"),
    ("daily at 7:05", "5 7 * * *"),
    ("every monday at 8:30", "30 8 * * 1"),
    ("every mondays at 8:30pm", "30 20 * * 1"),
    ("every sunday at 12am", "0 0 * * 0"),
    ("every weekend at 10:00", "0 10 * * 0,6"),
    ("every 2 hours", "0 */2 * * *"),
    ("every hour", "0 * * * *"),
    ("every 15 minutes", "*/15 * * * *"),
    ("every minute", "* * * * *"),
])
def test_phrases_map_onto_cron(said: str, spec: str) -> None:
    assert parse_schedule(said, "Europe/Berlin", NOW) == Schedule(spec, "Europe/Berlin")


def test_the_weekday_phrase_fires_on_weekdays_at_nine_local() -> None:
    s = parse_schedule("every weekday at 9:00", "Europe/Berlin", NOW)
    assert firings(s, NOW, 3) == ["2026-12-07T09:00+01:00", "2026-12-08T09:00+01:00", "2026-12-09T09:00+01:00"]
    assert s.next_after(at(2026, 12, 7, 9, 0)) == at(2026, 12, 8, 9, 0)  # strictly after


@pytest.mark.parametrize(("said", "when"), [
    ("at 2026-12-24 09:00", "2026-12-24T09:00+01:00"),
    ("at 22:00", "2026-12-05T22:00+01:00"),  # already past today: tomorrow
    ("at 23:00", "2026-12-04T23:00+01:00"),
    ("in 30 minutes", "2026-12-04T22:45+01:00"),
    ("in 2 hours", "2026-12-05T00:15+01:00"),
])
def test_one_offs_resolve_to_one_absolute_time(said: str, when: str) -> None:
    s = parse_schedule(said, "Europe/Berlin", NOW)
    assert s.once is not None and local(s.once) == when
    assert s.spec.startswith("at ") and s.next_after(NOW) == s.once
    assert s.next_after(s.once) is None  # fires once
    assert Schedule(s.spec, s.zone) == s  # what is stored reads back the same after a restart


def test_in_a_few_seconds_is_a_one_off_to_the_second() -> None:
    s = parse_schedule("in 3 seconds", "UTC", 1000.0)
    assert s.once == 1003.0


@pytest.mark.parametrize(("said", "words"), [
    ("every 30 seconds", "under a minute"),
    ("every 0 minutes", "under a minute"),
    ("at 2020-01-01 09:00", "in the past"),
    ("at 2026-02-30 09:00", "no such date"),
    ("at 25:00", "no such time"),
    ("61 * * * *", "bad cron expression"),
    ("0 0 30 2 *", "bad cron expression"),  # February 30th never comes
    ("0 9 * *", "cannot read"),  # four fields
    ("every 5 hours", "does not divide the day"),
    ("every 7 minutes", "does not divide the hour"),
    ("every day", "needs a time"),
    ("tomorrow-ish", "cannot read"),
    ("", "no schedule"),
])
def test_bad_schedules_say_what_is_accepted(said: str, words: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse_schedule(said, "Europe/Berlin", NOW)
    assert words in str(err.value)
    if words in ("cannot read", "no schedule", "bad cron expression", "under a minute"):
        assert ACCEPTED in str(err.value)


def test_an_unknown_zone_is_refused_by_name() -> None:
    with pytest.raises(ScheduleError, match=r"unknown time zone 'Mars/Olympus'.*IANA"):
        parse_schedule("every day at 9:00", "Mars/Olympus", NOW)


def test_the_same_phrase_in_two_zones_fires_at_two_instants() -> None:
    berlin = parse_schedule("every day at 9:00", "Europe/Berlin", NOW).next_after(NOW)
    york = parse_schedule("every day at 9:00", "America/New_York", NOW).next_after(NOW)
    assert york is not None and berlin is not None and york - berlin == 6 * 3600


# ---- daylight saving: neither skipped nor doubled ----------------------------------------------------
def test_spring_forward_a_daily_time_in_the_gap_fires_once_right_after_it() -> None:
    s = Schedule("30 2 * * *", "Europe/Berlin")  # 02:30 does not exist on 2026-03-29
    assert firings(s, at(2026, 3, 28, 12), 3) == ["2026-03-29T03:00+02:00", "2026-03-30T02:30+02:00",
                                                 "2026-03-31T02:30+02:00"]


def test_fall_back_a_daily_time_in_the_repeated_hour_fires_once() -> None:
    s = Schedule("30 2 * * *", "Europe/Berlin")  # 02:30 happens twice on 2026-10-25
    assert firings(s, at(2026, 10, 24, 12), 3) == ["2026-10-25T02:30+02:00", "2026-10-26T02:30+01:00",
                                                  "2026-10-27T02:30+01:00"]


def test_weekday_nine_oclock_stays_at_nine_across_both_changes() -> None:
    s = Schedule("0 9 * * 1-5", "America/New_York")
    spring = firings(s, at(2026, 3, 6, 12, tz=NY), 2)  # DST starts Sunday 2026-03-08
    fall = firings(s, at(2026, 10, 30, 12, tz=NY), 2)  # and ends Sunday 2026-11-01
    assert spring == ["2026-03-09T09:00-04:00", "2026-03-10T09:00-04:00"]
    assert fall == ["2026-11-02T09:00-05:00", "2026-11-03T09:00-05:00"]


def test_an_hourly_schedule_fires_every_real_hour_through_the_fall_back() -> None:
    s = Schedule("0 * * * *", "Europe/Berlin")
    times = []
    t = at(2026, 10, 25, 0, 30)
    for _ in range(4):
        nxt = s.next_after(t)
        assert nxt is not None
        times.append(nxt - t if times else 0)
        t = nxt
    # 01:00, 02:00 (+02), 02:00 (+01), 03:00: an hour apart each, none twice at one instant
    assert times[1:] == [3600, 3600, 3600]


def test_a_one_off_in_the_spring_gap_fires_once_after_it() -> None:
    s = parse_schedule("at 2026-03-29 02:30", "Europe/Berlin", at(2026, 3, 1, 0))
    assert local(s.once) == "2026-03-29T03:30+02:00"


# ---- chat commands: where the schedule ends and the task begins ------------------------------------------
@pytest.mark.parametrize(("words", "split"), [
    ("every weekday at 9:00 triage the new issues", ("every weekday at 9:00", "triage the new issues")),
    ("at 22:00 run the long migration test", ("at 22:00", "run the long migration test")),
    ("in 3 seconds say hi", ("in 3 seconds", "say hi")),
    ("every 2 hours check CI", ("every 2 hours", "check CI")),
    ("at 2026-12-24 09:00 wrap presents", ("at 2026-12-24 09:00", "wrap presents")),
    ("cron 0 9 * * 1-5 triage", ("cron 0 9 * * 1-5", "triage")),
    ("every monday at 8:30pm  plan   the week", ("every monday at 8:30pm", "plan the week")),
    ("build me a CLI", None),
    ("everything at once", None),
])
def test_split_schedule(words: str, split: tuple[str, str] | None) -> None:
    assert split_schedule(words) == split
