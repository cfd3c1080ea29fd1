"""Discord streaming end to end: the real discord.py bridge against the Discord double, the real SDK + CLI
against a model double that writes slowly: the message grows by edits, the plan is a checklist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.discord_bridge.surface import CURSOR
from adapters.state import MemoryStateStore
from tests.conftest import scenario_of
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, message_with, option_flow, start_bot, stop_bot
from tests.support.hub_support import FAST

__all__ = ["discord_double"]

WORDS = " ".join(f"word{i}" for i in range(80)) + "."
TODOS = [{"content": "Read the notes", "status": "in_progress", "activeForm": "Reading"},
         {"content": "Sum them up", "status": "pending", "activeForm": "Summing up"}]


async def test_a_reply_grows_by_edits_and_the_plan_is_a_checklist(
        double_factory: Any, cli_home: Path, tmp_path: Path, discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Planning.", "stream": True, "call": [{"tool": "TodoWrite", "input": {"todos": TODOS}}]},
        {"say": WORDS, "stream": {"words": 2, "pause_s": 0.05},
         "call": [{"tool": "TodoWrite", "input": {"todos": [dict(t, status="completed") for t in TODOS]}}]},
        {"say": "Done."},
    ]}))
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, MemoryStateStore(), factory=option_flow(),
                                  runtime_options={"resilience": FAST, "partial_text": True})
    try:
        alice = d.person("Alice")
        await d.slash(alice, "run", task="plan and write", timeout=300)
        starter = await d.until(lambda _: next((m for m in d.bot_messages(d.channel_id) if "thread" in m), None))
        thread = int(starter["id"])
        growing = await d.until(lambda _: (m := message_with(d, thread, "word1 ")) and CURSOR in d.text(m)
                                and d.text(m))
        assert WORDS.startswith(growing.removesuffix(CURSOR)) and growing.removesuffix(CURSOR) != WORDS
        await d.until(lambda _: (m := message_with(d, thread, "word1 ")) and d.text(m).startswith(WORDS)
                      and CURSOR not in d.text(m))
        plan = await d.until(lambda _: (m := message_with(d, thread, "**Plan**")) and "☑ Sum them up" in d.text(m)
                             and d.text(m))
        assert plan.splitlines() == ["**Plan**", "☑ Read the notes", "☑ Sum them up"]  # edited in place
        assert len([m for m in d.bot_messages(thread) if "**Plan**" in d.text(m)]) == 1
    finally:
        await stop_bot(bridge, hub)
