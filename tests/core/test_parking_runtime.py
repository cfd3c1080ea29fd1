"""Parking through the real SDK + bundled CLI on the model double, at the Runtime: a question that
waits closes the CLI; its outcome resumes the same session as that call's tool result."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower_core.human import DECLINED, TIMEOUT, HumanChannel
from flower_core.runtime import Runtime
from flower_core.runtime.parked import ParkRecords
from flower_core.runtime.parking import RESUME_NOTE, WITHDRAWN
from tests.conftest import scenario_of
from tests.support.parking_support import Events, alive, ask_call, cli_children, last_two, parked
from tests.support.runtime_support import make_runtime, spec

COLOUR = [
    {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]},
    {"say": "The human said: {last_tool_result}"},
]


@dataclass
class Parked:
    """A step running on the double, parked on its first question."""

    md: Any
    rt: Runtime
    ch: HumanChannel
    events: Events
    task: asyncio.Task[Any]
    pids: list[int]  # the CLI processes alive while it asked


async def _parked_run(double_factory: Any, cli_home: Path, tmp_path: Path, turns: list[dict[str, Any]],
                      *, timeout_s: float = 60.0) -> Parked:
    md = await double_factory(scenario_of({"name": "main", "turn": turns}))
    pids: list[int] = []
    events = Events(on_asked=lambda ev: pids.extend(cli_children()))
    ch = HumanChannel(on_event=events, timeout_s=timeout_s)
    rt = make_runtime(tmp_path, md, cli_home, park=0.2)
    task = asyncio.create_task(rt.run(spec(channel=ch), "pick a colour", step_name="ask", on_event=events))
    await events.until(parked)
    return Parked(md, rt, ch, events, task, pids)


async def test_a_parked_question_comes_back_as_its_tool_result_in_the_same_session(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    p = await _parked_run(double_factory, cli_home, tmp_path, COLOUR)
    md, rt, ch, events, pids = p.md, p.rt, p.ch, p.events, p.pids
    try:
        assert pids and not any(alive(p) for p in pids)  # the CLI that asked is gone
        assert cli_children() == []
        ev = events.system("parked")[0]
        sid = ev.payload["session_id"]
        assert ev.payload["question"] == "Which colour?" and ev.payload["restored"] is False
        assert [a.question for a in ch.pending()] == ["Which colour?"]  # still open for the person
        assert ParkRecords(rt.run_dir / "parked").load(sid) is not None  # what a restart would need
        asked = len(md.model_requests())
        assert ch.answer(ch.pending()[0].id, "blue")
        result = await p.task
    finally:
        rt.close()
    assert result.ok and result.session_id == sid and result.text == "Asking.\n\nThe human said: blue"
    resumed = md.model_requests()[asked:]
    assert len(resumed) == 1 and resumed[0].served == "turn" and resumed[0].turn == 1
    call_id = next(e.payload["id"] for e in events.events if e.kind == "tool_call")
    assert last_two(resumed[0]) == [
        {"role": "assistant", "blocks": [("text", "", "Asking."), ("tool_use", call_id, "mcp__human__ask")]},
        {"role": "user", "blocks": [("tool_result", call_id, "blue"), ("text", "", RESUME_NOTE)]},
    ]
    assert "No response requested." not in str(resumed[0].body["messages"])
    assert resumed[0].first_user_text.endswith("pick a colour")  # the same conversation, resumed
    assert events.asks() == [("q1", "asked"), ("q1", "answered")]
    assert [e.payload["outcome"] for e in events.system("unparked")] == ["answered"]
    # The CLI's own closing of the parked call (rejected, interrupted) is not reported: it never happened
    # as far as the resumed session is concerned.
    assert not any(e.kind == "tool_result" and "doesn't want to proceed" in e.text for e in events.events)
    assert not any("[Request interrupted" in e.text for e in events.events)
    assert ParkRecords(rt.run_dir / "parked").all() == []


async def test_a_parked_question_times_out_and_is_declined_like_a_live_one(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    turns = [COLOUR[0], {"say": "Then: {last_tool_result}", "call": [ask_call("Which size?")]},
             {"say": "Size: {last_tool_result}"}]
    p = await _parked_run(double_factory, cli_home, tmp_path, turns, timeout_s=1.5)
    md, rt, ch, events = p.md, p.rt, p.ch, p.events
    try:
        await events.until(lambda e: e.kind == "ask" and e.payload.get("state") == "timeout")
        await events.until(lambda e: parked(e) and e.payload["question"] == "Which size?")  # parked again
        assert cli_children() == []
        assert ch.decline(ch.pending()[0].id, "not now")
        result = await p.task
    finally:
        rt.close()
    assert result.ok and len({e.payload["session_id"] for e in events.system("parked")}) == 1
    assert events.asks() == [("q1", "asked"), ("q1", "timeout"), ("q2", "asked"), ("q2", "declined")]
    requests = md.model_requests()
    assert requests[1].last_tool_result == TIMEOUT and requests[2].last_tool_result.startswith(DECLINED)
    assert "not now" in requests[2].last_tool_result and result.text.endswith(requests[2].last_tool_result)


async def test_mail_sent_to_a_parked_run_is_delivered_when_it_resumes(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    p = await _parked_run(double_factory, cli_home, tmp_path, COLOUR)
    try:
        mail = p.ch.send("also: make it round")
        assert mail is not None and mail.state == "queued"
        p.ch.answer(p.ch.pending()[0].id, "red")
        result = await p.task
    finally:
        p.rt.close()
    assert result.ok and mail.state == "delivered"
    blocks = last_two(p.md.model_requests()[-1])[1]["blocks"]
    assert blocks[0][2] == "red" and "make it round" in blocks[1][2] and blocks[1][2].startswith(RESUME_NOTE)


async def test_an_interrupt_resumes_a_parked_run_with_the_persons_words(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    turns = [COLOUR[0], {"say": "You said: {last_user_text}"}]
    p = await _parked_run(double_factory, cli_home, tmp_path, turns)
    try:
        assert p.rt.interrupt("forget the colour, use the default")
        result = await p.task
    finally:
        p.rt.close()
    assert result.ok and p.events.asks() == [("q1", "asked"), ("q1", "cancelled")]
    last = last_two(p.md.model_requests()[-1])[1]["blocks"]
    assert last[0][0] == "tool_result" and last[0][2] == WITHDRAWN
    assert last[1][2].startswith("forget the colour, use the default") and p.rt.INTERRUPT_NOTE in last[1][2]
    assert result.text.startswith("Asking.\n\nYou said: forget the colour")


async def test_a_parked_run_cancelled_settles_its_question_and_keeps_the_record(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    p = await _parked_run(double_factory, cli_home, tmp_path, COLOUR)
    try:
        p.ch.send("kept for later")
        p.task.cancel()
        await asyncio.gather(p.task, return_exceptions=True)
    finally:
        p.rt.close()
    assert p.events.asks() == [("q1", "asked"), ("q1", "cancelled")]
    record = ParkRecords(p.rt.run_dir / "parked").all()[0]
    assert record.question == "Which colour?" and record.kept_mail() == [("m1", "kept for later")]
