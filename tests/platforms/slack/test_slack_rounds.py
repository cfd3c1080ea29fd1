"""Slack: a reply (or `@flower <text>`) in the thread of a run that has ended starts its next round.

The real AsyncApp + Socket Mode against the Slack double, the real SDK + CLI against the model double.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import ChannelPolicy
from tests.conftest import scenario_of
from tests.support.campaign.tally import session_id, user_side
from tests.support.hub_support import ask_call
from tests.support.slack_double import BOT_USER, SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot

NAMES = {"UALICE": "Alice", "UBOB": "Bob", "UMALLORY": "Mallory"}


def scenario() -> Any:
    """Round 1 asks once; round 2 asks again; round 3 only answers (turns count the whole history)."""
    return scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "One question.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Round one: {last_tool_result}."},
        {"say": "Round two: {last_user_text}", "call": [ask_call("JSON or YAML?", ["json", "yaml"])]},
        {"say": "Round two: {last_tool_result}."},
    ]})


async def test_a_reply_and_a_mention_in_an_ended_runs_thread_continue_it(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    md = await double_factory(scenario())
    async with SlackDouble(names=NAMES, echo_bot_messages=True) as double, \
            slack_bot(tmp_path, md, cli_home, double) as bot:
        bot.store.set_channel_policy(f"slack:{C1}", ChannelPolicy(responders={"UBOB"}))
        assert await double.slash("/flower", "write a tool", user="UALICE", channel=C1) is None
        q1 = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Tabs or spaces?"))
        root = root_of(double)
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, root.ts))
        assert run is not None
        late = double.click_payload(q1, "spaces", user="UBOB")  # Bob's screen will still show the buttons
        await double.click(q1, "tabs", user="UALICE")
        await bot.hub.query.wait(run)
        await double.wait_for(lambda d: root_of(d).header().startswith("✅ Done") and not root_of(d).buttons())
        asked = len(md.model_requests())

        # An outsider's reply: refused to them alone, the run stays ended.
        await double.say(C1, "do something else", user="UMALLORY", thread_ts=root.ts)
        await double.wait_for(lambda d: d.ephemerals_for("UMALLORY"))
        assert bot.store.get_run(run).round == 1 and len(md.model_requests()) == asked  # type: ignore[union-attr]

        # Bob's plain reply: round 2, the same status card going again.
        await double.say(C1, "also add a --json flag", user="UBOB", thread_ts=root.ts)
        q2 = await double.wait_for(lambda d: card(d, C1, root.ts, "JSON or YAML?"))
        status = await double.wait_for(lambda d: "round 2" in root_of(d).header() and root_of(d))
        assert status.buttons() and len(double.roots(C1)) == 1
        await double.send("interactive", late)  # a click on round 1's card: still settled
        await double.wait_for(lambda d: any("already settled" in t for t in d.ephemerals_for("UBOB")))
        await double.click(q2, "json", user="UBOB")
        await double.wait_for(lambda d: card(d, C1, root.ts, "JSON or YAML?", open_=False))
        await double.wait_for(lambda d: bot.store.get_run(run).status == "done")  # type: ignore[union-attr]
        await bot.hub.query.wait(run)

        # `@flower <text>` in the thread: round 3.
        await double.say(C1, f"<@{BOT_USER}> and a README", user="UALICE", thread_ts=root.ts, mention=True)
        await double.wait_for(lambda d: "round 3" in root_of(d).header())
        await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: "Heard: and a README" in m.body()))
        await double.wait_for(lambda d: bot.store.get_run(run).status == "done")  # type: ignore[union-attr]
        await bot.hub.query.wait(run)

        record = bot.store.get_run(run)
        assert record is not None and record.round == 3
        later = md.model_requests()[asked:]
        whole = user_side(md.model_requests()[-1])  # the person's side of all three rounds
        assert whole.count("also add a --json flag") == 1 and whole.count("and a README") == 1  # the mention once
        assert {session_id(r) for r in md.model_requests()} == {session_id(later[0])}  # one session, three rounds
        assert "Round one: tabs." in str(later[0].body.get("messages"))
        summaries = double.find(C1, root.ts, lambda m: m.header() == "✅ Finished")
        assert summaries is not None
