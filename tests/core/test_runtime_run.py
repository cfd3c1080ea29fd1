"""Runtime through the real SDK + CLI against the model double: plain runs, interrupts, continuity."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeSDKClient

from flower_core.events import Event
from flower_core.human import HumanChannel
from flower_core.runtime import Resilience, Runtime
from flower_core.runtime.handoff import NEUTRAL_RESUME
from tests.conftest import scenario_of
from tests.support.runtime_support import Recorder, make_runtime, spec


async def test_plain_run_books_text_cost_and_manifest(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}],
         "usage": {"input_tokens": 1500, "cache_read_input_tokens": 500}},
        {"say": "It says {last_tool_result}", "usage": {"input_tokens": 2100}},
    ]}))
    sessions: list[str] = []
    rt = make_runtime(tmp_path, md, cli_home, on_session=sessions.append)
    (rt.workspace / "notes.md").write_text("hello")

    def broken_sink(ev: Event) -> None:
        seen.append(ev)
        raise RuntimeError("a UI bug")  # must never break the run

    seen: list[Event] = []
    try:
        assert rt.interrupt("nobody is running") is False
        r = await rt.run(spec(), "summarise notes.md", step_name="read", on_event=broken_sink)
    finally:
        rt.close()
    assert r.ok and r.error is None and r.step == "read"
    assert r.text == "Reading.\n\nIt says 1\thello"
    assert r.cost_usd > 0 and r.num_turns == 2 and r.attempts == 1 and not r.resumed
    assert r.context == 2100 and sessions == [r.session_id]
    assert [e.kind for e in seen][-1] == "result" and any(e.kind == "tool_call" for e in seen)
    assert rt.ui_errors and rt.total_cost() == round(r.cost_usd, 4) and rt.results == [r]
    rows = json.loads(rt.manifest_path.read_text())
    assert len(rows) == 1 and rows[0]["step"] == "read" and rows[0]["ok"] is True
    assert rows[0]["run"] == rt.run_id and rows[0]["session_id"] == r.session_id
    assert (tmp_path / "runs" / "sessions.db").is_file()


async def test_subagent_speech_stays_out_of_the_step_text(double_factory: Any, cli_home: Path,
                                                          tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        {"name": "worker", "match": "count the files", "turn": [{"say": "There are 3 files."}]},
        {"name": "main", "turn": [
            {"say": "Delegating.", "call": [{"tool": "Agent", "input": {
                "description": "count", "prompt": "Please count the files", "subagent_type": "general-purpose",
                "run_in_background": False}}]},
            {"say": "The worker is done."},
        ]}))
    rt = make_runtime(tmp_path, md, cli_home)
    rec = Recorder()
    try:
        r = await rt.run(spec(allowed_tools=["Read", "Agent"]), "do it", on_event=rec)
    finally:
        rt.close()
    assert r.ok and r.text == "Delegating.\n\nThe worker is done."
    sub = [e for e in rec.kinds("text") if e.payload.get("subagent")]
    assert [e.text for e in sub] == ["There are 3 files."]


@pytest.mark.parametrize("words", ["use tabs", ""])
async def test_interrupt_from_another_thread_resumes_the_same_session(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path, words: str) -> None:
    # The interrupt lands either while Read runs (the CLI then adds an interrupted assistant entry, so the
    # resumed request is turn 2) or while the slow turn 1 is in flight (turn 1 is served again): both hear it.
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
        {"say": "Heard: {last_user_text}", "delay_s": 1.5},
    ]}))
    rt = make_runtime(tmp_path, md, cli_home)
    (rt.workspace / "notes.md").write_text("hello")
    threads: list[threading.Thread] = []

    def react(ev: Event) -> None:
        if ev.kind == "tool_call" and not threads:
            threads.append(threading.Thread(target=rt.interrupt, args=(words,)))
            threads[0].start()

    rec = Recorder(react)
    try:
        r = await rt.run(spec(), "format the file", on_event=rec)
    finally:
        rt.close()
    first_session = rec.kinds("system")[0].payload["session_id"]
    assert r.ok and r.session_id == first_session and r.attempts == 1 and not r.retired
    last = md.model_requests()[-1]
    said = words or NEUTRAL_RESUME  # no words: a neutral "continue" resumes the session
    assert said in last.last_user_text and Runtime.INTERRUPT_NOTE in last.last_user_text
    assert "format the file" in last.first_user_text  # same conversation, not a new one
    assert r.text.startswith("Reading.") and "Heard:" in r.text and said in r.text
    assert rec.kinds("result")[0].text == "error_during_execution"  # the interrupted attempt


async def test_a_fresh_runtime_resumes_a_session_from_sessions_db(double_factory: Any, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "First answer."},
        {"say": "Second answer to: {last_user_text}"},
    ]}))
    one, two = tmp_path / "cfg1", tmp_path / "cfg2"  # a different CLI config dir: nothing local to resume from
    one.mkdir()
    two.mkdir()
    rt1 = make_runtime(tmp_path, md, one)
    try:
        r1 = await rt1.run(spec(), "first question")
    finally:
        rt1.close()
    rt2 = make_runtime(tmp_path, md, two)
    try:
        assert r1.session_id and rt2.has_session(r1.session_id) and rt2.context_of(r1.session_id) > 0
        assert not rt2.has_session("00000000-0000-0000-0000-000000000000")
        r2 = await rt2.run(spec(), "second question", resume=r1.session_id)
    finally:
        rt2.close()
    assert r2.ok and r2.session_id == r1.session_id and r2.text == "Second answer to: second question"
    assert md.model_requests()[-1].turn == 1
    rows = json.loads(rt2.manifest_path.read_text())
    assert {row["run"] for row in rows} == {rt1.run_id, rt2.run_id} and rt1.run_id != rt2.run_id


async def test_rescue_books_the_step_in_flight(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Slow.", "delay_s": 1.0}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        task = asyncio.create_task(rt.run(spec(), "take your time", step_name="slow"))
        await md.wait_for(lambda reqs: any(q.path == "/v1/messages" for q in reqs), timeout=60)
        rt.rescue()
        rows = json.loads(rt.manifest_path.read_text())
        assert [(row["step"], row["error"], row["ok"]) for row in rows] == [("slow", Runtime.KILLED, False)]
        r = await task
    finally:
        rt.close()
    rows = json.loads(rt.manifest_path.read_text())
    assert r.ok and len(rows) == 1 and rows[0]["ok"] is True  # the finished step replaced the rescue row


async def test_a_cancel_after_rescue_keeps_the_killed_mark(double_factory: Any, cli_home: Path,
                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Slow.", "delay_s": 2.0}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        task = asyncio.create_task(rt.run(spec(), "take your time", step_name="slow"))
        await md.wait_for(lambda reqs: any(q.path == "/v1/messages" for q in reqs), timeout=60)
        rt.rescue()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        rt.close()
    rows = json.loads(rt.manifest_path.read_text())
    assert [(row["step"], row["error"], row["ok"]) for row in rows] == [("slow", Runtime.KILLED, False)]
    assert not any("\x1b" in line for line in rt.results[-1].text.splitlines())


async def test_a_cancelled_run_stops_the_turn_in_flight(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    # Without an interrupt before hanging up, the CLI finishes the turn: it would run the Glob and ask again.
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Looking.", "call": [{"tool": "Glob", "input": {"pattern": "*"}}], "delay_s": 1.0},
        {"say": "Should never be asked for."}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        task = asyncio.create_task(rt.run(spec(), "look around", step_name="cancelled"))
        await md.wait_for(lambda reqs: any(q.path == "/v1/messages" for q in reqs), timeout=60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # returns once the CLI process has exited
    finally:
        rt.close()
    assert [q.turn for q in md.model_requests()] == [0]
    assert rt.results[-1].error == "cancelled"


async def test_an_interrupt_right_behind_an_answer_does_not_cost_the_answer(double_factory: Any, cli_home: Path,
                                                                            tmp_path: Path) -> None:
    """A person answers and, the same moment, someone interrupts: the interrupt waits until the CLI holds
    the answer (else the CLI rejects the question's call and the answer never reaches the model)."""
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "Asking.", "call": [{"tool": "mcp__human__ask", "input": {"question": "Which colour?"}}]},
        {"say": "Colour: {last_tool_result}"},
    ]}))
    rt = make_runtime(tmp_path, md, cli_home)
    loop = asyncio.get_running_loop()

    def both_at_once(ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            def go() -> None:
                assert ch.answer(str(ev.payload["id"]), "blue")
                assert rt.interrupt("and use tabs")
            loop.call_soon(go)

    ch = HumanChannel(on_event=both_at_once)
    try:
        r = await rt.run(spec(channel=ch), "paint it", step_name="paint")
    finally:
        rt.close()
    assert r.ok, r.error
    results = [q.last_tool_result for q in md.model_requests()]
    assert "blue" in results, results  # the answer reached the model as the call's result
    assert any("and use tabs" in q.last_user_text for q in md.model_requests())


async def test_an_answer_as_an_interrupt_lands_is_refused_not_dropped(double_factory: Any, cli_home: Path,
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone interrupts a waiting question and a person answers it in the very instant the interrupt goes
    to the CLI (the answer rides on the SDK's interrupt call here): the question was withdrawn first, so
    the answer is refused (the person is told) rather than accepted and then dropped by the CLI rejecting
    the interrupted call. The model hears the interrupt's words."""
    md = await double_factory(scenario_of({"name": "main", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "Asking.", "call": [{"tool": "mcp__human__ask", "input": {"question": "Which colour?"}}]},
        {"say": "Colour: {last_tool_result}"},
    ]}))
    rt = make_runtime(tmp_path, md, cli_home)
    accepted: list[bool] = []
    real_interrupt = ClaudeSDKClient.interrupt

    async def answer_as_the_interrupt_lands(client: ClaudeSDKClient) -> None:
        accepted.extend(ch.answer(a.id, "blue") for a in ch.asks)
        await real_interrupt(client)

    monkeypatch.setattr(ClaudeSDKClient, "interrupt", answer_as_the_interrupt_lands)

    def interrupt_when_asked(ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            asyncio.get_running_loop().call_soon(rt.interrupt, "and use tabs")

    ch = HumanChannel(on_event=interrupt_when_asked)
    try:
        r = await rt.run(spec(channel=ch), "paint it", step_name="paint")
    finally:
        rt.close()
    assert r.ok, r.error
    requests = md.model_requests()
    assert accepted == [False] and not any("blue" in (q.last_tool_result or "") for q in requests)
    assert any("and use tabs" in q.last_user_text for q in requests)


async def test_a_question_waiting_longer_than_the_idle_limit_is_not_a_hung_cli(double_factory: Any, cli_home: Path,
                                                                               tmp_path: Path) -> None:
    """The CLI is silent while a person is asked (no parking here): that silence is the person's, so the
    idle limit does not end the attempt; an answer after it still reaches the model in the same turn."""
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [{"tool": "mcp__human__ask", "input": {"question": "Which colour?"}}]},
        {"say": "Colour: {last_tool_result}"},
    ]}))
    # Long enough that a loaded machine's CLI start or answer-to-next-message gap never passes it (1 s did,
    # beside two `yes` in CI); the question waits twice as long.
    idle = 6.0
    rt = make_runtime(tmp_path, md, cli_home, resilience=Resilience(base_delay=0.01, max_delay=0.05, jitter=0.0,
                                                                    idle_timeout=idle))
    loop = asyncio.get_running_loop()

    def answer_late(ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            loop.call_later(2 * idle, ch.answer, str(ev.payload["id"]), "blue")

    ch = HumanChannel(on_event=answer_late)
    try:
        r = await rt.run(spec(channel=ch), "paint it", step_name="paint")
    finally:
        rt.close()
    assert r.ok and r.attempts == 1, r.error
    assert md.model_requests()[-1].last_tool_result == "blue"


async def test_an_interrupt_while_the_cli_is_still_connecting_is_heard(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """Words given while the attempt's CLI is still starting: the step is not failed and the words are not
    dropped. (An attempt stopped before the CLI named a session starts over with them; the 100-kill
    campaign met that case, a woken run interrupted in its first 0.35 s.)"""
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Heard: {first_user_text}"}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    task = asyncio.create_task(rt.run(spec(), "Count the words.", step_name="work"))
    try:
        # The attempt is on its way (its stop signal is set up before the CLI connects): interrupt before
        # the CLI has said anything, so no session exists yet.
        while not any(s.signal is not None for s in rt._active):
            await asyncio.sleep(0.002)
        assert rt.interrupt("use tabs") is True
        result = await asyncio.wait_for(task, 120)
    finally:
        task.cancel()
        rt.close()
    assert result.ok and result.error is None, result
    said = [r.first_user_text for r in md.model_requests()]
    assert said and all("Count the words." in t for t in said) and "use tabs" in said[-1]
