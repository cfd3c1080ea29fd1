"""Restart: runs come back by themselves, on their old cards, and nothing a person said is lost.

Process A runs to a question and goes away (its CLI killed, as with a crashed host, or stopped
cleanly); process B starts on the same state. What a process killed right after it accepted an
input leaves on disk (the intent logged, nothing carried out) is written into the store as such.
Everything runs through the real SDK + bundled CLI on the model double.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub
from adapters.hub.ledger import CardLedger
from adapters.hub.runs import KEPT
from adapters.memory_surface import MemorySurface
from adapters.state import ChannelPolicy, SQLiteStateStore
from adapters.transport.intents import Intent, Op
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from flower_core.runtime.transcript import CUT_OFF_UNSAFE
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import (
    BACK_NOTE,
    INBOX,
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
FACTORY = one_step_flow(steps=("prep", "ask"), resume_prompt=RESUME)


def two_step_scenario() -> Any:
    """prep, then ask: colour (answered before the restart), size (open when process A goes away). The
    model is never asked to repeat itself: after the size's answer it says what it got."""
    return scenario_of(
        {"name": "prep", "match": "prep: pick", "turn": [{"say": "Prepared."}]},
        {"name": "ask", "match": "ask: pick", "after_end": "Size: {last_tool_result}", "turn": [
            {"say": "Colour?", "call": [ask_call("Which colour?", ["red", "blue"])]},
            {"say": "Size?", "call": [ask_call("Which size?", ["S", "L"])]},
        ]})


def user_side(request: Any) -> str:
    """What the human's side of a request's conversation says (the model's own turns left out)."""
    return json.dumps([m for m in request.body.get("messages", []) if m.get("role") == "user"], ensure_ascii=False)


async def process_a(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface, watch: Watch, *,
                    crash: bool = True) -> tuple[Hub, str, Any, Any]:
    """Run to the second question; ``crash`` kills the CLI first (the host went down), else the bot stops
    cleanly (SIGTERM). Returns process A's hub (still up, for a last word before it goes), the run, the cards."""
    store = SQLiteStateStore(tmp_path / "state.db")
    store.set_channel_policy("memory:C1", ChannelPolicy(responders={"bob"}))
    hub = make_hub(tmp_path, md, cli_home, surface, store, factory=FACTORY)
    run = (await drive(hub).start("pick sizes", THREAD, "alice")).run_id
    q1 = await watch.card("ask:1-q1")
    assert (await drive(hub).handle_action(button(q1, "blue"), "alice", delivery_id="d-0")).ok
    q2 = await watch.card("ask:1-q2")
    await transcript_has(hub.live[run], "ask", "Which size?")
    if crash:
        assert kill_cli_children()  # the agent's CLI dies with the host, mid-question
    return hub, run, q1, q2


async def go_away(hub: Hub) -> None:
    await hub.close()
    hub.store.close()


@dataclass
class Gone:
    """What process A left behind: the model double, the surface it showed the run on, the run, its cards."""

    md: Any
    surface: MemorySurface
    watch: Watch
    run: str
    q1: Any
    q2: Any


async def gone(double_factory: Any, tmp_path: Path, cli_home: Path, *, crash: bool = True) -> Gone:
    """Process A ran the two-step scenario to its second question and went away (see process_a)."""
    md = await double_factory(two_step_scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub_a, run, q1, q2 = await process_a(tmp_path, md, cli_home, surface, watch, crash=crash)
    await go_away(hub_a)
    return Gone(md, surface, watch, run, q1, q2)


def process_b(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface, **kw: Any) -> Hub:
    kw.setdefault("factory", FACTORY)
    return make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), **kw)


def log_as_if_accepted(tmp_path: Path, run: str, intent: Intent) -> None:
    """What a process killed right after it said "ok" leaves: the intent committed, nothing carried out."""
    store = SQLiteStateStore(tmp_path / "state.db")
    assert store.log_intent(run, intent.iid, intent.to_json())
    store.close()


@pytest.mark.parametrize("crash", [True, False], ids=["killed", "stopped"])
async def test_a_restarted_bot_brings_the_run_back_and_its_old_card_answers_it(
        double_factory: Any, cli_home: Path, tmp_path: Path, crash: bool) -> None:
    a = await gone(double_factory, tmp_path, cli_home, crash=crash)
    md, surface, watch, run, q1, q2 = a.md, a.surface, a.watch, a.run, a.q1, a.q2
    asked = len(md.model_requests())

    hub = process_b(tmp_path, md, cli_home, surface)
    assert await hub.recover() == []  # nobody has to wake it
    assert run in hub.live
    await watch.until(lambda s: KEPT in posted(s, "ask:1-q2").msg.text and posted(s, "ask:1-q2").msg.buttons)
    assert any(BACK_NOTE in m.text for m in surface.thread(kind="notice"))
    assert len(md.model_requests()) == asked  # restored from the stored session: no CLI, no model call

    assert (await drive(hub).handle_action(button(q1, "blue"), "alice", delivery_id="d-0")).duplicate  # pre-restart
    answered = await drive(hub).handle_action(button(q2, "L"), "alice", delivery_id="d-1")
    assert answered.ok and answered.message == "Answered: L"
    assert (await drive(hub).handle_action(button(q2, "L"), "alice", delivery_id="d-1")).duplicate
    second = await drive(hub).handle_action(button(q2, "S"), "bob", delivery_id="d-2")
    assert not second.ok and second.duplicate
    await hub.query.wait(run)

    card = posted(surface, "ask:1-q2").msg
    assert card.title == "✅ Answered by alice" and "Answer: L" in card.text
    assert not surface.find("ask:2-")  # the restored question landed on the old card
    assert [m.text for m in surface.thread(kind="prose")][-1] == "Size: L"
    assert len(md.model_requests("prep")) == 1  # the finished step was not redone
    after = md.model_requests("ask")[asked - 1:]
    assert after and after[0].last_tool_result == "L" and RESUME not in after[0].last_user_text
    assert "doesn't want to proceed" not in user_side(after[-1])  # a clean stop's rejection of the call is cut
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]
    assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]
    assert hub.store.count_unsettled_intents() == 0


async def test_an_answer_accepted_just_before_a_crash_reaches_the_model_once(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(two_step_scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub_a, run, _, q2 = await process_a(tmp_path, md, cli_home, surface, watch)  # the CLI is already dead
    answered = await drive(hub_a).handle_action(button(q2, "L"), "alice", delivery_id="d-1")
    assert answered.ok  # accepted: it is in the intent log, but the CLI that asked will never hear it
    await go_away(hub_a)

    hub = process_b(tmp_path, md, cli_home, surface)
    assert await hub.recover() == []
    await hub.query.wait(run)  # nobody clicks again: the accepted answer is applied to the restored question
    card = posted(surface, "ask:1-q2").msg
    assert card.title == "✅ Answered by alice" and "Answer: L" in card.text
    assert [m.text for m in surface.thread(kind="prose")][-1] == "Size: L"
    final = md.model_requests("ask")[-1]
    assert user_side(final).count('"L"') == 1 and final.last_tool_result == "L"


async def test_mail_accepted_before_a_crash_is_delivered_once(double_factory: Any, cli_home: Path,
                                                              tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Done: {last_tool_result}", "turn": [
        {"say": "Ready?", "call": [ask_call("Ready?", ["go"])]},
        {"say": "Reading the inbox.", "call": [{"tool": INBOX, "input": {}}]},
        {"say": "Size?", "call": [ask_call("Which size?", ["S", "L"])]},
    ]}))
    surface = MemorySurface()
    watch = Watch(surface)
    hub_a = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    run = (await drive(hub_a).start("mail", THREAD, "alice")).run_id
    ready = await watch.card("ask:1-q1")
    assert (await drive(hub_a).send(run, "mail-one: use tabs", "alice")).ok
    assert (await drive(hub_a).handle_action(button(ready, "go"), "alice", delivery_id="d-0")).ok
    await watch.card("ask:1-q2")  # the model has read its inbox (mail-one) and asks again
    await transcript_has(hub_a.live[run], "ask", "Which size?")
    assert kill_cli_children()
    assert (await drive(hub_a).send(run, "mail-two: and a README", "alice")).ok  # accepted, never read by this process
    await go_away(hub_a)

    hub = process_b(tmp_path, md, cli_home, surface, factory=one_step_flow())
    assert await hub.recover() == []
    q2 = await watch.until(lambda s: KEPT in posted(s, "ask:1-q2").msg.text and posted(s, "ask:1-q2").msg)
    assert (await drive(hub).handle_action(button(q2, "L"), "alice", delivery_id="d-1")).ok
    await hub.query.wait(run)
    final = user_side(md.model_requests()[-1])
    assert final.count("mail-one: use tabs") == 1 and final.count("mail-two: and a README") == 1
    assert hub.store.count_unsettled_intents() == 0


async def test_interrupt_words_accepted_before_a_crash_reach_the_model(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    a = await gone(double_factory, tmp_path, cli_home)
    md, surface, run = a.md, a.surface, a.run
    log_as_if_accepted(tmp_path, run, Intent(Op.INTERRUPT, "forget the size, use M", user="alice"))

    hub = process_b(tmp_path, md, cli_home, surface)
    assert await hub.recover() == []
    await hub.query.wait(run)
    final = md.model_requests("ask")[-1]
    assert user_side(final).count("forget the size, use M") == 1
    assert final.last_user_text.startswith("forget the size, use M")
    assert posted(surface, "ask:1-q2").msg.title.startswith("✖️")  # withdrawn: the person spoke instead
    assert [m.title for m in surface.thread(kind="summary")] == ["✅ Finished"]


async def test_a_hold_whose_answer_was_never_logged_does_not_lock_the_card(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    """Killed between holding the answer on its card and logging it: nobody was told "ok", so nothing is
    owed, and the card must take answers again after the restart (else every later answer is refused)."""
    a = await gone(double_factory, tmp_path, cli_home)
    record = SQLiteStateStore(tmp_path / "state.db").get_run(a.run)
    assert record is not None
    CardLedger(record.run_dir).hold("1-q2", "M", "alice")  # what the killed process wrote, and no more

    hub = process_b(tmp_path, md=a.md, cli_home=cli_home, surface=a.surface)
    assert await hub.recover() == []
    await a.watch.until(lambda s: KEPT in posted(s, "ask:1-q2").msg.text and posted(s, "ask:1-q2").msg.buttons)
    answered = await drive(hub).handle_action(button(a.q2, "L"), "alice", delivery_id="d-1")
    assert answered.ok and answered.message == "Answered: L", answered
    await hub.query.wait(a.run)
    assert [m.text for m in a.surface.thread(kind="prose")][-1] == "Size: L"
    assert hub.store.count_unsettled_intents() == 0


async def test_a_stop_accepted_before_a_crash_ends_the_run_after_the_restart(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    a = await gone(double_factory, tmp_path, cli_home)
    md, surface, run = a.md, a.surface, a.run
    log_as_if_accepted(tmp_path, run, Intent(Op.STOP, user="alice"))
    asked = len(md.model_requests())

    hub = process_b(tmp_path, md, cli_home, surface)
    assert await hub.recover() == []
    await hub.query.wait(run)
    assert len(md.model_requests()) == asked  # nothing ran
    assert hub.store.get_run(run).status == "stopped"  # type: ignore[union-attr]
    assert [m.title for m in surface.thread(kind="summary")][-1].startswith("⏹️ Stopped")
    assert not posted(surface, "ask:1-q2").msg.buttons
    assert hub.store.count_unsettled_intents() == 0


async def test_with_wake_on_start_off_a_person_wakes_the_run(double_factory: Any, cli_home: Path,
                                                             tmp_path: Path) -> None:
    a = await gone(double_factory, tmp_path, cli_home)
    md, surface, run, q2 = a.md, a.surface, a.run, a.q2

    hub = process_b(tmp_path, md, cli_home, surface, wake_on_start=False)
    assert await hub.recover() == [run]
    assert await hub.recover() == []  # reported once
    status = posted(surface, "status").msg
    assert status.title.startswith("💤") and [b.label for b in status.buttons] == ["Wake"]
    assert any("open question can still be answered" in m.text for m in surface.thread(kind="notice"))
    refused = await drive(hub).handle_action(button(status, "Wake"), "mallory", delivery_id="w-0")
    assert not refused.ok and run not in hub.live
    woke = await drive(hub).handle_action(button(q2, "L"), "alice", delivery_id="d-1")  # an answer wakes it
    assert woke.ok and "waking up" in woke.message
    await hub.query.wait(run)
    assert [m.text for m in surface.thread(kind="prose")][-1] == "Size: L"
    assert posted(surface, "ask:1-q2").msg.title == "✅ Answered by alice"


async def test_a_run_that_cannot_come_back_says_why_and_can_be_woken(double_factory: Any, cli_home: Path,
                                                                     tmp_path: Path) -> None:
    a = await gone(double_factory, tmp_path, cli_home)
    md, surface, watch, run, q2 = a.md, a.surface, a.watch, a.run, a.q2

    def broken(plan: Any) -> Workflow:
        raise OSError("the workspace disk is not mounted")

    hub = process_b(tmp_path, md, cli_home, surface, factory=broken)
    assert await hub.recover() == [run]
    assert any("the workspace disk is not mounted" in m.text for m in surface.thread(kind="notice"))
    status = posted(surface, "status").msg
    hub.transport.kit.factory = FACTORY  # type: ignore[attr-defined]  # the operator mounts the disk
    assert (await drive(hub).handle_action(button(status, "Wake"), "alice", delivery_id="w-1")).ok
    await watch.until(lambda s: KEPT in posted(s, "ask:1-q2").msg.text)
    assert (await drive(hub).handle_action(button(q2, "S"), "bob", delivery_id="d-1")).ok
    await hub.query.wait(run)
    assert [m.text for m in surface.thread(kind="prose")][-1] == "Size: S"


BUILD = "python3 -c 'import time; time.sleep(300)  # slow_build' && touch built.txt"


def kill_tree(pids: list[int]) -> None:
    """SIGKILL what these processes started (a shell command's processes), as a host crash would."""
    kids: list[int] = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid in pids:
            kids.append(int(entry))
    if kids:
        kill_tree(kids)
    for pid in kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def test_a_shell_command_cut_off_by_a_crash_is_not_run_again_blindly(double_factory: Any, cli_home: Path,
                                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Checked: {last_tool_result}", "turn": [
        {"say": "Building.", "call": [{"tool": "Bash", "input": {"command": BUILD}}]},
    ]}))
    surface = MemorySurface()

    def factory(plan: Any) -> Workflow:
        ch = HumanChannel(timeout_s=60)
        spec = AgentSpec(name="builder", allowed_tools=["Bash"], channel=ch, max_turns=6)
        return Workflow([Step("work", spec, f"work: {plan.task}", resume_prompt=RESUME)], channel=ch)

    hub_a = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"), factory=factory)
    run = (await drive(hub_a).start("build", THREAD, "alice")).run_id
    await transcript_has(hub_a.live[run], "work", "slow_build")
    pids = kill_cli_children()
    kill_tree(pids)
    await go_away(hub_a)

    hub = process_b(tmp_path, md, cli_home, surface, factory=factory)
    assert await hub.recover() == []
    await hub.query.wait(run)
    assert any("cut off Bash" in m.text and "may not have taken effect" in m.text
               for m in surface.thread(kind="notice"))
    final = md.model_requests()[-1]
    assert CUT_OFF_UNSAFE in user_side(final) and "[Tool call interrupted" not in user_side(final)
    assert [m.text for m in surface.thread(kind="prose")][-1].startswith("Checked:")
    workspace = Path(hub.store.get_run(run).workspace)  # type: ignore[union-attr]
    assert not (workspace / "built.txt").exists()
