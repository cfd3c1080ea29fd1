"""Discord: `/flower resume run:<id> [text]` in another channel opens a thread there that shows an ended run and,
with text, starts its next round; `/flower runs all:True` lists the caller's ended runs with links to their
threads; refusals (an unknown run, someone who may not act on it) are told to the caller alone and post nothing.

Real discord.py against the Discord double, the real SDK + CLI against the model double.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.state import ChannelPolicy, MemoryStateStore
from tests.conftest import scenario_of
from tests.support import discord_payloads as pl
from tests.support.campaign.tally import session_id
from tests.support.discord_double import DiscordDouble
from tests.support.discord_payloads import snowflake
from tests.support.discord_support import discord_double, open_card, option_flow, start_bot, stop_bot
from tests.support.hub_support import ask_call

__all__ = ["discord_double"]

MORE = "also add a --json flag"


def answer_of(ix: Any) -> str:
    return str(ix.original["content"]) if ix.original is not None and ix.original.get("content") else ""


async def test_resume_elsewhere_continues_an_ended_run_and_runs_all_lists_it(double_factory: Any, cli_home: Path,
                                                                            tmp_path: Path,
                                                                            discord_double: DiscordDouble) -> None:
    d = discord_double
    other = snowflake()
    d.channels[other] = pl.text_channel(other, d.guild_id, "other")  # before the bot connects: in its guild
    md = await double_factory(scenario_of({"name": "main", "after_end": "Round two: {last_tool_result}.", "turn": [
        {"say": "One question.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Round one: {last_tool_result}."},
        {"say": "Round two: {last_user_text}", "call": [ask_call("JSON or YAML?", ["json", "yaml"])]},
    ]}))
    alice, bob, mallory = d.person("Alice"), d.person("Bob"), d.person("Mallory")
    store = MemoryStateStore()
    store.set_channel_policy(f"discord:{d.channel_id}", ChannelPolicy(responders={str(bob.id)}))
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, factory=option_flow())
    try:
        started = await d.slash(alice, "run", task="write a tool", timeout=300)
        await d.until(lambda _: any("Started run" in t for t in started.texts()))
        m = re.search(r"`(r\w+)`", started.texts()[-1])
        assert m is not None
        run_id = m.group(1)
        home = int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])
        q1 = await d.until(lambda _: open_card(d, home, "Tabs or spaces?"))
        await d.click(alice, int(q1["id"]), label="tabs")
        await hub.query.wait(run_id)
        asked = len(md.model_requests())

        listed = await d.slash(alice, "runs", channel_id=other, all=True)
        text = await d.until(lambda _: answer_of(listed))
        assert "No runs in this channel yet" in text and "Your runs that have ended" in text, text
        assert f"`{run_id}` done <#{home}>" in text, text
        mine = await d.slash(bob, "runs", channel_id=other, all=True)  # Bob started none
        assert "No ended runs of yours." in await d.until(lambda _: answer_of(mine))

        refused = await d.slash(alice, "resume", channel_id=other, run="rnothing1", text="go on")
        assert "No run rnothing1" in await d.until(lambda _: answer_of(refused))
        outsider = await d.slash(mallory, "resume", channel_id=other, run=run_id, text=MORE)
        assert f"You cannot resume run {run_id}" in await d.until(lambda _: answer_of(outsider))
        assert d.bot_messages(other) == [] and store.mirrors_of(run_id) == []
        assert store.get_run(run_id).round == 1 and len(md.model_requests()) == asked  # type: ignore[union-attr]

        resumed = await d.slash(bob, "resume", channel_id=other, run=run_id, text=MORE)
        said = await d.until(lambda _: answer_of(resumed))
        assert "round 2" in said, said
        there = int(next(msg for msg in d.bot_messages(other) if "thread" in msg)["id"])
        q2 = await d.until(lambda _: open_card(d, there, "JSON or YAML?"))  # the round shows in the new thread
        await d.until(lambda _: open_card(d, home, "JSON or YAML?"))  # and at home
        await d.click(bob, int(q2["id"]), label="yaml")
        await d.until(lambda _: store.get_run(run_id).status == "done")  # type: ignore[union-attr]
        await hub.query.wait(run_id)
        later = md.model_requests()[asked:]
        assert later and later[0].last_user_text == MORE and later[-1].last_tool_result == "yaml"
        assert {session_id(r) for r in md.model_requests()} == {session_id(later[0])}  # one session
        assert store.get_run(run_id).round == 2  # type: ignore[union-attr]
    finally:
        await stop_bot(bridge, hub)
