"""Routines on Discord: real discord.py against the Discord double, a hub whose runs are engine doubles (no
CLI) on a controllable wall clock. `/flower routine add|list|pause|resume|delete|run`, a firing that opens a
starter message and its thread in the routine's channel, the list's buttons, bad input."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.discord_bridge import DiscordFrontend
from adapters.hub import Hub, HubSettings, RunOptions
from adapters.state import MemoryStateStore
from adapters.transport import LocalTransport
from tests.hub.test_schedule import at
from tests.support.discord_double import DiscordDouble
from tests.support.discord_payloads import Person
from tests.support.discord_support import FAST_LIMITS, discord_double, settings
from tests.support.engine_double import KitDouble

__all__ = ["discord_double"]


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


FRIDAY = at(2026, 12, 4, 22, 15)  # Europe/Berlin, the bot's zone here
MONDAY_NINE = at(2026, 12, 7, 9, 0)


@dataclasses.dataclass
class Rig:
    d: DiscordDouble
    bridge: DiscordFrontend
    hub: Hub
    clock: Clock
    kit: KitDouble
    alice: Person

    async def say(self, sub: str, **options: object) -> str:
        ix = await self.d.slash(self.alice, sub, **options)
        await self.d.until(lambda _: ix.original is not None and ix.original["content"])
        assert ix.original is not None
        return str(ix.original["content"])


@pytest.fixture
async def rig(discord_double: DiscordDouble, tmp_path: Path) -> AsyncIterator[Rig]:
    bridge = DiscordFrontend(settings(discord_double))
    bridge.surface.limits = FAST_LIMITS
    clock, kit = Clock(FRIDAY), KitDouble()
    hub = Hub(bridge.surface, MemoryStateStore(), HubSettings(root=tmp_path / "runs", timezone="Europe/Berlin"),
              transport=LocalTransport(kit), wall_clock=clock)  # type: ignore[arg-type]
    bridge.attach(hub)
    await bridge.start()
    yield Rig(discord_double, bridge, hub, clock, kit, discord_double.person("Alice"))
    await hub.close(deadline_s=2)
    await bridge.stop()


async def test_a_routine_made_on_discord_fires_into_a_thread_of_its_channel(rig: Rig) -> None:
    d, hub = rig.d, rig.hub
    said = await rig.say("routine add", schedule="every weekday at 9:00", task="triage the new issues",
                         name="Daily triage")
    assert "saved: every weekday at 9:00 (Europe/Berlin); next 2026-12-07T09:00:00+01:00" in said, said
    [info] = hub.query.routines()
    rid = info.routine.routine_id
    assert info.routine.place.channel == str(d.channel_id)
    before = len(d.bot_messages(d.channel_id))

    rig.clock.t = MONDAY_NINE
    await hub.scheduler.tick()
    [run] = hub.store.list_runs()
    assert run.thread.channel == str(d.channel_id) and run.origin == "⏰ Daily triage, 09:00"
    starter = d.bot_messages(d.channel_id)[-1]
    assert len(d.bot_messages(d.channel_id)) == before + 1 and run.thread.thread == starter["id"]
    await d.until(lambda _: "⏰ Daily triage, 09:00" in (d.messages[int(starter["id"])]["embeds"] or [{}])[0]
                  .get("title", ""))  # the status card edits the starter
    assert int(run.thread.thread) in d.channels  # and the run speaks in its thread

    listed = await rig.say("routine list")
    assert rid in listed and "Daily triage" in listed and "next 2026-12-08T09:00:00+01:00" in listed
    ix = await d.slash(rig.alice, "routine list")
    await d.until(lambda _: ix.original is not None and ix.original.get("components"))
    assert ix.original is not None
    labels = [b["label"] for row in ix.original["components"] for b in row["components"]]
    assert labels == [f"Pause {rid}", f"Run now {rid}", f"Delete {rid}"]
    bob = await d.click(d.person("Bob"), int(ix.original["id"]), label=f"Pause {rid}", seen=ix.original)
    await d.until(lambda _: any("owner" in t for t in bob.texts()))  # not his routine
    assert not hub.query.routines()[0].routine.paused
    click = await d.click(rig.alice, int(ix.original["id"]), label=f"Pause {rid}", seen=ix.original)
    await d.until(lambda _: any("paused" in t for t in click.texts()))
    assert hub.query.routines()[0].routine.paused

    assert "resumed" in await rig.say("routine resume", id=rid)
    assert "still going" in await rig.say("routine run", id=rid)  # overlap skip: its run is live
    rig.kit.of(run.run_id)[0].finish()
    await hub.query.wait(run.run_id)
    assert "Started run" in await rig.say("routine run", id=rid)
    assert len(hub.store.list_runs()) == 2
    assert "deleted" in await rig.say("routine delete", id=rid)
    assert hub.query.routines() == []


async def test_bad_input_and_unknown_ids_say_so_and_save_nothing(rig: Rig) -> None:
    assert "cannot read the schedule" in await rig.say("routine add", schedule="now and then", task="x")
    assert "in the past" in await rig.say("routine add", schedule="at 2020-01-01 09:00", task="x")
    assert "unknown time zone" in await rig.say("routine add", schedule="every day at 9:00", task="x",
                                                timezone="Mars/Olympus")
    assert "under a minute" in await rig.say("routine add", schedule="every 30 seconds", task="x")
    assert rig.hub.query.routines() == []
    assert "No routine 'rtnope'" in await rig.say("routine pause", id="rtnope")
    assert "No routines in this channel" in await rig.say("routine list")
    # `plan:True`: each firing plans first (its options say so; the plan card is the run's as any other).
    assert "saved" in await rig.say("routine add", schedule="every day at 22:00", task="plan the migration", plan=True)
    [info] = rig.hub.query.routines()
    assert RunOptions.of_json(info.routine.options).plan is True
