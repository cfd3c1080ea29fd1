"""A parked plan card at the Runtime, through the real SDK + bundled CLI on the model double: a process that
goes away while the plan waits leaves what the next one needs to show it again, even when it died in the middle
of parking (the CLI had stored its own rejection of the call, the park had not cut it yet); approved there, the
run leaves plan mode and its edit runs once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flower_core.human import HumanChannel
from flower_core.human.plan_review import APPROVE_GO, APPROVED, plan_first
from flower_core.runtime import Runtime
from flower_core.runtime.parked import INTERRUPTED_LINE, REJECTED, ParkRecords, call_entry, prompt_entry, result_entry
from flower_core.session_store import SQLiteSessionStore, stored_entries
from tests.conftest import scenario_of
from tests.support.parking_support import Events, cli_children, parked
from tests.support.runtime_support import FAST, spec

PLAN = "1. Write notes.txt.\n2. Done."
WORKING: dict[str, Any] = {"permission_mode": "acceptEdits", "allowed_tools": ["Read", "Glob", "Grep"],
                           "plan_first": True}


def channel(events: Events, run_dir: Path, ws: Path) -> HumanChannel:
    ch = HumanChannel(on_event=events, timeout_s=600, max_asks=0)
    plan_first(ch, run_dir, cwd=ws)
    return ch


async def close_it_as_the_cli_does(rt: Runtime, sid: str, call_id: str) -> None:
    """Store what the CLI writes when it is interrupted on a call (its rejection, then the interruption line):
    what a process killed between the CLI's writing them and the park's cutting them leaves behind."""
    store, key = SQLiteSessionStore(rt.run_dir / "sessions.db"), {"project_key": rt.project_key, "session_id": sid}
    try:
        call = call_entry(await stored_entries(store, key), call_id)  # type: ignore[arg-type]
        assert call is not None
        rejected = result_entry(call, call_id, "The user doesn't want to proceed with this tool use.", is_error=True)
        rejected["toolUseResult"] = REJECTED
        await store.append(key, [rejected, prompt_entry(rejected, f"{INTERRUPTED_LINE} for tool use]")])  # type: ignore[arg-type, list-item]
    finally:
        store.close()


async def test_a_plan_parked_by_a_process_killed_mid_park_is_shown_again_and_approved_there(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    ws, run_dir = tmp_path / "ws", tmp_path / "runs"
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
        {"say": "Writing.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "notes.txt"),
                                                                  "content": "yo"}}]},
        {"say": "Done: {last_tool_result}"}]}))

    def runtime() -> Runtime:
        return Runtime(workspace=ws, run_dir=run_dir, env=md.env(cli_home), park=0.0, handoff=False, resilience=FAST)

    first, rt = Events(), runtime()
    task = asyncio.create_task(rt.run(spec(channel=channel(first, run_dir, ws), **WORKING), "go", step_name="work",
                                      on_event=first))
    try:
        ev = await first.until(parked)
        sid = ev.payload["session_id"]
        assert ev.payload["kind"] == "plan" and cli_children() == []
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        [record] = ParkRecords(run_dir / "parked").all()
        assert record.kind == "plan" and record.input["plan"] == PLAN
        await close_it_as_the_cli_does(rt, sid, record.call_id)
    finally:
        rt.close()

    second, rt = Events(), runtime()
    ch = channel(second, run_dir, ws)
    task = asyncio.create_task(rt.run(spec(channel=ch, **WORKING), "go", step_name="work", resume=sid,
                                      on_event=second))
    try:
        ev = await second.until(parked)
        assert ev.payload["restored"] is True and ev.payload["kind"] == "plan"
        [waiting] = [a for a in ch.pending() if a.kind == "plan"]
        assert waiting.facts["plan"] == PLAN and not (ws / "notes.txt").exists()
        assert ch.answer(waiting.id, APPROVE_GO)
        result = await asyncio.wait_for(task, 120)
    finally:
        rt.close()
    assert result.ok, result.error
    assert (ws / "notes.txt").read_text() == "yo"
    assert APPROVED in [r.last_tool_result for r in md.model_requests()]
    assert ParkRecords(run_dir / "parked").all() == []


async def test_an_unattended_plan_first_run_is_told_nobody_reviews_and_changes_nothing(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    ws, run_dir = tmp_path / "ws", tmp_path / "runs"
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
        {"say": "Writing anyway.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "notes.txt"),
                                                                         "content": "yo"}}]},
        {"say": "My plan stands: {last_tool_result}"}]}))
    events = Events()
    ch = HumanChannel(on_event=events, timeout_s=0, language="en")  # nobody answers: questions time out at once
    plan_first(ch, run_dir, cwd=ws)
    rt = Runtime(workspace=ws, run_dir=run_dir, env=md.env(cli_home), handoff=False, resilience=FAST)
    try:
        result = await rt.run(spec(channel=ch, **WORKING), "go", step_name="work", on_event=events)
    finally:
        rt.close()
    assert result.ok, result.error
    told = [r.last_tool_result for r in md.model_requests()]
    assert "Nobody is here to review your plan" in told[1]
    assert "nothing may change before a person has approved your plan" in told[2]  # still planning
    assert not (ws / "notes.txt").exists() and events.asks() == []
