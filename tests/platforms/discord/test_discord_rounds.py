"""Discord: a message in the thread of a run that has ended starts its next round, in the same session.

Real discord.py against the Discord double, the real SDK + CLI against the model double.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.state import ChannelPolicy, MemoryStateStore
from tests.conftest import scenario_of
from tests.support.campaign.tally import session_id, user_side
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, open_card, option_flow, settled_card, start_bot, stop_bot
from tests.support.hub_support import ask_call

__all__ = ["discord_double"]

MORE = "also add a --json flag"


async def test_a_message_in_an_ended_runs_thread_continues_it(double_factory: Any, cli_home: Path, tmp_path: Path,
                                                             discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "after_end": "Round two: {last_tool_result}.", "turn": [
        {"say": "One question.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Round one: {last_tool_result}."},
        {"say": "Round two: {last_user_text}", "call": [ask_call("JSON or YAML?", ["json", "yaml"])]},
    ]}))
    alice, bob = d.person("Alice"), d.person("Bob")
    store = MemoryStateStore()
    store.set_channel_policy(f"discord:{d.channel_id}", ChannelPolicy(responders={str(bob.id)}))
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, factory=option_flow())
    try:
        started = await d.slash(alice, "run", task="write a tool", timeout=300)
        await d.until(lambda _: any("Started run" in t for t in started.texts()))
        m = re.search(r"`(r\w+)`", started.texts()[-1])
        assert m is not None
        run_id = m.group(1)
        thread = int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])
        q1 = await d.until(lambda _: open_card(d, thread, "Tabs or spaces?"))
        await d.click(alice, int(q1["id"]), label="tabs")
        await hub.query.wait(run_id)
        await d.until(lambda _: d.messages[thread]["embeds"][0]["title"].startswith("✅"))
        asked = len(md.model_requests())

        await d.say(bob, thread, MORE)  # a responder's plain message: round 2
        q2 = await d.until(lambda _: open_card(d, thread, "JSON or YAML?"))
        status = await d.until(lambda _: "round 2" in d.messages[thread]["embeds"][0]["title"] and d.messages[thread])
        assert d.labels(status) == ["Interrupt…", "Ask the oracle…", "Stop"]
        assert settled_card(d, thread, "Tabs or spaces?") is not None  # round 1's card is left as it was
        await d.click(bob, int(q2["id"]), label="json")
        await d.until(lambda _: settled_card(d, thread, "JSON or YAML?"))
        await d.until(lambda _: store.get_run(run_id).status == "done")  # type: ignore[union-attr]
        await hub.query.wait(run_id)

        record = store.get_run(run_id)
        assert record is not None and record.round == 2
        later = md.model_requests()[asked:]
        assert later and later[0].last_user_text == MORE
        assert "Round one: tabs." in str(later[0].body.get("messages"))
        assert {session_id(r) for r in md.model_requests()} == {session_id(later[0])}
        assert user_side(later[-1]).count(MORE) == 1 and later[-1].last_tool_result == "json"
        listed = await d.slash(alice, "runs")  # the channel's runs, ended ones with their round
        await d.until(lambda _: listed.original is not None and listed.original["content"])
        assert listed.original is not None and f"`{run_id}` done (round 2) <#{thread}>" in listed.original["content"]
    finally:
        await stop_bot(bridge, hub)
