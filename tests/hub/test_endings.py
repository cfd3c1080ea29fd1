"""Each way a run ends has its own tone (adapters/view/endings.py), and every renderer reads that one table.

A run stopped at its cost cap, through the real SDK + CLI on the model double: its owner chooses Stop on the
budget card, and the run ends out of budget — not "failed", though the run side reports a failed step. Then
each renderer (pure functions: Block Kit, a Discord embed) is given the view's own summaries of every ending.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.discord_bridge.render import render as discord_render
from adapters.hub import RunOptions
from adapters.memory_surface import MemorySurface
from adapters.platform.messages import TONES
from adapters.slack.render import render as slack_render
from adapters.state import MemoryStateStore
from adapters.view import RunOutcome
from adapters.view import summary as summaries
from adapters.view.endings import ENDINGS, by_tone, ending_of
from tests.conftest import scenario_of
from tests.hub.test_budget_hub import COSTLY, budget_flow
from tests.support.drive import drive
from tests.support.hub_support import QUICK, THREAD, Watch, button, hub_of
from tests.support.runtime_support import FAST


def test_every_ending_has_a_tone_of_its_own_that_platforms_know() -> None:
    tones = {e.tone for name, e in ENDINGS.items() if name != "died"}  # died is a stop the bot made
    assert len(tones) == len(ENDINGS) - 1 and tones <= TONES
    assert ending_of("failed", out_of_budget=True).name == "out_of_budget"
    assert ending_of("done", out_of_budget=True).name == "done"  # the cap was raised after all
    assert ending_of("exploded").name == "ended"  # a state a newer version wrote


async def test_a_run_its_owner_stops_at_the_cost_cap_ends_out_of_budget(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "never reached", "turn": [
        {"say": "Reading.", "usage": COSTLY, "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    env = {**md.env(cli_home), "ANTHROPIC_MODEL": "claude-sonnet-4-5"}
    hub = hub_of(surface, MemoryStateStore(), root=tmp_path / "runs", env=env, factory=budget_flow, view=QUICK,
                 runtime_options={"resilience": FAST})
    try:
        run = (await drive(hub).start("spend", THREAD, "alice", options=RunOptions(budget_usd=0.5))).run_id
        card = await watch.card("ask:1-q1")
        assert card.title == "💰 Budget reached"
        assert (await drive(hub).handle_action(button(card, "Stop"), "alice", delivery_id="s1")).ok
        await hub.query.wait(run)
        assert hub.store.get_run(run).status == "failed"  # type: ignore[union-attr]  # the run side's word
        summary = surface.thread(kind="summary")[-1]
        assert summary.title == "💰 Stopped at the cost cap" and summary.tone == "warning", summary
        status = [p.msg for p in surface.find("status")][-1]
        assert status.tone == "warning" and not status.buttons
    finally:
        await hub.close()


OUTCOMES = [(RunOutcome("done", result="ok"), False, "success", 0x2ECC71, "🟢 finished"),
            (RunOutcome("failed", error="boom", failed_at="work"), False, "danger", 0xE74C3C, "🔴 failed"),
            (RunOutcome("stopped", by="alice"), False, "muted", 0x95A5A6, "⚪ stopped"),
            (RunOutcome("failed", error="stopped at the cost cap"), True, "warning", 0xE67E22, "🟠 out of budget"),
            (RunOutcome("exploded"), False, "info", 0x3498DB, "🔵 ended")]


@pytest.mark.parametrize(("outcome", "out_of_budget", "tone", "colour", "mark"), OUTCOMES,
                         ids=[o[0].state + ("-budget" if o[1] else "") for o in OUTCOMES])
def test_each_renderer_shows_the_endings_tone(outcome: RunOutcome, out_of_budget: bool, tone: str, colour: int,
                                              mark: str) -> None:
    msg = summaries.render("summary:x", outcome, out_of_budget=out_of_budget)
    assert msg.tone == tone and by_tone(tone) is not None
    embed = discord_render(msg).embed
    assert embed is not None and embed.colour is not None and embed.colour.value == colour
    blocks, _ = slack_render(msg)
    shown = [b.to_dict() for b in blocks]
    assert shown[0]["type"] == "header" and shown[0]["text"]["text"] == msg.title
    assert shown[1]["type"] == "context" and shown[1]["elements"][0]["text"] == mark
