"""Parked tool approvals through the real SDK + bundled CLI on the model double, at the Runtime: an
approval that waits closes the CLI like a question; decided, the run resumes and the approved tool runs
exactly once in the CLI (a denied one never, the model reading the person's words as its result)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower_core.human import HumanChannel
from flower_core.human.approval import CANCELLED, ApprovalGate
from flower_core.permissions import Policy
from flower_core.runtime import Runtime
from flower_core.runtime.park_approval import ALLOWED_NOTE, DENIED_NOTE
from flower_core.runtime.parked import ParkRecords
from tests.conftest import scenario_of
from tests.support.parking_support import Events, alive, cli_children, last_two, parked
from tests.support.runtime_support import FAST, spec

WORKING: dict[str, Any] = {"permission_mode": "acceptEdits", "allowed_tools": ["Read", "Glob", "Grep", "Bash"]}


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}}


@dataclass
class Rig:
    md: Any
    ws: Path
    run_dir: Path
    env: dict[str, str]
    tmp: Path

    def channel(self, events: Events) -> HumanChannel:
        ch = HumanChannel(on_event=events, timeout_s=600, max_asks=0, log_path=self.tmp / "qa.md")
        ch.approvals = ApprovalGate(Policy.of(ask=["Bash"]), cwd=self.ws, grants_path=self.run_dir / "approvals.json")
        return ch

    def runtime(self) -> Runtime:
        return Runtime(workspace=self.ws, run_dir=self.run_dir, env=self.env, park=0.2, handoff=False, resilience=FAST)

    def effect(self) -> str:
        path = self.ws / "effect.txt"
        return path.read_text() if path.exists() else ""

    def records(self) -> ParkRecords:
        return ParkRecords(self.run_dir / "parked")


async def rig(double_factory: Any, cli_home: Path, tmp: Path, turns: list[dict[str, Any]]) -> Rig:
    md = await double_factory(scenario_of({"name": "main", "turn": turns}))
    home = tmp / "home"
    home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
    return Rig(md, tmp / "ws", tmp / "runs", {**md.env(cli_home), "HOME": str(home)}, tmp)


def approvals_asked(events: Events) -> list[dict[str, Any]]:
    return [e.payload for e in events.events
            if e.kind == "ask" and e.payload.get("kind") == "approval" and e.payload["state"] == "asked"]


async def next_park(events: Events, seen: int) -> Any:
    return await events.until(lambda ev: parked(ev) and len(events.system("parked")) > seen)


async def test_parked_approvals_allowed_once_and_for_the_run_each_run_their_command_exactly_once(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    r = await rig(double_factory, cli_home, tmp_path, [
        {"say": "a", "call": [bash("echo a >> effect.txt; echo out=a")]},
        {"say": "b", "call": [bash("echo b >> effect.txt; echo out=b")]},
        {"say": "c", "call": [bash("echo c >> effect.txt; echo out=c")]},
        {"say": "Saw: {last_tool_result}"}])
    pids: list[int] = []
    events = Events(on_asked=lambda ev: pids.extend(cli_children()))
    ch, rt = r.channel(events), r.runtime()
    task = asyncio.create_task(rt.run(spec(channel=ch, **WORKING), "go", step_name="work", on_event=events))
    try:
        ev = await next_park(events, 0)
        assert ev.payload["kind"] == "approval" and ev.payload["tool"] == "Bash"
        assert pids and not any(alive(p) for p in pids) and cli_children() == []  # no CLI while it waits
        sid = ev.payload["session_id"]
        assert r.effect() == ""
        [waiting] = ch.pending_approvals()
        assert waiting.facts["input"] == {"command": "echo a >> effect.txt; echo out=a"}
        assert ch.approve(waiting.id, "once", by="ana")
        kept = r.records().load(sid)  # durable before approve() said yes
        assert kept is not None and kept.decision == "once" and kept.tool == "Bash"
        ev = await next_park(events, 1)  # the second call waits (and parks) in turn
        assert r.effect() == "a\n"
        [waiting] = ch.pending_approvals()
        assert ch.approve(waiting.id, "run", by="bo")
        result = await task
    finally:
        rt.close()
    assert result.ok, result.error
    assert r.effect() == "a\nb\nc\n"  # each once; the third was not asked (allowed for the run)
    assert [a["input"]["command"][:6] for a in approvals_asked(events)] == ["echo a", "echo b"]
    assert [e.payload["outcome"] for e in events.system("unparked")] == ["answered", "answered"]
    assert result.text.endswith("Saw: out=c")
    history = str(r.md.model_requests()[-1].body["messages"])
    assert history.count(ALLOWED_NOTE.format(tool="Bash")) == 2  # the model was told to make each call again
    decisions = [(d["decision"], d["by"]) for d in json.loads(rt.manifest_path.read_text())[-1]["approvals"]]
    assert decisions == [("once", "ana"), ("run", "bo")]
    assert r.records().all() == []


async def test_a_parked_approval_denied_with_words_never_runs_and_the_model_reads_the_words(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    r = await rig(double_factory, cli_home, tmp_path, [
        {"say": "a", "call": [bash("echo a >> effect.txt")]}, {"say": "Saw: {last_tool_result}"}])
    events = Events()
    ch, rt = r.channel(events), r.runtime()
    task = asyncio.create_task(rt.run(spec(channel=ch, **WORKING), "go", step_name="work", on_event=events))
    try:
        await next_park(events, 0)
        asked = len(r.md.model_requests())
        [waiting] = ch.pending_approvals()
        assert ch.approve(waiting.id, "deny", "not on main; use a branch", by="ana")
        result = await task
    finally:
        rt.close()
    assert result.ok, result.error
    assert r.effect() == ""
    resumed = r.md.model_requests()[asked:]
    assert len(resumed) == 1 and resumed[0].turn == 1  # the turn continued: the model was not asked again
    tail = last_two(resumed[0])
    assert tail[1]["role"] == "user" and tail[1]["blocks"][0][0] == "tool_result"
    assert "not on main; use a branch" in tail[1]["blocks"][0][2]
    assert tail[1]["blocks"][1] == ("text", "", DENIED_NOTE.format(tool="Bash"))
    assert resumed[0].body["messages"][-1]["content"][0]["is_error"] is True
    rows = json.loads(rt.manifest_path.read_text())[-1]["approvals"]
    assert [(d["decision"], d["allowed"]) for d in rows] == [("deny", False)]


async def test_a_parked_approval_outlives_its_process_and_a_decision_kept_before_a_crash_is_applied(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """The process goes away while the approval is parked (its run cancelled); a new one resuming the session
    asks it again, parked from the start (no CLI). That one goes away too, right after a person's "once" was
    kept in the record (what a kill between keeping it and resuming leaves): a third applies it without asking
    anyone, and the command runs once."""
    r = await rig(double_factory, cli_home, tmp_path, [
        {"say": "a", "call": [bash("echo a >> effect.txt")]}, {"say": "Saw: {last_tool_result}"}])
    events = Events()
    rt = r.runtime()
    task = asyncio.create_task(rt.run(spec(channel=r.channel(events), **WORKING), "go", step_name="work",
                                      on_event=events))
    try:
        sid = (await next_park(events, 0)).payload["session_id"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        rt.close()
    kept = r.records().load(sid)
    assert kept is not None and kept.kind == "approval" and kept.decision == ""

    second, rt = Events(), r.runtime()
    ch = r.channel(second)
    task = asyncio.create_task(rt.run(spec(channel=ch, **WORKING), "go", step_name="work", resume=sid,
                                      on_event=second))
    try:
        ev = await next_park(second, 0)
        assert ev.payload["restored"] is True and ev.payload["kind"] == "approval" and cli_children() == []
        [waiting] = ch.pending_approvals()
        assert waiting.restored and waiting.facts == {"tool": "Bash", "input": {"command": "echo a >> effect.txt"}}
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        rt.close()
    kept = r.records().load(sid)
    assert kept is not None
    kept.decision = "once"
    r.records().save(kept)

    third, rt = Events(), r.runtime()
    try:
        result = await rt.run(spec(channel=r.channel(third), **WORKING), "go", step_name="work", resume=sid,
                              on_event=third)
    finally:
        rt.close()
    assert result.ok, result.error
    assert r.effect() == "a\n" and result.text.endswith("Saw: (Bash completed with no output)")
    assert third.asks()[-1][1] == "answered"  # its card shows the decision; nobody was asked again
    assert r.records().all() == []


async def test_an_approval_waiting_live_is_recorded_and_its_record_goes_before_the_cli_hears_the_decision(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """Not parked yet (park_after_s is long): the approval's record says the call waits for a person (what a
    new process needs if this one dies now); it goes the moment a person decides, before the call runs, so a
    crash while it runs can never ask it again and run it twice."""
    r = await rig(double_factory, cli_home, tmp_path, [
        {"say": "a", "call": [bash("echo a >> effect.txt")]}, {"say": "done"}])
    events = Events()
    ch = r.channel(events)
    rt = Runtime(workspace=r.ws, run_dir=r.run_dir, env=r.env, park=600, handoff=False, resilience=FAST)
    task = asyncio.create_task(rt.run(spec(channel=ch, **WORKING), "go", step_name="work", on_event=events))
    try:
        await events.until(lambda ev: ev.kind == "ask" and ev.payload.get("kind") == "approval")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not r.records().all():
            assert loop.time() < deadline, "the waiting approval was never recorded"
            await asyncio.sleep(0.05)
        [record] = r.records().all()
        assert record.kind == "approval" and record.input == {"command": "echo a >> effect.txt"}
        assert not events.system("parked") and r.effect() == ""
        [waiting] = ch.pending_approvals()
        assert ch.approve(waiting.id, "once")
        assert r.records().all() == []  # gone before approve() returned, so before the CLI heard it
        result = await task
    finally:
        rt.close()
    assert result.ok and r.effect() == "a\n"
    assert r.records().all() == []


async def test_an_interrupt_and_a_click_on_a_parked_approval_the_first_one_decides(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """A: "Allow once" lands in the same instant as an interrupt (before the runtime heard it): the allow
    stands, the person was told so truthfully, the command runs once and the model hears the words too.
    B: the interrupt is heard first: the approval is withdrawn, a click after it is refused (never "allowed"
    about a call that will not run), the command never runs, the model reads the words."""
    r = await rig(double_factory, cli_home, tmp_path, [
        {"say": "a", "call": [bash("echo a >> effect.txt")]}, {"say": "b", "call": [bash("echo b >> effect.txt")]},
        {"say": "Heard: {last_user_text}"}])
    events = Events()
    ch, rt = r.channel(events), r.runtime()
    task = asyncio.create_task(rt.run(spec(channel=ch, **WORKING), "go", step_name="work", on_event=events))
    try:
        await next_park(events, 0)
        [a] = ch.pending_approvals()
        rt.interrupt("and use tabs")
        assert ch.approve(a.id, "once", by="ana")  # the same loop tick: the runtime has not seen the words yet
        await next_park(events, 1)
        assert r.effect() == "a\n"
        [b] = ch.pending_approvals()
        rt.interrupt("stop, leave b")
        await events.until(lambda ev: ev.kind == "ask" and ev.payload.get("id") == b.id
                           and ev.payload.get("state") == "cancelled")
        assert not ch.approve(b.id, "once", by="bo")  # too late: withdrawn by the interrupt
        result = await task
    finally:
        rt.close()
    assert result.ok, result.error
    assert r.effect() == "a\n"  # a once, b never
    history = str(r.md.model_requests()[-1].body["messages"])
    assert "and use tabs" in history and ALLOWED_NOTE.format(tool="Bash") in history
    assert "stop, leave b" in history and CANCELLED.format(tool="Bash") in history  # b's result, then the words
    assert [e.payload["outcome"] for e in events.system("unparked")] == ["answered", "cancelled"]
