"""Restart: runs die with the bot process, are reported, and wake; old cards stay answerable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.hub import Hub
from adapters.memory_surface import MemorySurface
from adapters.state import ChannelPolicy, SQLiteStateStore
from tests.conftest import scenario_of
from tests.hub_support import (
    THREAD,
    Watch,
    ask_call,
    button,
    kill_cli_children,
    make_hub,
    one_step_flow,
    posted,
    transcript_has,
)

RESUME = "Continue where you were cut off; ask again what was not answered."
REASKED = "Asked again after the run was woken."


def two_step_scenario(*, reask: bool = True) -> Any:
    """prep, then ask: colour (answered before the crash), size (open when the bot dies); woken, the
    agent asks the size again — or, with reask=False, moves on without asking."""
    again = ({"say": "Size, again?", "call": [ask_call("Which size?", ["S", "L"])]} if reask
             else {"say": "Moving on with a default size."})
    return scenario_of(
        {"name": "prep", "match": "prep: pick", "turn": [{"say": "Prepared."}]},
        {"name": "ask", "match": "ask: pick", "after_end": "Size: {last_tool_result}", "turn": [
            {"say": "Colour?", "call": [ask_call("Which colour?", ["red", "blue"])]},
            {"say": "Size?", "call": [ask_call("Which size?", ["S", "L"])]},
            # Resuming after the kill, the CLI closes the cut-off call itself ("[Tool call interrupted…]")
            # and adds an assistant "No response requested.": that history holds 3 assistant turns.
            {"say": "never served"},
            again,
        ]})


async def crash_and_restart(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface,
                            watch: Watch) -> tuple[Hub, str, Any, Any]:
    """Process A runs to the second question and goes away; process B starts on the same state."""
    factory = one_step_flow(steps=("prep", "ask"), resume_prompt=RESUME)
    store_a = SQLiteStateStore(tmp_path / "state.db")
    store_a.set_channel_policy("memory:C1", ChannelPolicy(responders={"bob"}))
    hub_a = make_hub(tmp_path, md, cli_home, surface, store_a, factory=factory)
    run = (await hub_a.start("pick sizes", THREAD, "alice")).run_id
    q1 = await watch.card("ask:1-q1")
    assert (await hub_a.handle_action(button(q1, "blue"), "alice", delivery_id="d-0")).ok
    q2 = await watch.card("ask:1-q2")
    await transcript_has(hub_a.live[run], "ask", "Which size?")
    assert kill_cli_children()  # the agent's CLI dies with the bot, mid-question
    await hub_a.close()
    store_a.close()
    assert posted(surface, "ask:1-q2").msg.buttons  # still open: answerable after the restart

    hub_b = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), factory=factory)
    assert await hub_b.recover() == [run]
    assert await hub_b.recover() == []  # reported once
    return hub_b, run, q1, q2


async def test_a_click_on_an_old_card_wakes_the_run_and_answers_it_once(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(two_step_scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub, run, q1, q2 = await crash_and_restart(tmp_path, md, cli_home, surface, watch)
    status = posted(surface, "status")
    assert status.msg.title.startswith("💤") and status.versions > 1  # the old card, edited in place
    assert any("open question can still be answered" in m.text for m in surface.thread(kind="notice"))
    assert hub.store.get_run(run).status == "died"  # type: ignore[union-attr]

    assert (await hub.handle_action(button(q1, "blue"), "alice", delivery_id="d-0")).duplicate  # pre-restart
    woke = await hub.handle_action(button(q2, "L"), "alice", delivery_id="d-1")
    assert woke.ok and run in hub.live
    assert (await hub.handle_action(button(q2, "L"), "alice", delivery_id="d-1")).duplicate
    second = await hub.handle_action(button(q2, "S"), "bob", delivery_id="d-2")
    assert not second.ok and second.duplicate
    await hub.wait(run)

    card = posted(surface, "ask:1-q2").msg
    assert card.title == "✅ Answered by alice" and "Answer: L" in card.text and REASKED in card.text
    assert not surface.find("ask:2-")  # the re-asked question landed on the old card
    assert [m.text for m in surface.thread(kind="prose")][-1] == "Size: L"
    assert len(md.model_requests("prep")) == 1  # the finished step was not redone
    woken = [r for r in md.model_requests("ask") if RESUME in r.last_user_text]
    assert woken and all("ask: pick sizes" in r.first_user_text for r in woken)  # the same session, resumed
    assert woken[-1].last_tool_result == "L"
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]
    assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]


async def test_wake_brings_the_old_card_back_to_life(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(two_step_scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub, run, _, q2 = await crash_and_restart(tmp_path, md, cli_home, surface, watch)

    refused = await hub.wake(run, "mallory")
    assert not refused.ok and run not in hub.live and surface.notices_for("mallory") == [refused.message]
    assert (await hub.wake(run, "alice")).ok
    await watch.until(lambda s: REASKED in posted(s, "ask:1-q2").msg.text and posted(s, "ask:1-q2").msg.buttons)
    assert (await hub.handle_action(button(q2, "S"), "bob", delivery_id="d-9")).ok
    await hub.wait(run)
    card = posted(surface, "ask:1-q2").msg
    assert card.title == "✅ Answered by bob" and "Answer: S" in card.text
    assert not surface.find("ask:2-")
    assert [m.text for m in surface.thread(kind="prose")][-1] == "Size: S"
    assert any("alice woke the run" in m.text for m in surface.thread(kind="notice"))


async def test_a_held_answer_the_woken_run_never_asks_for_goes_to_its_inbox(double_factory: Any, cli_home: Path,
                                                                           tmp_path: Path) -> None:
    md = await double_factory(two_step_scenario(reask=False))
    surface = MemorySurface()
    watch = Watch(surface)
    hub, run, _, q2 = await crash_and_restart(tmp_path, md, cli_home, surface, watch)
    assert (await hub.handle_action(button(q2, "L"), "alice", delivery_id="d-1")).ok
    await hub.wait(run)
    card = posted(surface, "ask:1-q2").msg
    assert card.title == "✅ Answered by alice" and "went to its inbox" in card.text and not card.buttons
    receipt = next(p.msg for p in surface.find("mail:"))
    assert "from alice" in receipt.text and "Which size?" in receipt.text and ": L" in receipt.text
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]
