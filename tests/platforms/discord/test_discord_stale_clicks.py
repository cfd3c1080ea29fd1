"""Discord: a click on a card that no longer takes an answer is always answered, with the hub's line.

Real discord.py against the Discord double, the real SDK + CLI against the model double, and a second
bridge + hub over the same state (SQLite store, run directories) standing in for a restart. Bob's screen
still shows every card's buttons; each of his clicks gets one ephemeral line, again on a second click.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from adapters.state import SQLiteStateStore
from tests.conftest import scenario_of
from tests.support.discord_double import DiscordDouble
from tests.support.discord_payloads import Person
from tests.support.discord_support import discord_double, open_card, settled_card, start_bot, stop_bot
from tests.support.drive import drive
from tests.support.hub_support import ask_call, transcript_has

__all__ = ["discord_double"]

ENDED = "This run has ended (stopped); its questions are closed."


def scenario() -> Any:
    """Two questions in one session; the second one waits across the restart."""
    return scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "One question first.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Got {last_tool_result}. One more.", "call": [ask_call("Dark or light?", ["dark", "light"])]},
    ]})


async def click_told(d: DiscordDouble, person: Person, card: dict[str, Any], label: str) -> str:
    """`person` clicks `card` as their screen still shows it; the one line they were shown."""
    ix = await d.click(person, int(card["id"]), label=label, seen=card)
    await d.until(lambda _: ix.texts(), timeout=30)
    assert len(ix.texts()) == 1 and ix.acked and not ix.late, ix.texts()
    return ix.texts()[0]


async def test_stale_clicks_are_answered_before_and_after_a_restart(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path,
                                                                    discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario())
    alice, bob = d.person("Alice"), d.person("Bob")
    store = SQLiteStateStore(tmp_path / "state.db")
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store)
    try:
        started = await d.slash(alice, "run", task="pick a style")
        await d.until(lambda _: any("Started run" in t for t in started.texts()))
        m = re.search(r"`(r\w+)` in <#(\d+)>", started.texts()[-1])
        assert m is not None
        run_id, thread = m.group(1), int(m.group(2))
        q1 = copy.deepcopy(await d.until(lambda _: open_card(d, thread, "Tabs or spaces?")))
        await d.click(alice, int(q1["id"]), label="tabs")
        await d.until(lambda _: settled_card(d, thread, "Tabs or spaces?"))
        answered = "That question is already settled (answered by Alice)."
        assert await click_told(d, bob, q1, "spaces") == answered  # answered elsewhere
        assert await click_told(d, bob, q1, "spaces") == answered  # and again, a moment later
        q2 = copy.deepcopy(await d.until(lambda _: open_card(d, thread, "Dark or light?")))
        await transcript_has(hub.live[run_id], "ask", "Dark or light?")
    finally:
        await stop_bot(bridge, hub)
        store.close()

    # A new process: a new discord.py client, the same state on disk; the run comes back by itself.
    store = SQLiteStateStore(tmp_path / "state.db")
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store)
    try:
        assert await hub.recover() == []
        await d.until(lambda _: d.messages[thread]["embeds"][0]["title"].startswith("🅿️"))
        # Names are not kept across a restart (adapters/people.py): Alice is her id, shown as a mention.
        by_id = f"That question is already settled (answered by <@{alice.id}>)."
        assert await click_told(d, bob, q1, "tabs") == by_id  # a card from before the restart
        assert (await drive(hub).stop(run_id, str(alice.id))).ok
        await hub.query.wait(run_id)
        await d.until(lambda _: settled_card(d, thread, "Dark or light?"))
        assert await click_told(d, bob, q2, "dark") == ENDED  # the run has ended
        assert await click_told(d, bob, q2, "light") == ENDED
        assert await click_told(d, alice, q1, "tabs") == answered  # Alice herself (named again: she acted)
    finally:
        await stop_bot(bridge, hub)
        store.close()
    assert all(ix.acked and not ix.late for ix in d.interactions.values())
