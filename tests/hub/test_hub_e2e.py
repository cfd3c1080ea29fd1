"""The hub end to end: the real SDK + CLI against the model double, a recording in-memory surface."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import ChannelPolicy, MemoryStateStore
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import INBOX, THREAD, Watch, ask_call, button, make_hub, posted


async def test_start_ask_answer_mail_interrupt_oracle_finish(double_factory: Any, cli_home: Path,
                                                             tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        {"name": "oracle", "match": "Side question", "turn": [{"say": "We are waiting on the second question."}]},
        {"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
            {"say": "Let me ask.", "call": [ask_call("Which colour?", ["red", "blue"])]},
            {"say": "Colour: {last_tool_result}. One more.", "call": [ask_call("Ready for mail?", ["yes"])]},
            {"say": "Checking the inbox.", "call": [{"tool": INBOX, "input": {}}]},
            {"say": "Inbox: {last_tool_result}", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
            {"say": "Heard: {last_user_text}", "delay_s": 1.5},
        ]}))
    surface, store = MemorySurface(), MemoryStateStore()
    store.set_channel_policy("memory:C1", ChannelPolicy(starters={"alice"}, responders={"bob"}))
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, store)

    refused = await drive(hub).start("sneaky", THREAD, "mallory")
    assert not refused.ok and store.list_runs() == []
    started = await drive(hub).start("pick a colour", THREAD, "alice")
    assert started.ok
    run = started.run_id

    q1 = await watch.card("ask:1-q1")
    assert [b.label for b in q1.buttons] == ["red", "blue", "Answer in words…", "Decline"]
    # An outsider's click is refused to them alone and changes nothing.
    no = await drive(hub).handle_action(button(q1, "blue"), "mallory", delivery_id="d0")
    assert not no.ok and posted(surface, "ask:1-q1").msg.buttons and hub.live[run].view.open_card("1-q1")
    assert not (await drive(hub).send(run, "psst", "mallory")).ok and not (await drive(hub).stop(run, "mallory")).ok
    assert not (await drive(hub).interrupt(run, "halt", "mallory")).ok
    assert len(surface.notices_for("mallory")) == 5 and all(c.user == "mallory" for c in surface.notices)

    # First click answers; its replayed delivery and a second click answer nothing.
    yes = await drive(hub).handle_action(button(q1, "blue"), "alice", delivery_id="d1")
    replay = await drive(hub).handle_action(button(q1, "blue"), "alice", delivery_id="d1")
    late = await drive(hub).handle_action(button(q1, "red"), "bob", delivery_id="d2")
    assert yes.ok and replay.duplicate and late.duplicate and not late.ok
    settled = await watch.card("ask:1-q1", open_=False)
    assert settled.title == "✅ Answered by alice" and "Answer: blue" in settled.text

    q2 = await watch.card("ask:1-q2")
    oracle = await drive(hub).oracle(run, "where are we?", "bob")
    mail = await drive(hub).send(run, "also count bytes", "alice")
    assert oracle.ok and mail.ok
    needs = await drive(hub).handle_action(button(q2, "Answer in words…"), "bob", delivery_id="d3")
    assert needs.ok and needs.needs_input == "Your answer"
    assert (await drive(hub).handle_action(button(q2, "Answer in words…"), "bob", delivery_id="d4",
                                    text="yes please")).ok
    await watch.until(lambda s: any(p.msg.text.startswith("📬 Delivered") for p in s.find("mail:")))

    await md.wait_for(lambda reqs: any(r.conversation == "main" and r.turn == 4 for r in reqs), timeout=60)
    assert (await drive(hub).interrupt(run, "use tabs", "alice")).ok
    live = await hub.query.wait(run)
    assert live is not None and run not in hub.live

    prose = [m.text for m in surface.thread(kind="prose")]
    assert prose[:3] == ["Let me ask.", "Colour: blue. One more.", "Checking the inbox."]
    assert prose[3].startswith("Inbox:") and "also count bytes" in prose[3]
    assert "use tabs" in prose[-1] and prose[-1].startswith("Heard:")
    q2_done = posted(surface, "ask:1-q2").msg
    assert q2_done.title == "✅ Answered by bob" and "yes please" in q2_done.text
    receipt = next(p.msg for p in surface.find("mail:"))
    assert "from alice" in receipt.text and "also count bytes" in receipt.text
    assert any("alice interrupted the agent" in m.text for m in surface.thread(kind="notice"))
    assert "waiting on the second question" in next(m.text for m in surface.thread(kind="oracle"))
    summary = surface.thread(kind="summary")
    assert len(summary) == 1 and summary[0].important and summary[0].title == "✅ Finished"
    status = posted(surface, "status").msg
    assert status.title.startswith("✅ Done") and not status.buttons
    assert store.get_run(run).status == "done"  # type: ignore[union-attr]
    main = md.model_requests("main")
    assert main[1].last_tool_result == "blue" and "yes please" in main[2].last_tool_result
    assert live.pipe.fanout.stats.dropped == 0


async def test_runs_side_by_side_up_to_the_limit_then_a_clear_refusal(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Proceed?", ["yes", "no"])]}]}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    project = tmp_path / "project"
    hub = make_hub(tmp_path, md, cli_home, surface, store, max_runs=2, workspaces={"memory:C2": project})
    other, third = ThreadRef("memory", "C2", "t2"), ThreadRef("memory", "C3", "t3")
    first = await drive(hub).start("one", THREAD, "alice")
    second = await drive(hub).start("two", other, "bob")
    assert first.ok and second.ok
    await watch.until(lambda s: len([p for p in s.find("ask:1-q1") if p.msg.buttons]) == 2)
    assert Path(store.get_run(second.run_id).workspace) == project.resolve()  # type: ignore[union-attr]
    assert Path(store.get_run(first.run_id).workspace).is_relative_to(tmp_path / "runs")  # type: ignore[union-attr]
    assert "2/2 runs going" in hub.query.status().message and "waiting" in hub.query.status(thread=other).message

    full = await drive(hub).start("three", third, "carol")
    assert not full.ok and "limit is 2" in full.message and surface.notices_for("carol") == [full.message]
    again = await drive(hub).start("same thread", THREAD, "alice")
    assert not again.ok and "already going in this thread" in again.message
    assert len(store.list_runs()) == 2

    assert (await drive(hub).stop(first.run_id, "alice")).ok
    assert (await drive(hub).stop(second.run_id, "bob")).ok
    await hub.query.wait(first.run_id)
    await hub.query.wait(second.run_id)
    card = next(p.msg for p in surface.find("ask:1-q1") if p.thread == THREAD)
    assert card.title.startswith("✖️ Closed") and not card.buttons
    assert [m.title for m in surface.thread(THREAD, kind="summary")] == ["⏹️ Stopped by alice"]
    assert store.get_run(first.run_id).status == "stopped"  # type: ignore[union-attr]
    assert not (await drive(hub).answer(first.run_id, "1-q1", "yes", "alice")).ok
    assert not hub.live


async def test_a_429_storm_loses_nothing_and_keeps_order(double_factory: Any, cli_home: Path,
                                                        tmp_path: Path) -> None:
    turns: list[dict[str, Any]] = [{"say": f"Line {i}.", "call": [{"tool": "Read", "input": {"file_path": f"f{i}"}}]}
                                   for i in range(6)]
    turns.insert(3, {"say": "Line q.", "call": [ask_call("Go on?", ["yes"])]})
    md = await double_factory(scenario_of({"name": "main", "after_end": "Line end.", "turn": turns}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, store)
    surface.storm(6, retry_after=0.05)
    run = (await drive(hub).start("storm", THREAD, "alice")).run_id
    card = await watch.card("ask:1-q1")
    surface.storm(8, retry_after=0.05)
    assert (await drive(hub).handle_action(button(card, "yes"), "alice")).ok
    live = await hub.query.wait(run)
    assert live is not None
    prose = [m.text for m in surface.thread(kind="prose")]
    expected = [f"Line {i}." for i in range(3)] + ["Line q."] + [f"Line {i}." for i in range(3, 6)] + ["Line end."]
    assert "\n\n".join(prose) == "\n\n".join(expected)  # bursts may be merged into one post, never lost
    thread = surface.thread()  # post order
    at = {k: next(i for i, m in enumerate(thread) if k in m.text or m.key == k) for k in ("Line q.", "ask:1-q1",
                                                                                         "Line 3.")}
    assert at["Line q."] < at["ask:1-q1"] < at["Line 3."]
    assert surface.counts["failed"] == 14 and live.pipe.fanout.stats.dropped == 0
    assert posted(surface, "ask:1-q1").msg.title == "✅ Answered by alice"
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]
