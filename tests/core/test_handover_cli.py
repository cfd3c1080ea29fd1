"""The hand-over through the real SDK + bundled CLI on the model double: a process dies after the person's
answer was stored as the question's tool result and before the model's next turn; the next process's
first request carries that answer as its input, said plainly, with no "No response requested." stand-in."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from claude_agent_sdk import project_key_for_directory

from flower_core.human import HumanChannel
from flower_core.runtime import Runtime
from flower_core.runtime.handover import HEAD, hand_over
from flower_core.runtime.parked import prompt_entry
from flower_core.runtime.transcript import unacted
from flower_core.session_store import stored_entries
from tests.conftest import scenario_of
from tests.support.parking_support import Events, ask_call
from tests.support.runtime_support import make_runtime, spec

RESUME = "You were cut off by a restart. Continue where you were; ask again what was not answered."
ASKING = {"say": "Asking.", "call": [ask_call("Which colour?", ["red", "blue"])]}
ANSWERED = {"say": "The human said: {last_tool_result}"}


def _key(rt: Runtime, sid: str) -> Any:
    return {"project_key": project_key_for_directory(str(rt.workspace)), "session_id": sid}


async def _answered_and_held(double_factory: Any, cli_home: Path,
                             tmp_path: Path) -> tuple[Any, Runtime, Events, asyncio.Task[Any]]:
    """A step asks, is answered "blue", and the model's next turn is on its way (the double holds that reply).
    Returns (double, runtime, events, the step's task)."""
    md = await double_factory(scenario_of({"name": "main", "turn": [ASKING, {**ANSWERED, "delay_s": 120}]}))
    rec = Events()
    ch = HumanChannel(timeout_s=60, on_event=rec)
    rt = make_runtime(tmp_path, md, cli_home)
    task = asyncio.create_task(rt.run(spec(channel=ch), "pick a colour", step_name="ask", on_event=rec))
    asked = await rec.until(lambda ev: ev.kind == "ask" and ev.payload.get("state") == "asked")
    assert ch.answer(str(asked.payload["id"]), "blue")
    await md.wait_for(lambda reqs: any(r.turn == 1 for r in reqs if r.path == "/v1/messages"))
    return md, rt, rec, task


async def _died_after_the_answer(double_factory: Any, cli_home: Path, tmp_path: Path) -> tuple[Any, str]:
    """As _answered_and_held, then the process dies before the held reply comes: the session ends on the
    CLI's own tool result. Returns (double, sid)."""
    md, rt, rec, task = await _answered_and_held(double_factory, cli_home, tmp_path)
    try:
        sid = next(str(e.payload["session_id"]) for e in rec.events if e.payload.get("session_id"))
        for _ in range(200):  # the CLI's transcript reaches the store asynchronously: wait for the result entry
            if "'text': 'blue'" in str(unacted(await stored_entries(rt.store, _key(rt, sid)))):
                break  # the answer's tool result is stored, and nothing of the model's after it
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the answer's tool result never reached the store")
    finally:
        task.cancel()  # the process dies: its CLI goes with it
        with contextlib.suppress(asyncio.CancelledError):
            await task
        rt.close()
    md.scenario = scenario_of({"name": "main", "turn": [ASKING, ANSWERED]})  # the model answers at once now
    return md, sid


def _last_message(req: Any) -> str:
    return str(req.body["messages"][-1]["content"])


async def test_the_first_turn_after_a_restart_carries_the_stored_answer(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    md, sid = await _died_after_the_answer(double_factory, cli_home, tmp_path)
    asked = len(md.model_requests())
    rt = make_runtime(tmp_path, md, cli_home)
    channel = HumanChannel(timeout_s=60)
    channel.answered_by["which colour?"] = "Ana"  # what the chat side's Applier tells the channel
    try:
        result = await rt.run(spec(channel=channel), RESUME, step_name="ask", resume=sid)
    finally:
        rt.close()
    assert result.ok and result.text.endswith("The human said: blue")
    first = md.model_requests()[asked]
    assert first.turn == 1  # the answered turn itself goes on: no stand-in assistant turn was added
    assert "No response requested." not in str(first.body["messages"])
    last = first.body["messages"][-1]
    assert last["role"] == "user" and last["content"][0]["type"] == "tool_result"
    said = _last_message(first)
    assert "Your question “Which colour?” was settled by Ana: the outcome is its tool result above." in said
    assert HEAD in said and RESUME in said and said.count("blue") == 1  # the answer once, as the tool result
    assert len(md.model_requests()) == asked + 1  # one turn, which ends the step


async def test_a_second_death_during_the_hand_over_adds_only_what_is_new(double_factory: Any, cli_home: Path,
                                                                         tmp_path: Path) -> None:
    md, sid = await _died_after_the_answer(double_factory, cli_home, tmp_path)
    rt = make_runtime(tmp_path, md, cli_home)
    key = _key(rt, sid)
    try:
        # The next process stores its note and dies before the model's turn; the one after it is told more words.
        assert await hand_over(rt.store, key, ask_tool="mcp__human__ask", prompt=lambda: RESUME)
        assert await hand_over(rt.store, key, ask_tool="mcp__human__ask",
                               prompt=lambda: "The human also said (mid-run): use green instead")
        tail = unacted(await stored_entries(rt.store, key))
        assert [str(e["message"]["content"]).count(HEAD) for e in tail if e["type"] == "user"][-2:] == [1, 0]
        asked = len(md.model_requests())
        result = await rt.run(spec(channel=HumanChannel(timeout_s=60)), RESUME, step_name="ask", resume=sid)
    finally:
        rt.close()
    assert result.ok
    first = md.model_requests()[asked]
    said = _last_message(first)
    assert said.count(HEAD) == 1 and said.count("was settled") == 1 and "use green instead" in said
    assert "No response requested." not in str(first.body["messages"])


async def test_a_session_that_ends_on_the_model_turn_resumes_with_its_prompt(double_factory: Any, cli_home: Path,
                                                                             tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Hello."}, {"say": "Again."}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        first = await rt.run(spec(), "say hello", step_name="hi")
        asked = len(md.model_requests())
        again = await rt.run(spec(), "say it again", step_name="hi", resume=first.session_id)
    finally:
        rt.close()
    assert first.ok and again.ok and again.text == "Again."
    req = md.model_requests()[asked]
    assert HEAD not in str(req.body["messages"]) and "say it again" in _last_message(req)


async def test_words_stored_as_a_prompt_before_a_death_are_the_next_turn_s_input(double_factory: Any,
                                                                                 cli_home: Path,
                                                                                 tmp_path: Path) -> None:
    """The CLI stores a prompt (an interrupt's words) before it calls the model; a death in between leaves
    the session ending on them. The next turn takes them as its input, once, with the note after them."""
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Hello."},
                                                                    {"say": "Heard: {last_user_text}"}]}))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        first = await rt.run(spec(), "say hello", step_name="hi")
        key = _key(rt, first.session_id or "")
        last = [e for e in await stored_entries(rt.store, key) if isinstance(e.get("uuid"), str)][-1]
        await rt.store.append(key, [prompt_entry(last, "use green instead")])
        asked = len(md.model_requests())
        again = await rt.run(spec(), RESUME, step_name="hi", resume=first.session_id)
    finally:
        rt.close()
    assert again.ok
    req = md.model_requests()[asked]
    assert req.turn == 1 and "No response requested." not in str(req.body["messages"])
    said = _last_message(req)
    assert said.count("use green instead") == 1 and HEAD in said and said.index("use green") < said.index(HEAD)
    assert "- The message above." in said and RESUME in said


async def test_an_interrupt_that_cuts_the_answered_turn_carries_the_answer_into_its_own(double_factory: Any,
                                                                                        cli_home: Path,
                                                                                        tmp_path: Path) -> None:
    """The model's turn on an answer is cut by an interrupt before it replies: the turn the interrupt
    starts has the answer and the words as its input (no stand-in turn between them)."""
    md, rt, _, task = await _answered_and_held(double_factory, cli_home, tmp_path)
    try:
        md.scenario = scenario_of({"name": "main", "turn": [ASKING, {"say": "Heard: {last_user_text}"}]})
        held = len(md.model_requests())
        assert rt.interrupt("use green instead")
        result = await asyncio.wait_for(task, 120)
    finally:
        task.cancel()
        rt.close()
    assert result.ok
    after = [r for r in md.model_requests()[held:] if r.served == "turn"]
    first = after[0]
    assert first.turn == 1 and "No response requested." not in str(first.body["messages"])
    said = _last_message(first)
    assert "'text': 'blue'" in said and "use green instead" in said and HEAD in said
