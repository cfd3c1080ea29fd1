"""normalize() as a pure function: one SDK message in, JSON-safe Events out, never an exception."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import claude_agent_sdk
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import (
    ConversationResetMessage,
    HookEventMessage,
    MirrorErrorMessage,
    RateLimitEvent,
    RateLimitInfo,
    ServerToolResultBlock,
    ServerToolUseBlock,
    StreamEvent,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower_core.events import EVENT_KINDS, Event, context_of, json_safe, normalize

USAGE = {"input_tokens": 1200, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 50, "output_tokens": 9}


def assistant(*blocks: Any, parent: str | None = None, usage: Any = None, model: str = "claude-x",
              error: Any = None) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), model=model, parent_tool_use_id=parent, usage=usage, error=error)


def result(**kw: Any) -> ResultMessage:
    base: dict[str, Any] = {"subtype": "success", "duration_ms": 5, "duration_api_ms": 4, "is_error": False,
                            "num_turns": 3, "session_id": "sess-1"}
    return ResultMessage(**{**base, **kw})


def only(events: list[Event]) -> Event:
    assert len(events) == 1, events
    return events[0]


# ---------------------------------------------------------------------------------------------------------------- text


def test_main_thread_text_is_untagged_and_carries_context() -> None:
    ev = only(normalize(assistant(TextBlock("Hello there."), usage=USAGE)))
    assert (ev.kind, ev.text, ev.tool) == ("text", "Hello there.", "")
    assert ev.payload == {"subagent": False, "context": 1550}
    assert str(ev) == "Hello there."


def test_subagent_text_and_thinking_are_tagged_with_the_parent() -> None:
    msg = assistant(ThinkingBlock("pondering", "sig"), TextBlock("found 3"), parent="toolu_9", usage=USAGE)
    events = normalize(msg)
    assert [e.kind for e in events] == ["thinking", "text"]
    assert [e.text for e in events] == ["pondering", "found 3"]
    for ev in events:
        assert ev.payload == {"subagent": True, "parent_tool_use_id": "toolu_9", "context": 1550}
        assert ev.raw is msg


def test_empty_text_blocks_make_no_events() -> None:
    assert normalize(assistant(TextBlock(""), ThinkingBlock("", "s"))) == []
    assert normalize(assistant()) == []


@pytest.mark.parametrize(("usage", "expected"), [
    (None, 0), ({}, 0), ("junk", 0), ({"input_tokens": 7}, 7),
    ({"input_tokens": "7", "cache_read_input_tokens": None, "cache_creation_input_tokens": 3}, 3),
    ({"input_tokens": 10, "cache_read_input_tokens": 2.0, "cache_creation_input_tokens": math.inf}, 12),
    (USAGE, 1550),
])
def test_context_of_sums_the_three_input_counts(usage: Any, expected: int) -> None:
    assert context_of(usage) == expected


# ----------------------------------------------------------------------------------------------------------- prompts


def test_user_prompt_string_is_a_prompt() -> None:
    ev = only(normalize(UserMessage(content="Count the files")))
    assert (ev.kind, ev.text) == ("prompt", "Count the files")
    assert ev.payload == {"subagent": False}


def test_task_brief_to_a_subagent_is_a_tagged_prompt() -> None:
    msg = UserMessage(content=[TextBlock("Please count the files")], parent_tool_use_id="toolu_sub1")
    ev = only(normalize(msg))
    assert (ev.kind, ev.text) == ("prompt", "Please count the files")
    assert ev.payload == {"subagent": True, "parent_tool_use_id": "toolu_sub1"}


# -------------------------------------------------------------------------------------------------------- tool calls


@pytest.mark.parametrize(("tool_input", "summary"), [
    ({"file_path": "/a/b.py", "content": "x" * 900}, "/a/b.py"),
    ({"command": "ls -la", "description": "list"}, "ls -la"),
    ({"pattern": "*.md", "path": "docs"}, "*.md"),
    ({"description": "count", "prompt": "Please count"}, "count"),
    ({"query": "weather"}, "weather"),
    ({"url": "http://127.0.0.1/x", "prompt": ""}, "http://127.0.0.1/x"),
    ({"plan": "## Plan\n\n1. Write notes.md"}, "## Plan\n\n1. Write notes.md"),  # ExitPlanMode: the plan, not JSON
    ({"question": "Which?", "options": ["a", "b"]}, '{"question":"Which?","options":["a","b"]}'),
    ({}, ""),
])
def test_tool_call_summary(tool_input: dict[str, Any], summary: str) -> None:
    ev = only(normalize(assistant(ToolUseBlock("toolu_1", "Tool", tool_input), usage=USAGE)))
    assert (ev.kind, ev.tool, ev.text) == ("tool_call", "Tool", summary)
    assert ev.payload["id"] == "toolu_1" and ev.payload["input"] == tool_input
    assert ev.payload["context"] == 1550 and ev.payload["subagent"] is False
    assert str(ev) == f"[Tool] {summary}"


def test_tool_call_summary_is_capped_and_input_is_a_copy() -> None:
    nested = {"command": "echo " + "y" * 500, "env": {"A": ("1", "2")}}
    ev = only(normalize(assistant(ToolUseBlock("t", "Bash", nested))))
    assert len(ev.text) == 200 and ev.text.startswith("echo yyy")
    assert ev.payload["input"] == {"command": nested["command"], "env": {"A": ["1", "2"]}}
    assert ev.payload["input"] is not nested and ev.payload["input"]["env"] is not nested["env"]


def test_server_tool_blocks_are_tool_events() -> None:
    msg = assistant(ServerToolUseBlock("srv_1", "web_search", {"query": "sdk"}),
                    ServerToolResultBlock("srv_1", {"type": "web_search_result", "items": []}))
    call, res = normalize(msg)
    assert (call.kind, call.tool, call.text, call.payload["server"]) == ("tool_call", "web_search", "sdk", True)
    assert (res.kind, res.text, res.payload["tool_use_id"]) == ("tool_result", "", "srv_1")


# ------------------------------------------------------------------------------------------------------ tool results


@pytest.mark.parametrize(("content", "text"), [
    ("plain output", "plain output"),
    ("z" * 800, "z" * 500),
    ([{"type": "text", "text": "one"}, {"type": "image", "source": {}}, {"type": "text", "text": "two"}], "one\ntwo"),
    ([{"type": "text", "text": "q" * 700}], "q" * 500),
    (None, ""),
    ({"type": "text", "text": "a dict is not a string"}, ""),
])
def test_tool_result_text(content: Any, text: str) -> None:
    msg = UserMessage(content=[ToolResultBlock("toolu_1", content, None)])
    ev = only(normalize(msg))
    assert (ev.kind, ev.text) == ("tool_result", text)
    assert ev.payload == {"tool_use_id": "toolu_1", "is_error": False, "subagent": False}


def test_tool_result_error_flag_and_subagent_tag() -> None:
    msg = UserMessage(content=[ToolResultBlock("toolu_2", "boom", True)], parent_tool_use_id="toolu_sub")
    ev = only(normalize(msg))
    assert ev.payload == {"tool_use_id": "toolu_2", "is_error": True, "subagent": True,
                          "parent_tool_use_id": "toolu_sub"}


# ------------------------------------------------------------------------------------------------ synthetic errors


def test_synthetic_api_error_is_an_error_never_text() -> None:
    text = "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"
    msg = assistant(TextBlock(text), model="<synthetic>", error="server_error", usage={"input_tokens": 0})
    ev = only(normalize(msg))
    assert (ev.kind, ev.text) == ("error", text)
    assert ev.payload == {"synthetic": True, "subagent": False, "context": 0, "error": "server_error", "status": 529}


def test_synthetic_message_without_a_status_still_errors() -> None:
    ev = only(normalize(assistant(TextBlock("API Error: Connection error."), TextBlock("more"), model="<synthetic>")))
    assert ev.kind == "error" and ev.text == "API Error: Connection error.\nmore"
    assert "status" not in ev.payload and "error" not in ev.payload


def test_errored_api_error_text_from_a_real_model_name_is_still_an_error() -> None:
    ev = only(normalize(assistant(TextBlock("API Error: 500 Internal server error"), error="server_error")))
    assert ev.kind == "error" and ev.payload["status"] == 500


def test_ordinary_speech_mentioning_api_errors_stays_text() -> None:
    ev = only(normalize(assistant(TextBlock("API Error: 500 is what the server said"))))
    assert ev.kind == "text"


# ---------------------------------------------------------------------------------------------------------- results


def test_result_payload() -> None:
    ev = only(normalize(result(total_cost_usd=0.0123, stop_reason="end_turn", terminal_reason="completed")))
    assert (ev.kind, ev.text) == ("result", "success")
    assert ev.payload == {"session_id": "sess-1", "cost_usd": 0.0123, "num_turns": 3, "is_error": False,
                          "terminal_reason": "completed", "stop_reason": "end_turn"}


def test_error_result_carries_the_api_status() -> None:
    ev = only(normalize(result(is_error=True, api_error_status=529, terminal_reason="api_error",
                               errors=["overloaded"])))
    assert ev.payload["cost_usd"] == 0.0 and ev.payload["is_error"] is True
    assert (ev.payload["api_error_status"], ev.payload["terminal_reason"]) == (529, "api_error")
    assert ev.payload["errors"] == ["overloaded"]


# ------------------------------------------------------------------------------------------------- resets / system


def test_compact_boundary_is_a_reset() -> None:
    data = {"type": "system", "subtype": "compact_boundary",
            "compact_metadata": {"trigger": "manual", "pre_tokens": 51234, "post_tokens": 1800}}
    ev = only(normalize(SystemMessage("compact_boundary", data)))
    assert ev.kind == "reset" and ev.text.startswith("compact boundary (manual)")
    assert ev.payload == {"trigger": "manual", "pre_tokens": 51234, "post_tokens": 1800, "micro": False,
                          "subtype": "compact_boundary"}


def test_microcompact_boundary_is_a_micro_reset() -> None:
    data = {"subtype": "microcompact_boundary", "microcompactMetadata": {"trigger": "auto", "preTokens": 900}}
    ev = only(normalize(SystemMessage("microcompact_boundary", data)))
    assert ev.kind == "reset" and ev.payload["micro"] is True
    assert (ev.payload["trigger"], ev.payload["pre_tokens"], ev.payload["post_tokens"]) == ("auto", 900, None)


def test_compact_boundary_without_metadata() -> None:
    ev = only(normalize(SystemMessage("compact_boundary", {})))
    assert (ev.kind, ev.text) == ("reset", "compact boundary")
    assert ev.payload["trigger"] is None and ev.payload["micro"] is False


def test_conversation_reset() -> None:
    ev = only(normalize(ConversationResetMessage(new_conversation_id="c2", uuid="u", session_id="s")))
    assert (ev.kind, ev.text, ev.payload["subtype"]) == ("reset", "conversation reset", "conversation_reset")


@pytest.mark.parametrize("subtype", ["init", "api_retry", "status", "permission_denied"])
def test_other_system_messages_keep_their_data(subtype: str) -> None:
    data = {"type": "system", "subtype": subtype, "attempt": 1, "error_status": 529, "tools": ("Read", "Bash")}
    ev = only(normalize(SystemMessage(subtype, data)))
    assert (ev.kind, ev.text) == ("system", subtype)
    assert ev.payload == {**data, "tools": ["Read", "Bash"]}
    assert ev.payload is not data


def test_system_subclasses_without_task_fields_are_system() -> None:
    hook = HookEventMessage(subtype="hook_started", data={"subtype": "hook_started"}, hook_event_name="Stop")
    mirror = MirrorErrorMessage(subtype="mirror_error", data={"error": "disk"}, error="disk")
    assert [e.kind for e in normalize(hook) + normalize(mirror)] == ["system", "system"]


# ------------------------------------------------------------------------------------------------------------ tasks


def test_task_messages() -> None:
    started = TaskStartedMessage(subtype="task_started", data={}, task_id="t1", description="count files",
                                 uuid="u", session_id="s", tool_use_id="toolu_1")
    progress = TaskProgressMessage(subtype="task_progress", data={}, task_id="t1", description="count files",
                                   usage={"total_tokens": 5, "tool_uses": 1, "duration_ms": 9}, uuid="u",
                                   session_id="s", last_tool_name="Bash")
    updated = TaskUpdatedMessage(subtype="task_updated", data={}, task_id="t1", patch={"status": "killed"},
                                 status="killed")
    done = TaskNotificationMessage(subtype="task_notification", data={}, task_id="t1", status="completed",
                                   output_file="/tmp/o", summary="3 files", uuid="u", session_id="s")
    events = [only(normalize(m)) for m in (started, progress, updated, done)]
    assert [e.kind for e in events] == ["task"] * 4
    assert [e.text for e in events] == ["TaskStartedMessage", "TaskProgressMessage", "TaskUpdatedMessage",
                                        "TaskNotificationMessage"]
    assert events[0].payload == {"kind": "TaskStartedMessage", "subtype": "task_started", "task_id": "t1",
                                 "description": "count files", "tool_use_id": "toolu_1"}
    assert events[1].payload["usage"]["tool_uses"] == 1 and events[1].payload["last_tool_name"] == "Bash"
    assert events[2].payload["status"] == "killed" and events[2].payload["patch"] == {"status": "killed"}
    assert (events[3].payload["status"], events[3].payload["summary"]) == ("completed", "3 files")


# ---------------------------------------------------------------------------------------------------------- unknown


class Plain:
    pass


@pytest.mark.parametrize("message", [
    None, 42, "text", {"type": "assistant"}, Plain(),
    StreamEvent(uuid="u", session_id="s", event={"type": "ping"}),
    RateLimitEvent(rate_limit_info=RateLimitInfo(status="allowed"), uuid="u", session_id="s"),
])
def test_anything_else_is_one_unknown_event(message: Any) -> None:
    ev = only(normalize(message))
    assert (ev.kind, ev.text, ev.payload) == ("unknown", type(message).__name__, {})
    assert ev.raw is message


def test_a_broken_block_does_not_hide_its_siblings() -> None:
    class Weird:
        pass

    events = normalize(assistant(TextBlock("before"), Weird(), TextBlock("after")))
    assert [(e.kind, e.text) for e in events] == [("text", "before"), ("unknown", "Weird"), ("text", "after")]


# -------------------------------------------------------------------------------------------------------- json_safe


def test_json_safe_flattens_objects_and_limits_depth() -> None:
    loop: list[Any] = []
    loop.append(loop)
    out = json_safe({"blk": TextBlock("x"), 3: {1, 2}, "nan": math.nan, "obj": Plain(), "loop": loop})
    assert out["blk"] == {"text": "x"} and out["3"] == [1, 2] and out["nan"] is None
    assert isinstance(out["obj"], str)
    json.dumps(out, allow_nan=False)


# --------------------------------------------------------------------------------------------- hypothesis properties

SDK_CLASSES = [AssistantMessage, UserMessage, SystemMessage, ResultMessage, TaskStartedMessage,
               TaskProgressMessage, TaskUpdatedMessage, TaskNotificationMessage, ConversationResetMessage,
               StreamEvent, RateLimitEvent, HookEventMessage, MirrorErrorMessage]
BLOCK_CLASSES = [TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, ServerToolUseBlock, ServerToolResultBlock]
SDK_TYPES = tuple(c for c in vars(claude_agent_sdk.types).values()
                  if isinstance(c, type) and dataclasses.is_dataclass(c))
JSON_TYPES = (dict, list, str, int, float, bool, type(None))


class Evil:
    """An object whose str() and == blow up (repr stays sane so hypothesis can report it)."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        return "Evil()"

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    __hash__ = object.__hash__


scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30) | st.binary(max_size=8)
hostile = st.builds(Evil) | st.builds(Plain)
junk = st.recursive(
    scalars | hostile,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(), inner,
                                                                max_size=4) | st.tuples(inner, inner),
    max_leaves=12,
)
# Values that look right for some field: they steer messages down the real branches, where junk then bites.
plausible = st.sampled_from(["<synthetic>", "API Error: 529 overloaded", "compact_boundary", "toolu_1", "success",
                             "microcompact_boundary", True, False, 3, 0.5]) | st.dictionaries(
    st.sampled_from(["input_tokens", "cache_read_input_tokens", "compact_metadata", "trigger", "pre_tokens",
                     "command", "file_path", "text", "type"]), junk, max_size=4)


def sdk_instance(classes: list[type], value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A dataclass instance of one of classes, every field filled with value (junk or well-typed blocks)."""
    def build(cls: type) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries({f.name: value for f in dataclasses.fields(cls)}).map(lambda kw: cls(**kw))
    return st.sampled_from(classes).flatmap(build)


blocks = sdk_instance(BLOCK_CLASSES, hostile | plausible | junk)
field_values = hostile | plausible | st.lists(blocks | hostile, max_size=4) | blocks | junk
messages = sdk_instance(SDK_CLASSES, field_values) | junk


def walk(value: Any) -> None:
    """Assert value is made only of plain JSON types (no SDK dataclass, no subclass)."""
    assert type(value) in JSON_TYPES, type(value)
    assert not isinstance(value, SDK_TYPES)
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str
            walk(v)
    elif isinstance(value, list):
        for v in value:
            walk(v)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages)
def test_normalize_never_raises_and_payloads_are_json(message: Any) -> None:
    events = normalize(message)
    assert isinstance(events, list)
    for ev in events:
        assert isinstance(ev, Event) and ev.kind in EVENT_KINDS
        assert type(ev.text) is str and type(ev.tool) is str
        assert ev.raw is message
        walk(ev.payload)
        json.dumps(ev.payload)
        json.dumps(ev.to_dict())
        str(ev)
        if ev.kind == "text":
            assert getattr(message, "model", None) != "<synthetic>"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([TextBlock("API Error: 529 x"), ToolUseBlock("i", "Bash", {"command": "ls"}),
                                 ThinkingBlock("t", "s")]), max_size=4), st.one_of(st.none(), st.text(max_size=5)))
def test_synthetic_messages_never_produce_text(content: list[Any], parent: str | None) -> None:
    events = normalize(AssistantMessage(content=content, model="<synthetic>", parent_tool_use_id=parent))
    assert len(events) == 1 and events[0].kind == "error" and events[0].payload["synthetic"] is True
    assert events[0].payload["subagent"] is bool(parent)


@pytest.mark.parametrize("cls", SDK_CLASSES)
def test_every_field_can_be_hostile(cls: type) -> None:
    """Each field in turn is an object whose str/repr/eq raise, inside and outside a list of blocks."""
    names = [f.name for f in dataclasses.fields(cls)]
    evil: Any = Evil()
    for name in names:
        for bad in (evil, [evil], [ToolResultBlock(evil, [evil], evil)], [TextBlock(evil)],
                    [ToolUseBlock(evil, evil, {evil: evil})]):
            kw: dict[str, Any] = {n: "<synthetic>" if n == "model" else "x" for n in names}
            kw[name] = bad
            message = cls(**kw)
            for ev in normalize(message):
                walk(ev.payload)
                json.dumps(ev.payload)
                assert type(ev.text) is str and type(ev.tool) is str
