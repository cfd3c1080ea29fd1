"""Parking's pure parts and the channel's side of it, without a CLI: the policy, what is in flight,
the record, the transcript surgery, the store's truncation, and a question held while parked."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from flower_core.events import Event
from flower_core.human import TIMEOUT, HumanChannel
from flower_core.runtime.parked import (
    CONTINUE_ENV,
    CONTINUE_MAX_AGE_ENV,
    CONTINUE_PROMPT_ENV,
    ParkRecord,
    ParkRecords,
    call_entry,
    continue_env,
    open_call,
    result_entry,
)
from flower_core.runtime.parking import Calls, ParkPolicy
from flower_core.session_store import SQLiteSessionStore

ASK = "mcp__human__ask"


def test_policy_coerces_and_never_lets_a_broken_limit_through() -> None:
    assert not ParkPolicy.coerce(None).enabled
    assert ParkPolicy.coerce(0.5).after_s == 0.5 and ParkPolicy.coerce(0).enabled
    policy = ParkPolicy(1.0)
    assert ParkPolicy.coerce(policy) is policy and policy.allowed()
    assert not ParkPolicy(1.0, allow=lambda: False).allowed()
    assert not ParkPolicy(1.0, allow=lambda: 1 / 0 > 0).allowed()  # a raising limit means "not now"
    with pytest.raises(ValueError):
        ParkPolicy(-1.0)


def _call(call_id: str, tool: str, *, sub: bool = False) -> Event:
    return Event("tool_call", tool=tool, payload={"id": call_id, "input": {"question": "Q?"}, "subagent": sub})


def test_only_a_lone_question_in_flight_can_park() -> None:
    calls = Calls()
    calls.observe(_call("a", ASK))
    assert calls.sole_call(ASK) == ("a", {"question": "Q?"}) and calls.changed.is_set()
    calls.observe(_call("b", "Read"))
    assert calls.sole_call(ASK) is None  # another tool still runs
    calls.observe(Event("tool_result", payload={"tool_use_id": "b"}))
    assert calls.sole_call(ASK) == ("a", {"question": "Q?"})
    calls.observe(_call("c", "Bash", sub=True))
    assert calls.sole_call(ASK) is None  # a subagent is working
    calls.observe(Event("tool_result", payload={"tool_use_id": "c", "subagent": True}))
    calls.observe(Event("task", "TaskStartedMessage", payload={"task_id": "t1"}))
    assert calls.sole_call(ASK) is None  # a background task would die with the CLI
    calls.observe(Event("task", "TaskNotificationMessage", payload={"task_id": "t1", "status": "completed"}))
    assert calls.sole_call(ASK) == ("a", {"question": "Q?"})
    assert calls.sole_call("mcp__other__ask") is None
    calls.observe(Event("tool_result", payload={"tool_use_id": "a"}))
    assert calls.sole_call(ASK) is None


def _entries(call_id: str = "toolu_1") -> list[dict[str, Any]]:
    return [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"content": [{"type": "text", "text": "Hm."}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1", "cwd": "/w", "sessionId": "s1", "version": "2",
         "message": {"content": [{"type": "tool_use", "id": call_id, "name": ASK, "input": {}}]}},
        {"type": "last-prompt"},
    ]


def test_the_result_entry_answers_the_call_like_the_clis_own() -> None:
    entries = _entries()
    assert call_entry(entries, "toolu_1") is entries[2] and open_call(entries, "toolu_1") is entries[2]
    assert call_entry(entries, "toolu_9") is None
    entry = result_entry(entries[2], "toolu_1", "blue", now=0.0)
    assert entry["parentUuid"] == entry["sourceToolAssistantUUID"] == "a2" and entry["type"] == "user"
    assert entry["message"] == {"role": "user", "content": [
        {"tool_use_id": "toolu_1", "type": "tool_result", "content": [{"type": "text", "text": "blue"}]}]}
    assert entry["toolUseResult"] == [{"type": "text", "text": "blue"}]
    assert entry["timestamp"] == "1970-01-01T00:00:00.000Z"
    assert (entry["cwd"], entry["sessionId"], entry["version"]) == ("/w", "s1", "2") and entry["uuid"] != "a2"
    assert result_entry(entries[2], "toolu_1", "bad", is_error=True)["message"]["content"][0]["is_error"] is True
    assert open_call([*entries, entry], "toolu_1") is None  # answered: nothing left to park on
    env = continue_env("note")
    assert env[CONTINUE_ENV] == "1" and env[CONTINUE_PROMPT_ENV] == "note" and int(env[CONTINUE_MAX_AGE_ENV]) > 3e11


def test_records_round_trip_and_a_corrupt_one_reads_as_absent(tmp_path: Path) -> None:
    records = ParkRecords(tmp_path / "parked")
    assert records.load("s1") is None and records.all() == []
    rec = ParkRecord("s1", "toolu_1", "ask", "Q?", ["a", "b"], asked_at=12.5, mail=["hi"])
    records.save(rec)
    assert records.load("s1") == rec and records.all() == [rec]
    (tmp_path / "parked" / "s2.json").write_text("{not json")
    assert records.load("s2") is None and records.all() == [rec]
    records.delete("s1")
    records.delete("s1")  # twice is fine
    assert records.load("s1") is None


async def test_the_store_cuts_a_transcript_after_an_entry(tmp_path: Path) -> None:
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        key: Any = {"project_key": "p", "session_id": "s1"}
        await store.append(key, [*_entries(), {"type": "user", "uuid": "u2", "message": {"content": "x"}}])
        assert store.truncate_after("s1", "nope", project_key="p") == 0
        assert store.truncate_after("s1", "a2", project_key="p") == 2
        assert [e.get("uuid") for e in await store.load(key) or []] == ["u1", "a1", "a2"]


async def test_a_parked_question_never_returns_to_its_call_and_settles_for_the_runtime() -> None:
    seen: list[tuple[str, str]] = []
    ch = HumanChannel(on_event=lambda ev: seen.append((ev.payload["id"], ev.payload["state"])), timeout_s=60)
    call = asyncio.create_task(ch.ask_outcome("Q?", ["a", "b"]))
    while not ch.pending():
        await asyncio.sleep(0)
    ask = ch.pending()[0]
    assert ch.park(ask.id) and not ch.park("q9")
    assert ch.answer(ask.id, "a")
    settled = await ch.settled(ask.id)
    assert settled.state == "answered" and settled.reply == "a"
    await asyncio.sleep(0.05)
    assert not call.done()  # the tool call is held: the CLI being closed must never get the answer
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert seen == [("q1", "asked"), ("q1", "answered")]  # the cancelled call settled nothing more
    assert not ch.park(ask.id)


async def test_a_parked_question_times_out_from_when_it_was_asked_and_cancels_with_its_waiter() -> None:
    ch = HumanChannel(timeout_s=60)
    call = asyncio.create_task(ch.ask_outcome("Q?"))
    while not ch.pending():
        await asyncio.sleep(0)
    first = ch.pending()[0]
    ch.park(first.id)
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert ch.pending() == [first]  # closing the CLI did not settle it
    first.asked_at -= 61  # as if it had been asked a minute ago: its window is over, no waiting
    assert (await ch.settled(first.id)).state == "timeout" and first.reply == TIMEOUT

    old = ch.restore("Again?", ["x"], asked_at=time.time() - 0.1)
    assert ch.pending() == [old] and old.id == "q2" and old.options == ["x"]
    waiter = asyncio.create_task(ch.settled(old.id))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert old.state == "cancelled"
    third = ch.restore("Third?", [], asked_at=time.time())
    assert ch.withdraw(third.id) and not ch.withdraw(third.id)
    assert (await ch.settled(third.id)).state == "cancelled"
    assert [m.text for m in ch.requeue(["kept", "also"])] == ["kept", "also"]
    assert [m.state for m in ch.pending_mail()] == ["queued", "queued"]
