"""Routines in the hub, on a controllable clock and an engine double (no CLI): the door's intents, firing
into a thread the platform opens, exactly once across a "crash" at each moment of a firing (a second Hub on
the same SQLite file), catching up, overlap, room, pause/resume/run now/delete, who may."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.hub import AddRoutine, Hub, HubSettings, RoutineAction
from adapters.memory_surface import MemorySurface
from adapters.platform import OutMessage, ThreadRef
from adapters.state import ChannelPolicy, MemoryStateStore, Occurrence, SQLiteStateStore, StateStore
from adapters.transport import LocalTransport
from tests.hub.test_schedule import at
from tests.support.engine_double import KitDouble
from tests.support.hub_support import Watch

PLACE = ThreadRef("memory", "C1")
FRIDAY_EVENING = at(2026, 12, 4, 22, 15)  # Europe/Berlin
MONDAY_NINE = at(2026, 12, 7, 9, 0)


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclasses.dataclass
class Rig:
    hub: Hub
    store: StateStore
    clock: Clock
    kit: KitDouble
    surface: MemorySurface
    opened: list[tuple[ThreadRef, OutMessage]]

    async def add(self, schedule: str, task: str = "triage the new issues", user: str = "alice",
                  **kw: object) -> str:
        result = await self.hub.submit(AddRoutine(task, schedule, **kw), user, where=PLACE)  # type: ignore[arg-type]
        assert result.ok, result.message
        return result.routine_id

    async def at(self, t: float) -> None:
        self.clock.t = t
        await self.hub.scheduler.tick()

    async def said(self, thread: ThreadRef, needle: str) -> list[str]:
        """The texts in `thread` holding `needle`, once there is one (the outbox delivers them shortly)."""
        def found(s: MemorySurface) -> list[str]:
            return [m.text for m in s.thread(thread) if needle in m.text]
        texts: list[str] = await Watch(self.surface).until(found, timeout=10)
        return texts

    def runs(self) -> list[str]:
        return [r.run_id for r in self.store.list_runs()]


def make_rig(tmp_path: Path, store: StateStore, clock: Clock, *, timezone: str = "Europe/Berlin") -> Rig:
    surface, kit = MemorySurface(), KitDouble()
    hub = Hub(surface, store, HubSettings(root=tmp_path / "runs", timezone=timezone),
              transport=LocalTransport(kit), wall_clock=clock)  # type: ignore[arg-type]
    opened: list[tuple[ThreadRef, OutMessage]] = []

    async def opener(channel: str, card: OutMessage) -> ThreadRef:
        thread = ThreadRef("memory", channel, f"root{len(opened) + 1}")
        opened.append((thread, card))
        return thread

    hub.hooks.open_threads("memory", opener)
    return Rig(hub, store, clock, kit, surface, opened)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    r = make_rig(tmp_path, MemoryStateStore(), Clock(FRIDAY_EVENING))
    yield r
    await r.hub.close(deadline_s=2)


async def test_a_routine_is_saved_with_its_next_firing_in_its_zone(rig: Rig) -> None:
    rid = await rig.add("every weekday at 9:00")
    info = rig.hub.query.routine(rid)
    assert info is not None
    assert info.next == "2026-12-07T09:00:00+01:00"
    assert info.routine.timezone == "Europe/Berlin" and info.routine.owner == "alice"
    assert info.routine.place == PLACE and info.said == "every weekday at 9:00 (Europe/Berlin)"
    assert await rig.add("every day at 9:00", timezone="America/New_York") != rid
    assert [i.next for i in rig.hub.query.routines()] == ["2026-12-07T09:00:00+01:00", "2026-12-05T09:00:00-05:00"]


async def test_the_creators_zone_comes_before_the_bots(rig: Rig) -> None:
    rid = await rig.add("every day at 9:00", zone_hint="Asia/Tokyo")
    info = rig.hub.query.routine(rid)
    assert info is not None and info.routine.timezone == "Asia/Tokyo"


@pytest.mark.parametrize(("schedule", "kw", "words"), [
    ("whenever", {}, "cannot read the schedule"),
    ("at 2020-01-01 09:00", {}, "in the past"),
    ("every day at 9:00", {"timezone": "Mars/Olympus"}, "unknown time zone"),
    ("every 10 seconds", {}, "under a minute"),
    ("every day at 9:00", {"overlap": "pile"}, "overlap must be"),
])
async def test_bad_input_is_a_clear_error_and_nothing_is_saved(rig: Rig, schedule: str, kw: dict[str, str],
                                                                words: str) -> None:
    result = await rig.hub.submit(AddRoutine("a task", schedule, **kw), "alice", where=PLACE)
    assert not result.ok and words in result.message
    assert rig.store.list_routines() == []


async def test_an_unknown_routine_is_named(rig: Rig) -> None:
    result = await rig.hub.submit(RoutineAction("rtnope", "pause"), "alice")
    assert not result.ok and "No routine 'rtnope'" in result.message


async def test_it_fires_once_at_its_time_into_a_new_thread_of_its_place(rig: Rig) -> None:
    rid = await rig.add("every weekday at 9:00", name="Daily triage")
    await rig.at(MONDAY_NINE - 1)
    assert rig.runs() == [] and rig.opened == []
    await rig.at(MONDAY_NINE)
    [run_id] = rig.runs()
    record = rig.store.get_run(run_id)
    assert record is not None
    assert record.origin == "⏰ Daily triage, 09:00" and record.owner == "alice"
    assert record.thread == rig.opened[0][0] and record.thread.channel == "C1"
    assert rig.opened[0][1].title.startswith("⏰ Daily triage, 09:00")
    assert rig.hub.live[run_id].view.status_card.origin == "⏰ Daily triage, 09:00"
    await rig.at(MONDAY_NINE + 5)
    assert rig.runs() == [run_id]  # once
    info = rig.hub.query.routine(rid)
    assert info is not None and info.next == "2026-12-08T09:00:00+01:00"
    assert [(o.run_id, o.state, o.kind) for o in info.last] == [(run_id, "started", "due")]
    assert rig.hub.query.routine_firings()["started"] == 1


async def test_a_one_off_fires_once_and_then_has_no_next(rig: Rig) -> None:
    rid = await rig.add("in 3 seconds")
    await rig.at(FRIDAY_EVENING + 3)
    await rig.at(FRIDAY_EVENING + 600)
    assert len(rig.runs()) == 1
    info = rig.hub.query.routine(rid)
    assert info is not None and info.next is None


async def test_missed_occurrences_catch_up_once(rig: Rig) -> None:
    rid = await rig.add("every hour")
    await rig.at(FRIDAY_EVENING + 3 * 86400)  # three days down: 72 occurrences missed
    assert len(rig.runs()) == 1
    info = rig.hub.query.routine(rid)
    assert info is not None and [o.kind for o in info.last] == ["catch_up"]
    assert rig.hub.query.routine_firings()["caught_up"] == 1
    routine = rig.store.get_routine(rid)
    assert routine is not None and routine.next_at is not None and routine.next_at > rig.clock.t


async def test_catch_up_false_fires_nothing_for_what_was_missed(rig: Rig) -> None:
    rid = await rig.add("every hour", catch_up=False)
    await rig.at(FRIDAY_EVENING + 86400)
    assert rig.runs() == []
    assert rig.hub.query.routine_firings()["skipped"] == 1
    routine = rig.store.get_routine(rid)
    assert routine is not None and routine.next_at is not None and routine.next_at > rig.clock.t
    await rig.at(routine.next_at)
    assert len(rig.runs()) == 1  # on time again: it fires


async def test_overlap_skip_says_so_in_the_live_runs_thread(rig: Rig) -> None:
    rid = await rig.add("every hour", name="Hourly")
    first = at(2026, 12, 4, 23, 0)
    await rig.at(first)
    [run_id] = rig.runs()
    await rig.at(first + 3600)
    assert rig.runs() == [run_id]
    info = rig.hub.query.routine(rid)
    assert info is not None and info.last[0].state == "skipped" and run_id in info.last[0].note
    thread = rig.store.get_run(run_id).thread  # type: ignore[union-attr]
    notices = await rig.said(thread, "skipped")
    assert notices == ["⏰ Hourly, 00:00: skipped, this run is still going (overlap = skip)."]


async def test_a_long_run_is_still_the_one_going_after_many_skips(rig: Rig) -> None:
    rid = await rig.add("every hour")
    first = at(2026, 12, 4, 23, 0)
    await rig.at(first)
    [run_id] = rig.runs()
    for hour in range(1, 30):  # more skips than any listing keeps
        await rig.at(first + hour * 3600)
    assert rig.runs() == [run_id]
    assert [o.state for o in rig.store.occurrences_of(rid, 100)].count("skipped") == 29
    thread = rig.store.get_run(run_id).thread  # type: ignore[union-attr]
    told = await rig.said(thread, "skipped 29 times")  # one line, edited: not 29 of them
    assert [t for t in (m.text for m in rig.surface.thread(thread)) if "skipped" in t] == told
    assert told == ["⏰ triage the new issues: skipped 29 times while this run goes on, the last at 04:00 "
                    "(overlap = skip)."]


async def test_overlap_queue_waits_for_the_run_to_end(rig: Rig) -> None:
    await rig.add("every hour", overlap="queue")
    first = at(2026, 12, 4, 23, 0)
    await rig.at(first)
    [run_id] = rig.runs()
    await rig.at(first + 3600)
    assert rig.runs() == [run_id] and len(rig.store.pending_occurrences()) == 1
    await rig.at(first + 7200)  # a third one while one waits: skipped, not piled up
    assert len(rig.store.pending_occurrences()) == 1
    rig.kit.of(run_id)[0].finish()
    await rig.hub.live[run_id].finished.wait()
    await rig.at(first + 7210)
    assert len(rig.runs()) == 2 and rig.store.pending_occurrences() == []


async def test_an_occurrence_waiting_when_its_routine_is_paused_does_not_start(rig: Rig) -> None:
    rid = await rig.add("every hour", overlap="queue")
    first = at(2026, 12, 4, 23, 0)
    await rig.at(first)
    [run_id] = rig.runs()
    await rig.at(first + 3600)
    assert len(rig.store.pending_occurrences()) == 1  # it waits for the first run
    assert (await rig.hub.submit(RoutineAction(rid, "pause"), "alice")).ok
    rig.kit.of(run_id)[0].finish()
    await rig.hub.live[run_id].finished.wait()
    await rig.at(first + 3610)
    assert rig.runs() == [run_id] and rig.store.pending_occurrences() == []
    info = rig.hub.query.routine(rid)
    assert info is not None and info.last[0].state == "skipped" and "paused" in info.last[0].note


async def test_a_full_bot_starts_it_as_soon_as_there_is_room_and_says_so(rig: Rig) -> None:
    rig.hub.max_runs = 0
    await rig.add("in 1 minute")
    await rig.at(FRIDAY_EVENING + 60)
    assert rig.runs() == [] and len(rig.store.pending_occurrences()) == 1
    rig.hub.max_runs = 3
    await rig.at(FRIDAY_EVENING + 61)
    [run_id] = rig.runs()
    thread = rig.store.get_run(run_id).thread  # type: ignore[union-attr]
    assert await rig.said(thread, "waited for room")


async def test_pause_resume_run_now_and_delete(rig: Rig) -> None:
    rid = await rig.add("every weekday at 9:00")
    assert (await rig.hub.submit(RoutineAction(rid, "pause"), "alice")).ok
    await rig.at(MONDAY_NINE)
    assert rig.runs() == []
    info = rig.hub.query.routine(rid)
    assert info is not None and info.next is None and info.routine.paused
    result = await rig.hub.submit(RoutineAction(rid, "resume"), "alice")
    assert result.ok and "2026-12-08T09:00:00+01:00" in result.message  # what it missed paused is not caught up
    await rig.at(MONDAY_NINE + 30)
    assert rig.runs() == []
    now = await rig.hub.submit(RoutineAction(rid, "run"), "alice")
    assert now.ok and rig.runs() == [now.run_id]
    routine = rig.store.get_routine(rid)
    assert routine is not None and routine.next_at == at(2026, 12, 8, 9, 0)  # its schedule is unchanged
    assert (await rig.hub.submit(RoutineAction(rid, "delete"), "alice")).ok
    assert rig.hub.query.routine(rid) is None
    await rig.at(at(2026, 12, 8, 9, 0))
    assert rig.runs() == [now.run_id]


async def test_who_may_starters_add_owners_and_admins_manage(rig: Rig) -> None:
    rig.store.set_channel_policy("memory:C1", ChannelPolicy(starters={"alice", "bob"}, admins={"carol"}))
    refused = await rig.hub.submit(AddRoutine("t", "every day at 9:00"), "mallory", where=PLACE)
    assert not refused.ok and rig.store.list_routines() == []
    rid = await rig.add("every day at 9:00", user="alice")
    assert not (await rig.hub.submit(RoutineAction(rid, "pause"), "bob")).ok
    assert (await rig.hub.submit(RoutineAction(rid, "pause"), "carol")).ok
    rig.store.set_channel_policy("memory:C1", ChannelPolicy(starters={"bob"}, admins={"carol"}))
    assert not (await rig.hub.submit(RoutineAction(rid, "resume"), "alice")).ok  # may no longer start here
    # and her routine no longer starts runs there: checked at every firing
    assert (await rig.hub.submit(RoutineAction(rid, "resume"), "carol")).ok
    await rig.at(at(2026, 12, 5, 9, 0))
    assert rig.runs() == []
    info = rig.hub.query.routine(rid)
    assert info is not None and info.last[0].state == "failed" and "may no longer start" in info.last[0].note
    assert rig.hub.query.routine_firings()["failed"] == 1


# ---- exactly once across a crash at each moment of a firing: a second Hub on the same file -------------------
async def restart(tmp_path: Path, old: Rig) -> Rig:
    await old.hub.close(deadline_s=2)
    old.store.close()
    new = make_rig(tmp_path, SQLiteStateStore(tmp_path / "state.db"), old.clock)
    await new.hub.recover()
    return new


@pytest.mark.parametrize("moment", ["recorded", "thread_opened", "run_saved", "settled"])
async def test_a_crash_at_any_moment_of_a_firing_starts_it_exactly_once(tmp_path: Path, moment: str) -> None:
    first = make_rig(tmp_path, SQLiteStateStore(tmp_path / "state.db"), Clock(FRIDAY_EVENING))
    rid = await first.add("every weekday at 9:00")
    first.clock.t = MONDAY_NINE
    routine = first.store.get_routine(rid)
    assert routine is not None
    occurrence = Occurrence(rid, MONDAY_NINE, "rcrash001")
    thread = ThreadRef("memory", "C1", "root-before")
    # What the process had done when it died, written as the scheduler writes it.
    first.store.record_occurrence(occurrence, at(2026, 12, 8, 9, 0))
    if moment in ("thread_opened", "run_saved", "settled"):
        first.store.update_occurrence(rid, MONDAY_NINE, thread=thread)
    if moment in ("run_saved", "settled"):
        await first.hub.scheduler._start(routine, occurrence, thread, "⏰ x, 09:00")
        assert first.runs() == ["rcrash001"]
    if moment == "settled":
        first.store.update_occurrence(rid, MONDAY_NINE, state="started")

    second = await restart(tmp_path, first)
    try:
        await second.at(MONDAY_NINE + 20)
        await second.at(MONDAY_NINE + 120)
        assert second.runs() == ["rcrash001"]
        record = second.store.get_run("rcrash001")
        assert record is not None
        assert record.thread == (thread if moment != "recorded" else second.opened[0][0])
        assert len(second.opened) == (1 if moment == "recorded" else 0)  # a recorded thread is reused
        assert "rcrash001" in second.hub.live  # running: started, or brought back by recover
        assert [o.state for o in second.store.occurrences_of(rid)] == ["started"]
        routine = second.store.get_routine(rid)
        assert routine is not None and routine.next_at == at(2026, 12, 8, 9, 0)
    finally:
        await second.hub.close(deadline_s=2)
        second.store.close()


async def test_routines_survive_a_restart(tmp_path: Path) -> None:
    first = make_rig(tmp_path, SQLiteStateStore(tmp_path / "state.db"), Clock(FRIDAY_EVENING))
    rid = await first.add("every weekday at 9:00", name="Daily triage", overlap="queue", catch_up=False)
    second = await restart(tmp_path, first)
    try:
        info = second.hub.query.routine(rid)
        assert info is not None and info.routine.name == "Daily triage"
        assert (info.routine.overlap, info.routine.catch_up, info.next) == ("queue", False,
                                                                            "2026-12-07T09:00:00+01:00")
        await second.at(MONDAY_NINE)
        assert len(second.runs()) == 1
    finally:
        await second.hub.close(deadline_s=2)
        second.store.close()


async def test_the_clock_loop_fires_by_itself_once_recover_is_done(rig: Rig) -> None:
    import asyncio

    await rig.add("in 1 minute")
    await rig.hub.open()
    rig.clock.t = FRIDAY_EVENING + 60
    rig.hub.scheduler.poke()
    await asyncio.sleep(0.2)
    assert rig.runs() == []  # not before the old runs are back
    await rig.hub.recover()
    for _ in range(50):
        if rig.runs():
            break
        await asyncio.sleep(0.05)
    assert len(rig.runs()) == 1


async def test_configuration_declares_routines_as_code(rig: Rig) -> None:
    declared = [(AddRoutine("triage", "every weekday at 9:00", name="Daily triage"), PLACE, "alice"),
                (AddRoutine("nightly", "at 2026-12-24 22:00", name="Nightly"), PLACE, "alice")]
    assert rig.hub.routines.declare(declared) == ["cfg-daily-triage", "cfg-nightly"]
    await rig.add("every hour")  # a person's routine is not the file's to delete
    rig.clock.t = at(2026, 12, 30, 12, 0)  # the one-off is past now: declaring it again is no error
    assert rig.hub.routines.declare(declared[1:]) == ["cfg-nightly"]
    names = sorted(i.routine.name for i in rig.hub.query.routines())
    assert names == ["Nightly", "triage the new issues"]


async def test_metrics_count_firings_by_outcome_and_show_each_next_firing(rig: Rig) -> None:
    from adapters.ops.metrics import Metrics

    metrics = Metrics(cli_processes=lambda: 0)
    metrics.watch_hub(rig.hub)
    rid = await rig.add("every weekday at 9:00", name="Daily triage")
    await rig.add("every hour", name="Hourly", catch_up=False)
    await rig.at(MONDAY_NINE)  # the daily one starts; the hourly one missed the weekend: skipped
    lines = metrics.render().decode().splitlines()
    assert 'flower_routine_firings_total{outcome="started"} 1.0' in lines
    assert 'flower_routine_firings_total{outcome="skipped"} 1.0' in lines
    assert 'flower_routine_firings_total{outcome="caught_up"} 0.0' in lines
    [following] = [ln for ln in lines if ln.startswith("flower_routine_next_firing_timestamp_seconds{")
                   and f'routine="{rid}"' in ln]
    assert 'name="Daily triage"' in following and float(following.split()[-1]) == at(2026, 12, 8, 9, 0)
