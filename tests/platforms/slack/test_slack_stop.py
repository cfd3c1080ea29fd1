"""Stopping from Slack, every way: `/stop` with several runs lists them with Stop buttons, the stop
modal interrupts (the run goes on with the words) or ends a run, the "Interrupt this run" shortcut
and the status card's Stop button open it; a question left waiting reaches its owner's DM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import scenario_of
from tests.support.hub_support import ask_call
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, card, slack_bot

# Every later turn asks again, so a run only ends when the test stops it, however slow the machine.
HEARD = {"say": "Heard: {last_user_text}", "call": [ask_call("Still there?", ["yes"])]}


async def test_stop_list_modal_shortcut_and_status_button(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "Asking.", "call": [ask_call("Proceed?", ["yes", "no"])]}, *[HEARD] * 6]}))
    # park_after_s=20: the runs keep their CLIs while the test reads their cards (parking is not what it checks).
    async with SlackDouble(names={"UALICE": "Alice"}) as double, \
            slack_bot(tmp_path, md, cli_home, double, dm_after_s=0.2, park_after_s=20.0) as bot:
        # One run from /flower (its card is the root), one from a mention inside a person's thread.
        await double.slash("/flower", "first task here", user="UALICE", channel=C1)
        plan = await double.say(C1, "let's plan the second thing", user="UALICE")
        await double.say(C1, "<@UBOT> second task here", user="UALICE", thread_ts=plan.ts, mention=True)
        first = await double.wait_for(lambda d: next((r for r in d.roots(C1) if r.bot), None), 60)
        second = plan
        await double.wait_for(lambda d: card(d, C1, first.ts, "Proceed?") and card(d, C1, second.ts, "Proceed?"), 60)
        assert [r.ts for r in double.roots(C1)] == [first.ts, plan.ts]  # the mention's run lives in that thread
        assert double.thread(C1, plan.ts)[2].header().startswith(("⏳", "▶️", "❓"))  # its status card, a reply
        runs = {r.ts: bot.store.run_for_thread(bot.frontend.ctx.thread(C1, r.ts)) for r in (first, second)}
        # A mention inside a run's thread is for that run (mail), not a new run.
        mail = await double.say(C1, "<@UBOT> also count bytes", user="UALICE", thread_ts=plan.ts, mention=True)
        await double.wait_for(lambda d: d.reactions.get((C1, mail.ts)) == ["incoming_envelope"])
        assert len(bot.store.list_runs()) == 2

        # A question left waiting goes to its owner's DM too (one card there, answerable).
        dm = await double.wait_for(lambda d: [m for m in d.messages.values() if m.channel.startswith("D")
                                              and m.buttons()], 30)
        assert dm[0].channel == "DALICE" and "is waiting on this question" in dm[0].body()

        # /stop with two runs of hers: a list, each with a Stop button carrying the message.
        ack = await double.slash("/stop", "use tabs", user="UALICE", channel=C1)
        assert ack is not None and "several runs" in ack["text"]
        buttons = [e for b in ack["blocks"] if b["type"] == "actions" for e in b["elements"]]
        assert len(buttons) == 2 and all(b["value"] == "use tabs" for b in buttons)
        mine = next(b for b in buttons if runs[first.ts] in b["action_id"])
        await double.click(None, mine["action_id"], user="UALICE", channel=C1, buttons=buttons)
        view_id = await double.wait_for(lambda d: next(iter(d.views), None))
        prefilled = double.views[view_id]["blocks"]
        assert any(b.get("element", {}).get("initial_value") == "use tabs" for b in prefilled)
        await double.submit(view_id, user="UALICE", text="use tabs", end=False)
        await md.wait_for(lambda reqs: any("use tabs" in r.last_user_text for r in reqs), timeout=60)
        heard = next(r for r in md.requests if "use tabs" in r.last_user_text)
        assert "first task here" in heard.first_user_text  # the run she picked, in its own session
        said = await double.wait_for(lambda d: [e for e in d.ephemerals_for("UALICE") if "Interrupted" in e])
        assert said

        # The shortcut on a message of the second run's thread: the same modal; ticked, it ends the run.
        q = card(double, C1, second.ts, "Proceed?")
        assert q is not None
        await double.shortcut(q, user="UALICE")
        shortcut_view = await double.wait_for(lambda d: next((v for v in d.views if v != view_id), None))
        await double.submit(shortcut_view, user="UALICE", end=True)
        await bot.hub.query.wait(runs[second.ts])
        stopped = await double.wait_for(
            lambda d: d.find(C1, second.ts, lambda m: m.header().startswith("⏹️ Stopped by")))
        assert "alice" in stopped.header().lower() and bot.store.get_run(runs[second.ts]).status == "stopped"

        # The status card's Stop button on the first run: the modal again, ticked.
        await double.click(first, "Stop", user="UALICE")
        third = await double.wait_for(lambda d: next((v for v in d.views if v not in (view_id, shortcut_view)), None))
        await double.submit(third, user="UALICE", end=True)
        await bot.hub.query.wait(runs[first.ts])
        assert bot.store.get_run(runs[first.ts]).status == "stopped"
        assert not bot.hub.live
