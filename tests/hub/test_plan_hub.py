"""Plan first on the hub: the real SDK + CLI on the model double, the in-memory surface.

A run started with ``RunOptions(plan=True)`` runs in the CLI's plan mode: its edit is refused until a person
approves the plan card; "Keep planning…" words reach the agent as feedback and it presents a new plan;
"Approve, ask before edits" turns its next edit into an approval card; a late click on a decided plan card is
told it is settled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub, RunOptions
from adapters.memory_surface import MemorySurface
from adapters.state import MemoryStateStore
from bots.flows import single_flow
from flower_core.human.plan_review import APPROVED
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import QUICK, THREAD, Watch, button, hub_of
from tests.support.plan_support import PLAN, PLAN2, tool_results, turns, write
from tests.support.plan_support import workspace as ws_of
from tests.support.runtime_support import FAST


def hub_for(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface, store: MemoryStateStore,
            **kw: Any) -> Hub:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return hub_of(surface, store, root=tmp_path / "runs", env={**md.env(cli_home), "HOME": str(home)},
                  factory=single_flow, view=QUICK, runtime_options={"resilience": FAST},
                  workspaces={"memory:C1": ws_of(tmp_path)}, **kw)


async def planning(double_factory: Any, cli_home: Path, tmp_path: Path, scenario: Any,
                   **kw: Any) -> tuple[Hub, MemoryStateStore, Any, Watch]:
    """A hub on the model double playing ``scenario`` (a list: the turns of its one conversation; single_flow, one
    workspace): the hub, its store, the double and a watch on its surface."""
    surface, store = MemorySurface(), MemoryStateStore()
    md = await double_factory(scenario_of({"name": "main", "turn": scenario}) if isinstance(scenario, list)
                              else scenario)
    return hub_for(tmp_path, md, cli_home, surface, store, **kw), store, md, Watch(surface)


def parking(parked: bool) -> dict[str, Any]:
    """Parked: the CLI goes the moment the card shows (no warm pool); warm: the default pool keeps it."""
    return {"park_after_s": 0} if parked else {}


def results(md: Any) -> list[str]:
    return tool_results(md)[1:]


@pytest.mark.parametrize("parked", [False, True], ids=["warm", "parked"])
async def test_no_edit_before_the_plan_is_approved_then_approve_and_go(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path, parked: bool) -> None:
    hub, store, md, watch = await planning(double_factory, cli_home, tmp_path,
                                           turns(f"{ws_of(tmp_path)}/notes.txt"), **parking(parked))
    try:
        started = await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        assert started.ok
        card = await watch.card("ask:1-q1")
        assert card.title.startswith("📋 The agent's plan") and PLAN in card.text
        if not parked:
            await watch.until(lambda s: any(p.msg.key == "status" and "Waiting for the plan's review" in p.msg.title
                                            for p in s.find("status")))
        assert [b.label for b in card.buttons] == ["Approve and go", "Approve, ask before edits", "Keep planning…"]
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "notes.txt").exists()
        assert "nothing may change before a person has approved your plan" in results(md)[0]
        if parked:  # the plan waits with no CLI, like a question
            await watch.until(lambda s: any(p.msg.key == "status" and p.msg.title.startswith(
                "🅿️ Parked — waiting for the plan's review") for p in s.find("status")))
            assert hub.parked() == [started.run_id]

        assert (await drive(hub).handle_action(button(card, "Approve and go"), "alice", delivery_id="d1")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (workspace / "notes.txt").read_text() == "yo"
        assert APPROVED in results(md)
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title.startswith("✅ Plan approved by alice")
        late = await drive(hub).handle_action(button(card, "Keep planning…"), "bea", delivery_id="d2",
                                                text="more")
        assert not late.ok and "already settled" in late.message
    finally:
        await hub.close()


@pytest.mark.parametrize("parked", [False, True], ids=["warm", "parked"])
async def test_keep_planning_words_reach_the_agent_and_it_presents_a_new_plan(double_factory: Any, cli_home: Path,
                                                                             tmp_path: Path, parked: bool) -> None:
    ws = ws_of(tmp_path)
    hub, store, md, watch = await planning(double_factory, cli_home, tmp_path,
                                           turns(f"{ws}/notes.txt", plans=(PLAN, PLAN2)), **parking(parked))
    try:
        started = await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        card = await watch.card("ask:1-q1")
        revise = await drive(hub).handle_action(button(card, "Keep planning…"), "alice",
                                                delivery_id="d1", text="Add a test first.")
        assert revise.ok
        second = await watch.card("ask:1-q2")
        assert PLAN2 in second.text
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "notes.txt").exists()
        feedback = results(md)[-1]
        assert "keep planning" in feedback and "Add a test first." in feedback
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title == "📝 alice asked for more planning" and "Feedback: Add a test first." in settled.text

        assert (await drive(hub).handle_action(button(second, "Approve and go"), "alice", delivery_id="d2")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (workspace / "notes.txt").read_text() == "yo"
    finally:
        await hub.close()


@pytest.mark.parametrize("parked", [False, True], ids=["warm", "parked"])
async def test_approve_ask_before_edits_turns_the_next_edit_into_an_approval_card(double_factory: Any,
                                                                                 cli_home: Path,
                                                                                 tmp_path: Path, parked: bool) -> None:
    hub, store, _md, watch = await planning(double_factory, cli_home, tmp_path,
                                           turns(f"{ws_of(tmp_path)}/notes.txt"), **parking(parked))
    try:
        started = await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        card = await watch.card("ask:1-q1")
        assert (await drive(hub).handle_action(button(card, "Approve, ask before edits"), "alice",
                                               delivery_id="d1")).ok
        approval = await watch.card("ask:1-q2")
        assert approval.title == "🔐 The agent wants to run Write"
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "notes.txt").exists()
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title.startswith("✅ Plan approved by alice") and "ask first" in settled.title
        assert (await drive(hub).handle_action(button(approval, "Allow once"), "alice", delivery_id="d2")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (workspace / "notes.txt").read_text() == "yo"
    finally:
        await hub.close()


async def test_a_plan_written_to_the_clis_plan_file_is_the_card_and_a_long_one_comes_as_a_file(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """The CLI's own way: the plan goes into ``<config dir>/plans/…`` (allowed while planning), ExitPlanMode
    comes with an empty input; the card shows the file's plan, and a plan past the card's room comes whole."""
    long_plan = "# Plan\n" + "\n".join(f"{i}. Step number {i} of the careful plan." for i in range(1, 120))
    plan_file = cli_home / "plans" / "the-plan.md"
    ws = ws_of(tmp_path)
    hub, _store, _md, watch = await planning(double_factory, cli_home, tmp_path,
                                           scenario_of({"name": "main", "turn": [
        {"say": "Writing my plan.", "call": [write(str(plan_file), long_plan)]},
        {"say": "Ready.", "call": [{"tool": "ExitPlanMode", "input": {}}]},
        {"say": "Writing.", "call": [write(f"{ws}/notes.txt", "yo")]},
        {"say": "Done."}]}))
    try:
        started = await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        card = await watch.card("ask:1-q1")
        assert card.text.startswith("# Plan\n1. Step number 1") and "The whole plan is in the file below." in card.text
        beside = (await watch.until(lambda s: s.find("plan:1-q1")))[0].msg
        assert beside.attachment is not None and Path(beside.attachment.path).read_text() == long_plan
        assert beside.attachment.size == len(long_plan.encode()) and f"{len(long_plan)} characters" in beside.text
        assert plan_file.read_text() == long_plan  # the plan file's write was not held
        assert (await drive(hub).handle_action(button(card, "Approve and go"), "alice", delivery_id="d1")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (ws / "notes.txt").read_text() == "yo"
    finally:
        await hub.close()


async def test_the_demo_plans_first_when_asked_and_works_once_approved(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    """The offline demo (what `flower-bot web --demo` plays) with plan first: the clarify and goal steps as
    always, then the work step's plan card; sent back with words, a revised plan that quotes them; approved,
    the worker writes notes.md and the judge passes it."""
    from adapters.transport.plan import default_factory

    md = await double_factory("demo")
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = hub_of(surface, store, root=tmp_path / "runs", env=md.env(cli_home), factory=default_factory, view=QUICK,
                 runtime_options={"resilience": FAST})
    try:
        started = await drive(hub).start("write a greeting note", THREAD, "alice", options=RunOptions(plan=True))
        question = await watch.card("ask:1-q1")
        assert (await drive(hub).handle_action(button(question, "Hello"), "alice", delivery_id="d1")).ok
        plan = await watch.card("ask:1-q2")
        assert plan.title.startswith("📋 The agent's plan") and "Have a worker write" in plan.text
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "notes.md").exists()
        assert (await drive(hub).handle_action(button(plan, "Keep planning…"), "alice", delivery_id="d2",
                                               text="Make it a haiku.")).ok
        revised = await watch.card("ask:1-q3")
        assert "revised after your review" in revised.text and "From your review: Make it a haiku." in revised.text
        assert not (workspace / "notes.md").exists()
        assert (await drive(hub).handle_action(button(revised, "Approve and go"), "alice", delivery_id="d3")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (workspace / "notes.md").is_file()
        assert "coordinator-plan" in {r.conversation for r in md.model_requests()}
    finally:
        await hub.close()


async def test_while_planning_the_agent_may_delegate_and_its_subagent_is_held_too(double_factory: Any,
                                                                                cli_home: Path,
                                                                                tmp_path: Path) -> None:
    """An Agent call is free while planning (the CLI alone would refuse it: its auto-mode check does not run
    here); the subagent's own edit is refused like the main thread's."""
    ws = ws_of(tmp_path)
    hub, _store, md, watch = await planning(double_factory, cli_home, tmp_path,
                                           scenario_of(
        {"name": "sub", "match": "Sub task", "turn": [
            {"say": "Trying to write.", "call": [write(f"{ws}/sub.txt", "no")]},
            {"say": "Report: the write was refused: {last_tool_result}"}]},
        {"name": "main", "turn": [
            {"say": "Exploring.", "call": [{"tool": "Agent", "input": {
                "description": "look around", "prompt": "Sub task: look around", "subagent_type": "general-purpose",
                "run_in_background": False}}]},
            {"say": "Here is my plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
            {"say": "Done."}]}))
    try:
        started = await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        card = await watch.card("ask:1-q1")
        assert not (ws / "sub.txt").exists()
        sub = [r.last_tool_result for r in md.model_requests("sub")]
        assert "nothing may change before a person has approved your plan" in sub[-1]
        delegated = [r.last_tool_result for r in md.model_requests("main")][1]
        assert "Report: the write was refused" in delegated and "Auto mode" not in delegated
        assert (await drive(hub).handle_action(button(card, "Approve and go"), "alice", delivery_id="d1")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
    finally:
        await hub.close()


async def test_words_in_the_keep_planning_form_never_approve_the_plan(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path) -> None:
    """"go" or "1" typed as feedback is feedback: the plan card is declined with it, the agent plans again."""
    ws = ws_of(tmp_path)
    hub, _store, md, watch = await planning(double_factory, cli_home, tmp_path,
                                           turns(f"{ws}/notes.txt", plans=(PLAN, PLAN2)))
    try:
        await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        card = await watch.card("ask:1-q1")
        assert (await drive(hub).handle_action(button(card, "Keep planning…"), "alice", delivery_id="d1",
                                               text="1")).ok
        await watch.card("ask:1-q2")  # a new plan: the first was not approved
        assert not (ws / "notes.txt").exists()
        assert "Their words: 1" in results(md)[-1]
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title == "📝 alice asked for more planning" and "Feedback: 1" in settled.text
    finally:
        await hub.close()


async def test_a_late_keep_planning_click_is_told_the_card_is_settled_before_any_form(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    ws = ws_of(tmp_path)
    hub, _store, _md, watch = await planning(double_factory, cli_home, tmp_path,
                                           turns(f"{ws}/notes.txt"))
    try:
        started = await drive(hub).start("plan it", THREAD, "alice", options=RunOptions(plan=True))
        card = await watch.card("ask:1-q1")
        fresh = await drive(hub).handle_action(button(card, "Keep planning…"), "bea", delivery_id="d0")
        assert fresh.form is not None  # an open card: the words form
        assert (await drive(hub).handle_action(button(card, "Approve and go"), "alice", delivery_id="d1")).ok
        late = await drive(hub).handle_action(button(card, "Keep planning…"), "bea", delivery_id="d2")
        assert late.form is None and not late.ok and "already settled (answered by alice)" in late.message
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
    finally:
        await hub.close()
