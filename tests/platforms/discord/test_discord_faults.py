"""The Discord bridge under faults: a dropped gateway, a bot restart between ask and click, 429s."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.hub.runs import KEPT
from adapters.state import MemoryStateStore, SQLiteStateStore
from tests.conftest import scenario_of
from tests.hub.test_hub_restart import RESUME, two_step_scenario
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, message_with, open_card, settled_card, start_bot, stop_bot
from tests.support.hub_support import INBOX, ask_call, kill_cli_children, one_step_flow, transcript_has

__all__ = ["discord_double"]


# Over 2,000 characters, most of it inside one code fence.
LONG = "The script:\n```python\n" + "\n".join(f"print({i})  # step {i} of the long listing" for i in range(90)) \
    + "\n```\nThat is all."


async def started_run(d: DiscordDouble, person: Any, task: str) -> tuple[str, int]:
    """/flower run in #general; the run id and its thread id."""
    ix = await d.slash(person, "run", task=task)
    await d.until(lambda _: any("Started run" in t for t in ix.texts()))
    m = re.search(r"`(r\w+)` in <#(\d+)>", ix.texts()[-1])
    assert m is not None, ix.texts()
    return m.group(1), int(m.group(2))


async def no_wait(shard_id: int | None, *, initial: bool = False) -> None:
    return None


async def test_a_dropped_gateway_resumes_and_loses_nothing(double_factory: Any, cli_home: Path, tmp_path: Path,
                                                           discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done: {last_tool_result}", "turn": [
        {"say": "Colour?", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour: {last_tool_result}. Inbox?", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}", "call": [ask_call("Ready?", ["yes", "no"])]},
    ]}))
    alice = d.person("Alice")
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, MemoryStateStore())
    try:
        run_id, thread = await started_run(d, alice, "colours")
        q1 = await d.until(lambda _: open_card(d, thread, "Which colour?"))

        # The connection drops and stays down a while; a message and a click happen meanwhile.
        await d.gateway.drop(hold=True)
        await d.until(lambda _: not d.gateway.connected)
        mail = await d.say(alice, thread, "note this")
        click = await d.click(alice, int(q1["id"]), label="red")
        assert click.sent_at is None  # nothing reached the bot yet
        d.gateway.reopen()
        await d.until(lambda _: d.gateway.resumes == 1 and d.gateway.connected)
        assert d.gateway.identifies == 1  # resumed the same session: the missed dispatches were replayed
        await d.until(lambda _: settled_card(d, thread, "Which colour?"))
        await d.gateway.dispatch("MESSAGE_CREATE", d.messages[mail])  # the same message delivered twice

        # The session is lost this time: a fresh identify, and the bot still works. (discord.py waits 5 s
        # before any identify but the first, to respect Discord's identify budget; not here.)
        bridge.client.before_identify_hook = no_wait  # type: ignore[method-assign]
        q2 = await d.until(lambda _: open_card(d, thread, "Ready?"))
        await d.gateway.drop(resumable=False)
        await d.until(lambda _: d.gateway.identifies == 2 and d.gateway.connected)
        await d.click(alice, int(q2["id"]), label="yes")
        await hub.query.wait(run_id)
    finally:
        await stop_bot(bridge, hub)
    main = md.model_requests("main")
    assert main[1].last_tool_result == "red" and main[3].last_tool_result == "yes"
    assert main[2].last_tool_result.count("note this") == 1
    assert d.reactions_on(mail) == ["📬"]  # (📨 first, unless it was still queued when the mail was delivered)
    assert message_with(d, thread, "Done: yes") is not None
    assert all(ix.acked and not ix.late for ix in d.interactions.values())


async def test_a_bot_restart_between_ask_and_click_still_delivers_the_answer(
        double_factory: Any, cli_home: Path, tmp_path: Path, discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(two_step_scenario())
    alice = d.person("Alice")
    factory = one_step_flow(steps=("prep", "ask"), resume_prompt=RESUME)
    store_a = SQLiteStateStore(tmp_path / "state.db")
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store_a, factory=factory)
    try:
        run_id, thread = await started_run(d, alice, "pick sizes")
        q1 = await d.until(lambda _: open_card(d, thread, "Which colour?"))
        await d.click(alice, int(q1["id"]), label="blue")
        q2 = await d.until(lambda _: open_card(d, thread, "Which size?"))
        await transcript_has(hub.live[run_id], "ask", "Which size?")
        assert kill_cli_children()  # the agent's CLI dies with the bot, mid-question
    finally:
        await stop_bot(bridge, hub)
        store_a.close()

    # A new process: a new discord.py client, the same state on disk.
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, SQLiteStateStore(tmp_path / "state.db"),
                                  factory=factory)
    try:
        assert await hub.recover() == []  # it comes back by itself
        await d.until(lambda _: d.messages[thread]["embeds"][0]["title"].startswith("🅿️"))
        await d.until(lambda _: KEPT in d.text(d.messages[int(q2["id"])]))  # restored on the old card
        click = await d.click(alice, int(q2["id"]), label="L")  # the card the old process posted
        await d.until(lambda _: click.acked)  # an answer is acknowledged by the card, not a line
        await hub.query.wait(run_id)
    finally:
        await stop_bot(bridge, hub)
    card = settled_card(d, thread, "Which size?")
    assert card is not None and card["embeds"][0]["title"] == "✅ Answered by Alice"
    assert "Answer: L" in d.text(card) and KEPT in d.text(card)
    assert message_with(d, thread, "Size: L") is not None
    resumed = [r for r in md.model_requests("ask") if r.last_tool_result == "L"]
    assert resumed and not any(RESUME in r.last_user_text for r in md.model_requests("ask"))
    assert d.gateway.identifies == 2  # two processes, two sessions
    assert all(ix.acked and not ix.late for ix in d.interactions.values())


async def test_429s_on_message_create_and_edit_lose_nothing_and_keep_order(
        double_factory: Any, cli_home: Path, tmp_path: Path, discord_double: DiscordDouble) -> None:
    d = discord_double
    turns: list[dict[str, Any]] = [{"say": f"Line {i}.", "call": [{"tool": "Read", "input": {"file_path": f"f{i}"}}]}
                                   for i in range(6)]
    turns.insert(3, {"say": "Line q.", "call": [ask_call("Go on?", ["yes"])]})
    turns.insert(5, {"say": LONG, "call": [{"tool": "Read", "input": {"file_path": "long"}}]})
    md = await double_factory(scenario_of({"name": "main", "after_end": "Line end.", "turn": turns}))
    alice = d.person("Alice")
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, MemoryStateStore())
    try:
        # discord.py itself retries a 429 up to 5 times; past that the outbox waits and tries again.
        d.fail("POST", r"/channels/\d+/messages", times=3, retry_after=0.05)
        d.fail("PATCH", r"/channels/\d+/messages/\d+", times=8, retry_after=0.05)
        run_id, thread = await started_run(d, alice, "storm")
        d.fail("POST", r"/channels/\d+/messages", times=8, retry_after=0.05)
        card = await d.until(lambda _: open_card(d, thread, "Go on?"))
        d.fail("POST", r"/channels/\d+/messages", times=4, retry_after=0.05)
        d.fail("PATCH", r"/channels/\d+/messages/\d+", times=2, retry_after=0.05)
        await d.click(alice, int(card["id"]), label="yes")
        live = await hub.query.wait(run_id)
        assert live is not None and live.pipe.fanout.stats.dropped == 0
        assert live.pipe.fanout.stats.retries > 0  # some 429s outlasted discord.py's own retries
    finally:
        await stop_bot(bridge, hub)
    assert len([c for c in d.calls if c.status == 429]) == 25  # every injected 429 was met, and survived
    texts = [d.text(m) for m in d.bot_messages(thread)]
    prose = "\n\n".join(t for t in texts if t.startswith("Line "))
    expected = [f"Line {i}." for i in range(3)] + ["Line q.", "Line 3."] + [f"Line {i}." for i in range(4, 6)]
    assert prose == "\n\n".join([*expected, "Line end."])  # bursts may share a post; nothing lost or reordered
    # The long text: cut at 2,000 characters, every part a well-formed fence of its own.
    long_parts = [m["content"] for m in d.bot_messages(thread) if "print(" in m["content"]]
    assert len(long_parts) >= 2 and all(len(t) <= 2000 and t.count("```") % 2 == 0 for t in long_parts)
    joined = "\n".join(long_parts)
    assert all(f"print({i})" in joined for i in range(90)) and "That is all." in joined
    at = {k: next(i for i, t in enumerate(texts) if k in t) for k in ("Line q.", "Go on?", "Line 3.")}
    assert at["Line q."] < at["Go on?"] < at["Line 3."]
    assert settled_card(d, thread, "Go on?") is not None
    assert d.messages[thread]["embeds"][0]["title"].startswith("✅ Done")
