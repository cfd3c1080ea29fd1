"""Pure pieces of scale-out: the wire codecs, the URL shown in messages, and how a dead process's open
question is found in its stored session (`last_open_call`)."""

from __future__ import annotations

from typing import Any

from adapters.transport import RunEnd, RunPlan, wire
from adapters.transport.intents import Intent, IntentReply, Op
from adapters.transport.redis_conn import where
from flower_core import Event
from flower_core.runtime.parked import last_open_call

ASK = "mcp__human__ask"


def test_an_event_crosses_the_wire_without_its_raw_part() -> None:
    ev = Event("tool_call", text="ls", tool="Bash", payload={"id": "t1", "input": {"command": "ls"}}, raw=object())
    fields = wire.event_fields("r1", 2, "w1", 7, ev)
    assert all(isinstance(v, str) for v in fields.values())
    back = wire.event_of(fields)
    assert (back.kind, back.text, back.tool, back.payload, back.raw) == ("tool_call", "ls", "Bash", ev.payload, None)
    assert fields["gen"] == "2" and fields["seq"] == "7" and float(fields["at"]) > 0


def test_bad_fields_decode_to_something_safe() -> None:
    assert wire.event_of({"kind": "text", "payload": "{not json"}).payload == {}
    assert wire.event_of({"payload": "[1, 2]"}).kind == "unknown"
    assert wire.end_of({"state": "done", "cost": "lots"}) == RunEnd("done")
    assert wire.text({b"op": b"send"}, "op") == "send"  # a client that hands back bytes


def test_an_end_and_a_plan_round_trip() -> None:
    end = RunEnd("failed", text="t", failed_at="work", error="boom", cost_usd=0.25, steps=3)
    assert wire.end_of(wire.end_fields("r1", 1, "w1", 9, end)) == end
    plan = RunPlan("task", workspace=__import__("pathlib").Path("/w"), run_dir=__import__("pathlib").Path("/r"),
                   budget_usd=2.0)
    assert RunPlan.from_json(plan.to_json()) == plan


def test_intents_and_replies_travel_as_stream_fields() -> None:
    intent = Intent(Op.ANSWER, text="yes", ask="q1")
    answer = wire.intent_entry(intent)
    mail = wire.intent_entry(Intent(Op.SEND, text="hi"), reply=False)
    assert answer["reply"] == "1" and mail["reply"] == ""
    assert wire.intent_of(answer) == intent and answer["iid"] == intent.iid
    assert wire.intent_of(wire.control_entry("sync")) is None and wire.intent_of({"intent": "{nope"}) is None
    assert wire.reply_of(wire.reply_json(IntentReply(ok=False, mail="m1"))) == IntentReply(ok=False, mail="m1")


def test_urls_in_messages_carry_no_credentials() -> None:
    assert where("redis://user:secret@cache.internal:6380/2") == "redis://cache.internal:6380/2"
    assert "secret" not in where("rediss://:secret@h/0")


def _call(uuid: str, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls]
    return {"type": "assistant", "uuid": uuid, "isSidechain": False, "timestamp": "2026-12-01T05:00:00.000Z",
            "message": {"role": "assistant", "content": content}}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "user", "uuid": "u-" + call_id,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id}]}}


QUESTION = {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}


def test_the_open_question_of_a_dead_process_is_found() -> None:
    entries = [{"type": "user", "uuid": "p"}, {"type": "assistant", "uuid": "a0", "message": {"content": [
        {"type": "text", "text": "One question first."}]}}, _call("a1", ("c1", ASK, QUESTION)),
        {"type": "system", "uuid": "s"}]
    call_id, args, asked_at = last_open_call(entries, ASK) or ("", {}, 0.0)
    assert call_id == "c1" and args == QUESTION and asked_at > 1.7e9


def test_nothing_is_adopted_when_the_question_was_answered_or_not_alone() -> None:
    answered = [{"type": "user", "uuid": "p"}, _call("a1", ("c1", ASK, QUESTION)), _result("c1")]
    two_calls = [{"type": "user", "uuid": "p"}, _call("a1", ("c1", ASK, QUESTION), ("c2", "Bash", {}))]
    other_tool = [{"type": "user", "uuid": "p"}, _call("a1", ("c1", "Bash", {}))]
    assert last_open_call(answered, ASK) is None
    assert last_open_call(two_calls, ASK) is None
    assert last_open_call(other_tool, ASK) is None
    assert last_open_call([], ASK) is None
