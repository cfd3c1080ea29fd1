"""Routines on Slack through the real AsyncApp over Socket Mode against the Slack double, with a hub whose
runs are engine doubles (no CLI) and a controllable wall clock: `/flower every weekday at 9:00 <task>`
in the person's Slack zone, a firing that opens its own thread in the channel (the status card as its
root), `/flower at 22:00 <task>`, `/flower routines` with its buttons, bad input, who may."""

from __future__ import annotations

import re
from pathlib import Path

from adapters.state import ChannelPolicy
from adapters.transport import LocalTransport
from tests.hub.test_schedule import NY, at
from tests.support.engine_double import KitDouble
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, slack_bot


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


FRIDAY = at(2026, 12, 4, 17, 0, tz=NY)
MONDAY_NINE = at(2026, 12, 7, 9, 0, tz=NY)


async def test_a_routine_made_in_slack_fires_into_its_own_thread_of_the_channel(tmp_path: Path) -> None:
    clock, kit = Clock(FRIDAY), KitDouble()
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double, wall_clock=clock,
                                                  transport=LocalTransport(kit)) as bot:  # type: ignore[arg-type]
        assert await double.slash("/flower", "every weekday at 9:00 triage the new issues", user="UALICE",
                                  channel=C1) is None
        await double.wait_for(lambda d: d.responses)
        said = double.responses[-1]["text"]
        assert "saved" in said and "every weekday at 9:00 (America/New_York)" in said, said  # Alice's Slack zone
        assert "2026-12-07T09:00:00-05:00" in said
        [info] = bot.hub.query.routines()
        assert info.routine.place.channel == C1 and info.routine.owner == "UALICE"
        assert not double.roots(C1)  # nothing in the channel until it fires

        clock.t = MONDAY_NINE
        await bot.hub.scheduler.tick()
        [run] = bot.store.list_runs()
        root = double.roots(C1)[-1]
        assert run.thread.channel == C1 and run.thread.thread == root.ts and run.owner == "UALICE"
        assert run.origin == "⏰ triage the new issues, 09:00"
        await double.wait_for(lambda d: "⏰ triage the new issues, 09:00" in d.roots(C1)[-1].header())
        assert len(double.roots(C1)) == 1  # the status card took the root over: no second root

        # The list, and its buttons: pause, then run now, then delete.
        listed = await double.slash("/flower", "routines", user="UALICE", channel=C1)
        assert listed is not None and info.routine.routine_id in str(listed["blocks"])
        buttons = [e for b in listed["blocks"] if b.get("type") == "actions" for e in b["elements"]]
        assert [b["text"]["text"] for b in buttons] == ["Pause", "Run now", "Delete"]
        await double.click(None, "Pause", user="UALICE", channel=C1, buttons=buttons)
        await double.wait_for(lambda d: any("paused" in t for t in d.ephemerals_for("UALICE")))
        assert bot.hub.query.routines()[0].routine.paused
        # the list it was pressed on is replaced by a fresh one: Pause became Resume there
        fresh = await double.wait_for(lambda d: next((r for r in d.responses if r.get("replace_original")), None))
        assert "Resume" in str(fresh["blocks"]) and "Pause" not in str(fresh["blocks"])
        assert "paused" in fresh["blocks"][0]["text"]["text"]
        again = await double.slash("/flower", "routines", user="UALICE", channel=C1)
        assert again is not None
        buttons = [e for b in again["blocks"] if b.get("type") == "actions" for e in b["elements"]]
        assert buttons[0]["text"]["text"] == "Resume" and "paused" in str(again["blocks"])
        await double.click(None, "Run now", user="UALICE", channel=C1, buttons=buttons)  # overlap: skip
        await double.wait_for(lambda d: any("still going" in t for t in d.ephemerals_for("UALICE")))
        assert len(bot.store.list_runs()) == 1
        kit.of(run.run_id)[0].finish()
        await bot.hub.query.wait(run.run_id)
        await double.click(None, "Run now", user="UALICE", channel=C1, buttons=buttons)
        await double.wait_for(lambda d: any("Started run" in t for t in d.ephemerals_for("UALICE")))
        assert len(bot.store.list_runs()) == 2 and len(double.roots(C1)) == 2
        # Bob may not touch Alice's routine (an admin-less channel: only its owner may)
        await double.click(None, "Delete", user="UBOB", channel=C1, buttons=buttons)
        await double.wait_for(lambda d: any("owner" in t for t in d.ephemerals_for("UBOB")))
        assert bot.hub.query.routines()
        await double.click(None, "Delete", user="UALICE", channel=C1, buttons=buttons)
        await double.wait_for(lambda d: any("deleted" in t for t in d.ephemerals_for("UALICE")))
        assert bot.hub.query.routines() == []


async def test_at_a_time_is_a_one_off_and_bad_input_says_what_is_accepted(tmp_path: Path) -> None:
    clock = Clock(FRIDAY)
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double, wall_clock=clock,
                                                  transport=LocalTransport(KitDouble())) as bot:  # type: ignore[arg-type]
        double.zones["UALICE"] = "Europe/Berlin"  # 23:00 there: 22:00 is tomorrow
        await double.slash("/flower", "at 22:00 run the long migration test", user="UALICE", channel=C1)
        await double.wait_for(lambda d: d.responses)
        assert re.search(r"next 2026-12-05T22:00:00\+01:00", double.responses[-1]["text"]), double.responses[-1]
        [info] = bot.hub.query.routines()
        assert info.routine.task == "run the long migration test" and info.routine.said == "at 22:00"

        await double.slash("/flower", "every 10 seconds poll", user="UALICE", channel=C1)
        await double.wait_for(lambda d: len(d.responses) >= 2)
        assert "under a minute" in double.responses[-1]["text"]
        await double.slash("/flower", "at 2020-01-01 09:00 too late", user="UALICE", channel=C1)
        await double.wait_for(lambda d: len(d.responses) >= 3)
        assert "in the past" in double.responses[-1]["text"]
        assert len(bot.hub.query.routines()) == 1  # nothing more saved

        bot.store.set_channel_policy(f"slack:{C1}", ChannelPolicy(starters={"UALICE"}))
        await double.slash("/flower", "every day at 9:00 sneak", user="UMALLORY", channel=C1)
        await double.wait_for(lambda d: d.ephemerals_for("UMALLORY"))
        assert "not allowed" in double.ephemerals_for("UMALLORY")[0]
        assert len(bot.hub.query.routines()) == 1
        # per-run options may come first, as for a start
        await double.slash("/flower", "budget=2 asks=1 every monday at 8:30 plan the week", user="UALICE",
                           channel=C1)
        await double.wait_for(lambda d: len(bot.hub.query.routines()) == 2)
        planned = next(i.routine for i in bot.hub.query.routines() if i.routine.task == "plan the week")
        assert planned.schedule == "30 8 * * 1" and '"budget_usd": 2.0' in planned.options
        assert '"max_asks": 1' in planned.options
        empty = await double.slash("/flower", "routines", user="UALICE", channel="C0000009")
        assert empty is not None and "No routines in this channel" in empty["text"]
