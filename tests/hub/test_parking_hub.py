"""Parking in the hub through the real SDK + bundled CLI on the model double: the status card says
parked, no CLI runs while the question waits, the answer on the card resumes the same session (also
in a new bot process), mail waits for the resume, timeout / stop / interrupt settle a parked question
like a live one, and max_runs counts running runs while max_parked counts parked ones."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from adapters.hub import Hub, wake
from adapters.hub.runs import KEPT
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import SQLiteStateStore
from flower_core import Event
from flower_core.human import TIMEOUT
from flower_core.runtime.parking import RESUME_NOTE, WITHDRAWN
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import THREAD, Watch, button, make_hub, one_step_flow, posted
from tests.support.parking_support import INBOX, alive, ask_call, cli_children, last_two

PARKED = "🅿️ Parked — waiting for an answer"


def parked_card(surface: MemorySurface, thread: ThreadRef = THREAD) -> bool:
    return any(p.msg.key == "status" and p.msg.title.startswith(PARKED) for p in surface.find("status", thread))


def pids_at_ask(hub: Hub) -> list[int]:
    """CLI pids seen while a question was being asked (the asking CLI is alive then)."""
    pids: list[int] = []

    def tap(run_id: str, ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked" and ev.payload.get("kind") != "mail":
            pids.extend(cli_children())
    hub.taps.append(tap)
    return pids


async def test_answer_mail_and_interrupt_on_a_parked_run(double_factory: Any, cli_home: Path,
                                                         tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Let me ask.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour: {last_tool_result}", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Noted. Size?", "call": [ask_call("Which size?", ["S", "L"])]},
        {"say": "You said: {last_user_text}"},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), park_after_s=0.2)
    pids = pids_at_ask(hub)
    run = (await drive(hub).start("pick things", THREAD, "alice")).run_id
    q1 = await watch.card("ask:1-q1")
    await watch.until(parked_card)
    assert pids and not any(alive(p) for p in pids) and cli_children() == []
    assert hub.parked() == [run] and hub.running() == [] and hub.store.get_run(run).status == "parked"  # type: ignore[union-attr]
    assert "1/10000 parked" in hub.query.status().message and "No runs going" in hub.query.status().message
    assert posted(surface, "ask:1-q1").msg.buttons  # the card stays open

    assert (await drive(hub).send(run, "make it round", "alice")).ok  # kept until the run resumes
    asked = len(md.model_requests())
    assert (await drive(hub).handle_action(button(q1, "blue"), "alice", delivery_id="d1")).ok
    await watch.card("ask:1-q2")
    resumed = md.model_requests()[asked]
    call_id = resumed.body["messages"][-2]["content"][-1]["id"]
    assert last_two(resumed)[1]["blocks"][0] == ("tool_result", call_id, "blue")
    assert last_two(resumed)[1]["blocks"][1][2].startswith(RESUME_NOTE)
    assert "make it round" in last_two(resumed)[1]["blocks"][1][2]  # mail delivered with the resume
    assert resumed.turn == 1 and resumed.first_user_text.endswith("ask: pick things")  # the same session

    await watch.until(parked_card)  # parked again on the second question
    assert (await drive(hub).interrupt(run, "just use the default size", "alice")).ok
    await hub.query.wait(run)
    closed = posted(surface, "ask:1-q2").msg  # withdrawn by the interrupt, as on a live run
    assert closed.title == "✖️ Closed — the run stopped before an answer" and not closed.buttons
    last = last_two(md.model_requests()[-1])[1]["blocks"]
    assert last[0][2] == WITHDRAWN and last[1][2].startswith("just use the default size")
    assert [m.text for m in surface.thread(kind="prose")][-1].startswith("You said: just use the default size")
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]
    assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]


async def test_timeout_and_stop_settle_a_parked_question(double_factory: Any, cli_home: Path,
                                                         tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Got: {last_tool_result}", "call": [ask_call("Which size?", ["S", "L"])]},
        {"say": "never reached"},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), park_after_s=0.2,
                   factory=one_step_flow(timeout_s=2.0))
    run = (await drive(hub).start("pick", THREAD, "alice")).run_id
    await watch.until(parked_card)
    timed_out = await watch.card("ask:1-q1", open_=False)
    assert timed_out.title.startswith("⌛ No answer in time")
    await watch.card("ask:1-q2")
    assert md.model_requests()[-1].last_tool_result == TIMEOUT
    await watch.until(parked_card)
    assert (await drive(hub).stop(run, "alice")).ok
    await hub.query.wait(run)
    assert posted(surface, "ask:1-q2").msg.title == "✖️ Closed — the run stopped before an answer"
    assert [m.title for m in surface.thread(kind="summary")] == ["⏹️ Stopped by alice"]
    assert hub.store.get_run(run).status == "stopped"  # type: ignore[union-attr]
    assert len(md.model_requests()) == 2 and cli_children() == []


async def test_a_parked_run_survives_a_bot_restart(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour: {last_tool_result}", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Inbox: {last_tool_result}"},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    store_a = SQLiteStateStore(tmp_path / "state.db")
    hub_a = make_hub(tmp_path, md, cli_home, surface, store_a, park_after_s=0.2)
    run = (await drive(hub_a).start("pick a colour", THREAD, "alice")).run_id
    q1 = await watch.card("ask:1-q1")
    await watch.until(parked_card)
    assert (await drive(hub_a).send(run, "and make it round", "alice")).ok
    await hub_a.close()
    store_a.close()
    asked = len(md.model_requests())

    edits = posted(surface, "status").versions
    hub_b = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), park_after_s=0.2)
    assert await hub_b.recover() == []  # not died: still waiting
    assert run in hub_b.live
    await watch.until(lambda s: KEPT in posted(s, "ask:1-q1").msg.text)
    await watch.until(lambda s: posted(s, "status").versions > edits and parked_card(s))  # the new process says so
    assert hub_b.parked() == [run] and cli_children() == [] and len(md.model_requests()) == asked
    assert not surface.find("ask:2-") and not any("restarted and run" in m.text for m in surface.thread(kind="notice"))

    assert (await drive(hub_b).handle_action(button(q1, "red"), "alice", delivery_id="d9")).ok
    await hub_b.query.wait(run)
    resumed = md.model_requests()[asked]
    assert resumed.turn == 1 and resumed.first_user_text.endswith("ask: pick a colour")  # the same session
    blocks = last_two(resumed)[1]["blocks"]
    assert blocks[0][0] == "tool_result" and blocks[0][2] == "red"
    assert blocks[1][2].startswith(RESUME_NOTE) and "and make it round" in blocks[1][2]  # mail kept over the restart
    assert "No response requested." not in str(resumed.body["messages"])
    card = posted(surface, "ask:1-q1").msg
    assert card.title == "✅ Answered by alice" and "Answer: red" in card.text
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]
    assert hub_b.store.get_run(run).status == "done"  # type: ignore[union-attr]


async def test_max_runs_counts_running_runs_and_max_parked_parked_ones(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour: {last_tool_result}"},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), park_after_s=0.2,
                   max_runs=1, max_parked=1)
    t1, t2, t3 = (ThreadRef("memory", "C1", f"t{i}") for i in (1, 2, 3))
    first = (await drive(hub).start("one", t1, "alice")).run_id
    await watch.until(lambda s: parked_card(s, t1))
    second = await drive(hub).start("two", t2, "alice")  # the parked run does not hold the one running slot
    assert second.ok
    await watch.until(lambda s: any(p.msg.key == "ask:1-q1" for p in s.find("ask:", t2)))
    assert hub.running() == [second.run_id] and hub.parked() == [first]
    assert len(cli_children()) == 1  # the second run cannot park (max_parked=1): it keeps its CLI
    refused = await drive(hub).start("three", t3, "alice")
    assert not refused.ok and "1 runs are already going" in refused.message and second.run_id in refused.message
    for run, thread in ((first, t1), (second.run_id, t2)):
        card = next(p.msg for p in surface.find("ask:1-q1", thread))
        assert (await drive(hub).handle_action(button(card, "red"), "alice", delivery_id=f"d-{run}")).ok
        await hub.query.wait(run)
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished", "✅ Finished"]


async def test_parked_runs_come_back_a_few_at_a_time_after_a_restart(double_factory: Any, cli_home: Path,
                                                                     tmp_path: Path, monkeypatch: Any) -> None:
    """Each run coming back holds its stores open until it waits again: a restart lets in a window of them at a
    time (here 1), and `recover` returns once all are back parked, none asking the model again."""
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
        {"say": "Colour: {last_tool_result}"},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    store_a = SQLiteStateStore(tmp_path / "state.db")
    hub_a = make_hub(tmp_path, md, cli_home, surface, store_a, park_after_s=0.2)
    threads = [ThreadRef("memory", "C1", f"t{i}") for i in range(3)]
    runs = [(await drive(hub_a).start(f"run {i}", t, "alice")).run_id for i, t in enumerate(threads)]
    for t in threads:
        await watch.until(lambda s, t=t: parked_card(s, t))
    await hub_a.close()
    store_a.close()
    asked = len(md.model_requests())

    monkeypatch.setattr(wake, "COMING_BACK_AT_ONCE", 1)
    hub_b = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), park_after_s=0.2)
    launch, coming = hub_b.restarts.launcher.launch, []

    def launch_one(*args: Any, **kw: Any) -> Any:
        coming.append(len(coming) - len(hub_b.parked()))  # launched before this one and not back yet
        return launch(*args, **kw)
    monkeypatch.setattr(hub_b.restarts.launcher, "launch", launch_one)
    assert await hub_b.recover() == []
    assert coming == [0, 0, 0] and sorted(hub_b.parked()) == sorted(runs)
    assert cli_children() == [] and len(md.model_requests()) == asked
    card = next(p.msg for p in surface.find("ask:1-q1", threads[1]))
    assert (await drive(hub_b).handle_action(button(card, "blue"), "alice", delivery_id="d-w")).ok
    await hub_b.query.wait(runs[1])
    assert md.model_requests()[-1].last_tool_result == "blue"
    await hub_b.close()


async def test_a_slot_of_the_window_frees_itself_at_its_deadline() -> None:
    window = wake.Window(1, deadline_s=0.05)
    await window.enter()  # never left: its run never came back
    leave = await asyncio.wait_for(window.enter(), 5)  # let in by the first one's deadline
    leave()
    leave()  # once only: a second call frees nothing more
    await asyncio.wait_for(window.drain(), 5)
    assert window._slots._value == 1  # type: ignore[attr-defined]
