"""Plan first on Discord: real discord.py against the Discord double, the real SDK + CLI on the model double.

`/flower run task:… plan:True` (or `/flower plan task:…`) starts a run in the CLI's plan mode: its early Write is
refused and its plan arrives as a card in the run's thread with three buttons (the double refuses components
outside Discord's limits). "Approve and go" lets the run finish and write its file; "Keep planning…" opens a form
whose words reach the agent, which presents a new plan on a second card.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from bots.flows import single_flow
from flower_core.human.plan_review import APPROVED
from tests.conftest import scenario_of
from tests.support.discord_double import DiscordDouble
from tests.support.discord_interactions import Ix
from tests.support.discord_support import discord_double, start_bot, stop_bot
from tests.support.plan_support import BUTTONS, CARD_TITLE, PLAN, PLAN2, turns, workspace
from tests.support.plan_support import tool_results as results

__all__ = ["discord_double"]

TITLE = CARD_TITLE


def plan_card(d: DiscordDouble, thread: int, needle: str, *, open_: bool = True) -> dict[str, Any] | None:
    """The plan card whose text holds `needle`: open (its buttons) or decided (none)."""
    return next((m for m in d.bot_messages(thread) if needle in d.text(m) and bool(m["components"]) == open_
                 and m["embeds"] and m["embeds"][0]["title"].startswith("📋") == open_), None)


async def bot_for(d: DiscordDouble, tmp_path: Path, md: Any, cli_home: Path, store: MemoryStateStore) -> Any:
    home = tmp_path / "home"  # the CLI reads the user's settings: give it an empty HOME
    home.mkdir(exist_ok=True)
    return await start_bot(d, tmp_path, md, cli_home, store, factory=single_flow,
                           env={**md.env(cli_home), "HOME": str(home)},
                           workspaces={f"discord:{d.channel_id}": workspace(tmp_path)})


async def started(d: DiscordDouble, ix: Ix) -> tuple[str, int]:
    """The run id a start answered with, and its thread."""
    await d.until(lambda _: any("Started run" in t for t in ix.texts()))
    m = re.search(r"`(r\w+)`", ix.texts()[-1])
    assert m is not None
    return m.group(1), int(next(msg for msg in d.bot_messages(d.channel_id) if "thread" in msg)["id"])


async def test_plan_option_shows_the_plan_card_and_approve_and_go_finishes(double_factory: Any, cli_home: Path,
                                                                           tmp_path: Path,
                                                                           discord_double: DiscordDouble) -> None:
    d = discord_double
    notes = workspace(tmp_path) / "notes.txt"
    md = await double_factory(scenario_of({"name": "main", "turn": turns(str(notes))}))
    store = MemoryStateStore()
    bridge, hub = await bot_for(d, tmp_path, md, cli_home, store)
    try:
        alice, bob = d.person("Alice"), d.person("Bob")
        run_id, thread = await started(d, await d.slash(alice, "run", task="write the notes", plan=True))
        card = copy.deepcopy(await d.until(lambda _: plan_card(d, thread, "Write notes.txt")))
        assert card["embeds"][0]["title"] == TITLE and "2. Say done." in d.text(card)
        assert d.labels(card) == BUTTONS and len(card["components"]) == 1  # one row of three
        assert "nothing may change before a person has approved your plan" in results(md)[1]  # the early Write
        assert not notes.exists()

        click = await d.click(alice, int(card["id"]), label="Approve and go")
        await d.until(lambda _: click.acked)
        live = await hub.query.wait(run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo" and APPROVED in results(md)
        settled = await d.until(lambda _: plan_card(d, thread, "Write notes.txt", open_=False))
        assert settled["embeds"][0]["title"] == "✅ Plan approved by Alice — the agent goes on"
        late = await d.click(bob, int(card["id"]), label="Approve, ask before edits", seen=card)
        await d.until(lambda _: late.texts())
        assert "already settled" in late.texts()[0] and "Alice" in late.texts()[0]
    finally:
        await stop_bot(bridge, hub)


async def test_plan_subcommand_keep_planning_words_reach_the_agent(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path,
                                                                   discord_double: DiscordDouble) -> None:
    d = discord_double
    notes = workspace(tmp_path) / "notes.txt"
    md = await double_factory(scenario_of({"name": "main", "turn": turns(str(notes), plans=(PLAN, PLAN2))}))
    store = MemoryStateStore()
    bridge, hub = await bot_for(d, tmp_path, md, cli_home, store)
    try:
        alice = d.person("Alice")
        run_id, thread = await started(d, await d.slash(alice, "plan", task="write the notes", effort="low"))
        first = await d.until(lambda _: plan_card(d, thread, "Write notes.txt"))
        assert {(r.body.get("output_config") or {}).get("effort") for r in md.model_requests()} == {"low"}

        words = await d.click(alice, int(first["id"]), label="Keep planning…")
        await d.until(lambda _: words.modal)
        assert words.modal is not None and words.modal["title"] == "Keep planning"
        await d.submit(alice, words, {"What should change in the plan?": "Add a test first."})

        second = await d.until(lambda _: plan_card(d, thread, "1. Add a test first."))
        assert d.labels(second) == BUTTONS
        feedback = results(md)[-1]
        assert "keep planning" in feedback and "Add a test first." in feedback
        settled = await d.until(lambda _: plan_card(d, thread, "2. Say done.", open_=False))
        assert settled["embeds"][0]["title"] == "📝 Alice asked for more planning"
        assert "Feedback: Add a test first." in d.text(settled) and not notes.exists()

        click = await d.click(alice, int(second["id"]), label="Approve and go")
        await d.until(lambda _: click.acked)
        live = await hub.query.wait(run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert notes.read_text() == "yo"
    finally:
        await stop_bot(bridge, hub)
