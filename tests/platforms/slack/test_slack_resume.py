"""Slack: `/flower resume <run id> [words]` in another channel shows an ended run in a new thread there and,
with words, starts its next round, which that thread shows from its first line; refusals (an unknown run,
someone who may not act on it) are told to the caller alone and change nothing.

The real AsyncApp + Socket Mode against the Slack double, the real SDK + CLI against the model double.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import ChannelPolicy
from tests.conftest import scenario_of
from tests.support.campaign.tally import session_id
from tests.support.hub_support import ask_call
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, card, root_of, slack_bot

C2 = "C0000002"
NAMES = {"UALICE": "Alice", "UBOB": "Bob", "UMALLORY": "Mallory"}
MORE = "also add a --json flag"


def scenario() -> Any:
    return scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "One question.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Round one: {last_tool_result}."},
        {"say": "Round two: {last_user_text}", "call": [ask_call("JSON or YAML?", ["json", "yaml"])]},
        {"say": "Round two: {last_tool_result}."},
    ]})


async def test_resume_in_another_channel_mirrors_an_ended_run_and_continues_it(double_factory: Any, cli_home: Path,
                                                                              tmp_path: Path) -> None:
    md = await double_factory(scenario())
    async with SlackDouble(names=NAMES) as double, slack_bot(tmp_path, md, cli_home, double) as bot:
        bot.store.set_channel_policy(f"slack:{C1}", ChannelPolicy(responders={"UBOB"}))
        assert await double.slash("/flower", "write a tool", user="UALICE", channel=C1) is None
        q1 = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Tabs or spaces?"))
        home = root_of(double).ts
        run = bot.store.run_for_thread(bot.frontend.ctx.thread(C1, home))
        assert run is not None
        await double.click(q1, "tabs", user="UALICE")
        await bot.hub.query.wait(run)
        asked = len(md.model_requests())

        # Refusals: told to the caller alone; no root in C2, no mirror, no round.
        assert await double.slash("/flower", "resume rnothing1 go on", user="UALICE", channel=C2) is None
        await double.wait_for(lambda d: any("No run rnothing1" in r["text"] for r in d.responses))
        assert await double.slash("/flower", f"resume {run} {MORE}", user="UMALLORY", channel=C2) is None
        await double.wait_for(lambda d: any(f"You cannot resume run {run}" in r["text"] for r in d.responses))
        usage = await double.slash("/flower", "resume", user="UALICE", channel=C2)
        assert usage is not None and "/flower resume &lt;run id&gt;" in usage["text"]
        assert double.roots(C2) == [] and bot.store.mirrors_of(run) == []
        assert bot.store.get_run(run).round == 1 and len(md.model_requests()) == asked  # type: ignore[union-attr]

        # Bob resumes it in C2 with words: round 2, shown in the new thread and at home.
        assert await double.slash("/flower", f"resume {run} {MORE}", user="UBOB", channel=C2) is None
        q2 = await double.wait_for(lambda d: d.roots(C2) and card(d, C2, root_of(d, C2).ts, "JSON or YAML?"))
        there = root_of(double, C2).ts
        await double.wait_for(lambda d: card(d, C1, home, "JSON or YAML?"))  # at home too
        assert double.find(C2, there, lambda m: "continued the run, round 2" in m.body()) is not None
        await double.click(q2, "yaml", user="UBOB")  # answered from the resumed thread
        await double.wait_for(lambda d: d.find(C1, home, lambda m: "Round two: yaml." in m.body()))
        await double.wait_for(lambda d: bot.store.get_run(run).status == "done")  # type: ignore[union-attr]
        await bot.hub.query.wait(run)
        later = md.model_requests()[asked:]
        assert MORE in later[0].last_user_text
        assert {session_id(r) for r in md.model_requests()} == {session_id(later[0])}  # one session, both rounds

        # A resume without words into a third channel only shows it; a reply there continues it.
        c3 = "C0000003"
        assert await double.slash("/flower", f"resume {run}", user="UALICE", channel=c3) is None
        await double.wait_for(lambda d: any("a reply in this thread continues it" in r["text"] for r in d.responses))
        third = root_of(double, c3).ts
        assert bot.store.get_run(run).round == 2  # type: ignore[union-attr]
        await double.say(c3, "and a README", user="UALICE", thread_ts=third)
        await double.wait_for(lambda d: d.find(c3, third, lambda m: "Heard: and a README" in m.body()))
        await double.wait_for(lambda d: bot.store.get_run(run).status == "done")  # type: ignore[union-attr]
        await bot.hub.query.wait(run)
        assert bot.store.get_run(run).round == 3  # type: ignore[union-attr]
