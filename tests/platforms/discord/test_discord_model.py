"""Model and effort on Discord: real discord.py against the Discord double, the real CLI on the model double.

`/flower run task:… model:… effort:…` starts a run whose requests carry both; `/flower model name:…` in its
thread while its question waits switches the model from the next request; a model the channel does not
allow is refused and changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.hub import Chosen
from adapters.state import MemoryStateStore
from tests.conftest import scenario_of
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, open_card, start_bot, stop_bot

__all__ = ["discord_double"]

OPUS, SONNET = "claude-opus-4-6", "claude-sonnet-4-6"


def sent(md: Any) -> list[tuple[str, Any]]:
    return [(r.body["model"], (r.body.get("output_config") or {}).get("effort"))
            for r in md.model_requests() if r.body.get("tools")]


async def test_model_and_effort_from_the_command_and_in_the_thread(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path,
                                                                   discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "after_end": "Going with {last_tool_result}.", "turn": [
        {"say": "One question.", "call": [{"tool": "mcp__human__ask",
                                            "input": {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}}]},
    ]}))
    store = MemoryStateStore()
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, models=(OPUS, SONNET))
    try:
        alice = d.person("Alice")
        started = await d.slash(alice, "run", task="pick one", model=OPUS, effort="low")
        await d.until(lambda _: any("Started run" in t for t in started.texts()))
        m = re.search(r"`(r\w+)`", started.texts()[-1])
        assert m is not None
        run_id = m.group(1)
        thread = int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])
        card = await d.until(lambda _: open_card(d, thread, "Tabs or spaces?"))
        assert sent(md) == [(OPUS, "low")]

        refused = await d.slash(alice, "model", channel_id=thread, name="claude-nonesuch")
        await d.until(lambda _: refused.texts())
        assert "not allowed" in refused.texts()[-1]
        changed = await d.slash(alice, "model", channel_id=thread, name=SONNET)
        await d.until(lambda _: changed.texts())
        assert SONNET in changed.texts()[-1]
        effort = await d.slash(alice, "effort", level="high", run=run_id)
        await d.until(lambda _: effort.texts())
        assert "effort high" in effort.texts()[-1]
        assert hub.query.model(run_id) == Chosen(SONNET, "high")

        click = await d.click(alice, int(card["id"]), label="spaces")
        await d.until(lambda _: click.acked)
        await hub.query.wait(run_id)
        assert sent(md)[1:] and {mo for mo, _ in sent(md)[1:]} == {SONNET}
    finally:
        await stop_bot(bridge, hub)
