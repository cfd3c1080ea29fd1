"""Tool approvals on Discord: real discord.py against the Discord double, the real CLI on the model double.

`/flower run task:… approve:bash` makes the agent's Bash call a 🔐 card in the run's thread; "Allow
once" runs the command once and the card says who allowed it; a malformed list is refused before a
thread is opened.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from bots.flows import single_flow
from tests.conftest import scenario_of
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, open_card, start_bot, stop_bot

__all__ = ["discord_double"]

EFFECT = "echo ran >> effect.txt; echo out=42"


async def test_approve_bash_asks_on_a_card_and_allow_once_runs_it_once(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path,
                                                                       discord_double: DiscordDouble) -> None:
    d = discord_double
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": EFFECT}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    home = tmp_path / "home"  # the Bash tool sources the user's shell config: give it an empty HOME
    home.mkdir()
    store = MemoryStateStore()
    bridge, hub = await start_bot(d, tmp_path, md, cli_home, store, factory=single_flow,
                                  env={**md.env(cli_home), "HOME": str(home)})
    try:
        alice = d.person("Alice")
        bad = await d.slash(alice, "run", task="run it", approve="Bash(")
        await d.until(lambda _: bad.texts())
        assert "Bad approval list" in bad.texts()[-1] and not store.list_runs()
        assert not [m for m in d.bot_messages(d.channel_id) if "thread" in m]

        started = await d.slash(alice, "run", task="run it", approve="bash")
        await d.until(lambda _: any("Started run" in t for t in started.texts()))
        m = re.search(r"`(r\w+)`", started.texts()[-1])
        assert m is not None
        run_id = m.group(1)
        thread = int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])
        card = await d.until(lambda _: open_card(d, thread, EFFECT))
        assert card["embeds"][0]["title"] == "🔐 The agent wants to run Bash"
        assert d.labels(card) == ["Allow once", "Allow Bash for this run", "Deny…"]
        record = store.get_run(run_id)
        assert record is not None and not (Path(record.workspace) / "effect.txt").exists()

        click = await d.click(alice, int(card["id"]), label="Allow once")
        await d.until(lambda _: click.acked)
        done = await d.until(lambda _: open_card(d, thread, EFFECT) is None and next(
            (x for x in d.bot_messages(thread) if EFFECT in d.text(x) and not x["components"]), None))
        assert done["embeds"][0]["title"] == "✅ Bash allowed once by Alice"
        live = await hub.query.wait(run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (Path(record.workspace) / "effect.txt").read_text() == "ran\n"
        assert md.model_requests()[-1].last_tool_result == "out=42"
    finally:
        await stop_bot(bridge, hub)
