"""Rounds: a person's words to a run that has ended start its next round, in the same session.

Everything runs through the real SDK + bundled CLI on the model double. The scenario is one
conversation played by turn number (the double counts the assistant messages in the history), so
round 2's request can only reach its turn if it carries round 1's conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub, RunOptions, RunPlan
from adapters.memory_surface import MemorySurface
from adapters.state import ChannelPolicy, RunRecord, SQLiteStateStore, StateStore
from flower_core import AgentSpec, Event, HumanChannel, Step, Workflow
from flower_core.rounds import ROUND_LABEL
from tests.conftest import scenario_of
from tests.support.campaign.tally import session_id
from tests.support.drive import drive
from tests.support.hub_support import QUICK, THREAD, Watch, ask_call, button, hub_of, make_hub, posted
from tests.support.runtime_support import FAST

MORE = "also add a --json flag"


def conversation() -> Any:
    """Round 1 asks and finishes; round 2 (the same session, two assistant turns in) asks again."""
    return scenario_of({"name": "main", "after_end": "Finished with {last_tool_result}.", "turn": [
        {"say": "One question first.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Round one done with {last_tool_result}."},
        {"say": "Round two: {last_user_text}", "call": [ask_call("JSON or YAML?", ["json", "yaml"])]},
    ]})


def briefed(plan: RunPlan) -> Workflow:
    """One agent step whose channel amends a brief in the workspace (as the starter's does)."""
    ch = HumanChannel(timeout_s=60.0, amend_path=plan.workspace / "brief.md")
    spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=ch, max_turns=12)
    return Workflow([Step("work", spec, f"work: {plan.task}")], channel=ch)


def hub_on(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface, store: StateStore, **kw: Any) -> Hub:
    store.set_channel_policy("memory:C1", ChannelPolicy(responders={"alice", "bob"}))
    return make_hub(tmp_path, md, cli_home, surface, store, factory=briefed, **kw)


async def round_one(hub: Hub, watch: Watch) -> tuple[str, Any]:
    """Start the run, answer its question, wait for its end; the run and its (now settled) card."""
    run = (await drive(hub).start("write a tool", THREAD, "alice")).run_id
    q1 = await watch.card("ask:1-q1")
    assert (await drive(hub).handle_action(button(q1, "tabs"), "alice", delivery_id="d-1")).ok
    await hub.query.wait(run)
    assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]
    return run, q1


def requests_of(md: Any, words: str) -> list[Any]:
    return [r for r in md.model_requests() if words in r.last_user_text or words in str(r.body.get("messages"))]


async def test_a_thread_message_continues_an_ended_run_in_the_same_session(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path) -> None:
    md = await double_factory(conversation())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = hub_on(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    events: list[tuple[str, Event]] = []
    hub.hooks.tap(lambda run_id, ev: events.append((run_id, ev)))
    try:
        run, q1 = await round_one(hub, watch)
        first = md.model_requests()
        before = len(first)

        said = await drive(hub).said(THREAD, "bob", MORE)  # a responder, not the owner
        assert said is not None and said.ok, said
        record = hub.store.get_run(run)
        assert record is not None and record.round == 2
        q2 = await watch.card("ask:2-q1")  # the round's cards have ids of their own
        assert q2.text.count("JSON or YAML?") == 1
        status = posted(surface, "status").msg  # one status card, edited in place
        assert "round 2" in status.title and status.buttons
        old = await drive(hub).handle_action(button(q1, "spaces"), "bob", delivery_id="d-2")
        assert not old.ok and old.duplicate and "settled" in old.message  # a click on an old card
        assert (await drive(hub).handle_action(button(q2, "json"), "bob", delivery_id="d-3")).ok
        await hub.query.wait(run)

        record = hub.store.get_run(run)
        assert record is not None and record.status == "done" and record.round == 2
        later = md.model_requests()[before:]
        assert later and later[0].last_user_text == MORE  # the words are the round's prompt
        history = str(later[0].body.get("messages"))
        assert "Round one done with tabs." in history and "Tabs or spaces?" in history
        assert {session_id(r) for r in later} == {session_id(first[0])} != {""}  # the same session
        assert later[-1].last_tool_result == "json"
        assert [m.text for m in surface.thread(kind="prose")][-1] == "Finished with json."
        assert len(surface.thread(kind="summary")) == 2  # round 1's summary is left as it was
        assert any(MORE in m.text and "round 2" in m.text for m in surface.thread(kind="notice"))

        steps = [ev.payload for rid, ev in events if rid == run and ev.kind == "step"]
        assert [p.get("round") for p in steps] == [None, 2]  # a step event opens the round and names it
        brief = (Path(record.workspace) / "brief.md").read_text(encoding="utf-8")
        assert MORE in brief and ROUND_LABEL in brief  # later steps and the judge read it in the brief
    finally:
        await hub.close()


async def test_refusals_change_nothing(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(conversation())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = hub_on(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    try:
        run = (await drive(hub).start("write a tool", THREAD, "alice")).run_id
        q1 = await watch.card("ask:1-q1")
        live = await drive(hub).continue_run(run, MORE, "alice")
        assert not live.ok and "send it a message" in live.message
        mail = await drive(hub).said(THREAD, "alice", "a word while it works")  # live: inbox mail, as ever
        assert mail is not None and mail.ok and mail.message.startswith("Queued")
        assert (await drive(hub).handle_action(button(q1, "tabs"), "alice", delivery_id="d-1")).ok
        await hub.query.wait(run)
        asked, calls = len(md.model_requests()), len(surface.calls)
        before = hub.store.get_run(run)

        unknown = await drive(hub).continue_run("rnothere", MORE, "alice")
        assert not unknown.ok and unknown.message == "No run rnothere."
        stranger = await drive(hub).continue_run(run, MORE, "mallory")
        assert not stranger.ok and surface.notices_for("mallory") == [stranger.message]
        stranger_says = await drive(hub).said(THREAD, "mallory", MORE)
        assert stranger_says is not None and not stranger_says.ok
        empty = await drive(hub).continue_run(run, "   ", "alice")
        assert not empty.ok and "what the run should do next" in empty.message

        assert hub.store.get_run(run) == before and run not in hub.live  # round, status, times: untouched
        assert len(md.model_requests()) == asked
        assert [c for c in surface.calls[calls:] if c.op != "notify"] == []  # the thread heard nothing
    finally:
        await hub.close()


async def test_a_run_continues_after_a_bot_restart_between_rounds(double_factory: Any, cli_home: Path,
                                                                  tmp_path: Path) -> None:
    md = await double_factory(conversation())
    surface = MemorySurface()
    watch = Watch(surface)
    hub_a = hub_on(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    run, _ = await round_one(hub_a, watch)
    first = md.model_requests()[0]
    await hub_a.close()
    hub_a.store.close()

    hub = hub_on(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))  # process B
    try:
        assert await hub.recover() == [] and run not in hub.live  # an ended run is not brought back
        said = await drive(hub).said(THREAD, "alice", MORE)
        assert said is not None and said.ok, said
        q2 = await watch.card("ask:2-q1")
        assert (await drive(hub).handle_action(button(q2, "yaml"), "alice", delivery_id="d-9")).ok
        await hub.query.wait(run)
        record = hub.store.get_run(run)
        assert record is not None and record.status == "done" and record.round == 2
        later = requests_of(md, MORE)
        assert later and all(session_id(r) == session_id(first) for r in later)
        assert "Round one done with tabs." in str(later[0].body.get("messages"))
        assert later[-1].last_tool_result == "yaml"
    finally:
        await hub.close()
        hub.store.close()


async def test_a_run_with_no_session_to_continue_is_refused_as_it_was(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path) -> None:
    """A run that failed before any step got a session (its lineage is empty): nothing to resume."""
    md = await double_factory(conversation())
    surface = MemorySurface()
    store = SQLiteStateStore(tmp_path / "state.db")
    hub = hub_on(tmp_path, md, cli_home, surface, store)
    try:
        (tmp_path / "ws").mkdir()
        before = store.save_run(RunRecord("r0000abc", THREAD, "alice", "a task", "failed", str(tmp_path / "ws"),
                                          str(tmp_path / "rd")))
        store.bind_thread(THREAD, before.run_id)
        said = await drive(hub).said(THREAD, "alice", MORE)
        assert said is not None and not said.ok and "no step of this run has a session" in said.message
        assert store.get_run(before.run_id) == before and before.run_id not in hub.live
        assert md.model_requests() == [] and surface.notices_for("alice") == [said.message]
    finally:
        await hub.close()


COSTLY = {"input_tokens": 1000, "output_tokens": 40000}  # $0.603 at Sonnet prices


def capped(plan: RunPlan) -> Workflow:
    ch = HumanChannel(timeout_s=60.0)
    spec = AgentSpec(name="worker", allowed_tools=["Read"], channel=ch, max_turns=12)
    return Workflow([Step("work", spec, f"work: {plan.task}")], channel=ch, budget=plan.budget_usd)


async def test_what_round_one_spent_counts_against_round_twos_cap(double_factory: Any, cli_home: Path,
                                                                  tmp_path: Path) -> None:
    """A $1 cap: round 1 spends $0.60 and ends; round 2's first $0.60 crosses the cap only because round 1's
    spend is counted, so the run pauses before its next turn and its owner is asked; the raise is kept in
    the record for the next round."""
    md = await double_factory(scenario_of({"name": "main", "after_end": "Back: {last_user_text}", "turn": [
        {"say": "Round one.", "usage": COSTLY},
        {"say": "Round two.", "usage": COSTLY, "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    env = {**md.env(cli_home), "ANTHROPIC_MODEL": "claude-sonnet-4-5"}  # every role at Sonnet prices
    hub = hub_of(surface, SQLiteStateStore(tmp_path / "state.db"), root=tmp_path / "runs", env=env, factory=capped,
                 view=QUICK, runtime_options={"resilience": FAST})
    try:
        run = (await drive(hub).start("spend", THREAD, "alice", options=RunOptions(budget_usd=1.0))).run_id
        await hub.query.wait(run)
        one = hub.store.get_run(run)
        assert one is not None and one.status == "done" and one.spent_usd == pytest.approx(0.603, abs=0.01)

        assert (await drive(hub).continue_run(run, "spend some more", "alice")).ok
        card = await watch.card("ask:2-q1")  # the cost cap's question, in round 2
        assert card.title == "💰 Budget reached" and "$1.21" in card.text and "$1.00" in card.text
        assert (await drive(hub).handle_action(button(card, "+$5 (cap $6.00)"), "alice", delivery_id="b1")).ok
        await hub.query.wait(run)
        two = hub.store.get_run(run)
        assert two is not None and two.status == "done" and two.round == 2
        assert two.cap_usd == 6.0 and two.spent_usd >= 1.2  # both rounds, and the cap as raised
    finally:
        await hub.close()
