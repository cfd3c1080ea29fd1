"""normalize() over what the real SDK + bundled CLI actually yield, played against the model double."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from flower_core.events import Event, normalize
from tests.conftest import scenario_of

MAIN_USAGE = {"input_tokens": 1200, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 50}
WORKER_USAGE = {"input_tokens": 400, "cache_read_input_tokens": 20, "cache_creation_input_tokens": 0}


async def run_events(prompt: str, options: ClaudeAgentOptions) -> tuple[list[Any], list[Event]]:
    """Every message of one query() and its events; the SDK raises after an error result, which is fine here."""
    messages: list[Any] = []
    try:
        async for msg in query(prompt=prompt, options=options):
            messages.append(msg)
    except Exception:
        assert any(isinstance(m, ResultMessage) and m.is_error for m in messages)
    events = [ev for msg in messages for ev in normalize(msg)]
    for ev in events:
        json.dumps(ev.payload)  # JSON-safe on real traffic too
        assert ev.raw is not None
    return messages, events


def of(events: list[Event], kind: str) -> list[Event]:
    return [ev for ev in events if ev.kind == kind]


async def test_subagent_turns_and_brief_are_tagged_and_context_comes_from_usage(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    md = await double_factory(scenario_of(
        {"name": "worker", "match": "count the files", "turn": [
            {"say": "Counting now.", "usage": WORKER_USAGE,
             "call": [{"tool": "Read", "input": {"file_path": "notes.txt"}}]},
            {"say": "There are 3 files."}]},
        {"name": "main", "turn": [
            {"say": "Delegating.", "usage": MAIN_USAGE, "call": [{"tool": "Agent", "id": "toolu_sub1", "input": {
                "description": "count", "prompt": "Please count the files", "subagent_type": "general-purpose",
                "run_in_background": False}}]},
            {"say": "The worker reported: {last_tool_result}", "usage": {**MAIN_USAGE, "input_tokens": 2000}},
        ]}))
    _, events = await run_events("do it", ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path), max_turns=4))

    main_text = [ev for ev in of(events, "text") if not ev.payload["subagent"]]
    assert [ev.text[:21] for ev in main_text] == ["Delegating.", "The worker reported: "]
    assert "There are 3 files." in main_text[1].text  # the CLI frames the hand-back; the report is inside
    assert [ev.payload["context"] for ev in main_text] == [1550, 2350]
    assert all("parent_tool_use_id" not in ev.payload for ev in main_text)
    # This CLI forwards a subagent's tool turns but not its prose; whatever of it arrives must be tagged.
    assert all(ev.payload["subagent"] for ev in events if "Counting now." in ev.text)
    sub = [ev for ev in events if ev.payload.get("subagent")]
    assert [ev.kind for ev in sub] == ["prompt", "tool_call", "tool_result"]
    assert all(ev.payload["parent_tool_use_id"] == "toolu_sub1" for ev in sub)
    brief, read, read_back = sub
    assert brief.text == "Please count the files" and brief.payload == {"subagent": True,
                                                                           "parent_tool_use_id": "toolu_sub1"}
    assert (read.tool, read.text, read.payload["context"]) == ("Read", "notes.txt", 420)
    assert read_back.payload["tool_use_id"] == read.payload["id"] and "beta" in read_back.text
    assert read_back.payload["is_error"] is False

    tasks = of(events, "task")
    assert tasks[0].text == "TaskStartedMessage" and tasks[0].payload["tool_use_id"] == "toolu_sub1"
    assert tasks[-1].text == "TaskNotificationMessage" and tasks[-1].payload["status"] == "completed"

    call = next(ev for ev in of(events, "tool_call") if ev.tool == "Agent")
    assert (call.text, call.payload["id"], call.payload["subagent"]) == ("count", "toolu_sub1", False)
    assert call.payload["input"]["prompt"] == "Please count the files" and call.payload["context"] == 1550
    back = next(ev for ev in of(events, "tool_result") if ev.payload["tool_use_id"] == "toolu_sub1")
    assert len(back.text) == 500 and "Subagent hand-back" in back.text  # the CLI's frame is long: first 500 only
    assert back.payload["is_error"] is False
    assert not back.payload["subagent"]

    result = of(events, "result")[-1]
    assert result.text == "success" and result.payload["is_error"] is False and result.payload["num_turns"] >= 2
    init = next(ev for ev in of(events, "system") if ev.text == "init")
    assert init.payload["subtype"] == "init" and isinstance(init.payload["tools"], list)


async def test_persistent_529_is_an_error_event_never_text(double_factory: Any, cli_home: Path,
                                                           tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "never", "fault": {"kind": "http", "status": 529, "persistent": True}}]}))
    _, events = await run_events("go", ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path), max_turns=2))

    errors = of(events, "error")
    assert len(errors) == 1 and errors[0].text.startswith("API Error")
    assert errors[0].payload["synthetic"] is True and errors[0].payload["status"] == 529
    assert errors[0].payload["subagent"] is False
    assert not [ev for ev in events if ev.kind in ("text", "thinking", "prompt") and "API Error" in ev.text]
    result = of(events, "result")[-1]
    assert result.payload["is_error"] is True and result.payload["api_error_status"] == 529
    assert result.payload["terminal_reason"] == "api_error"


async def test_manual_compact_yields_a_reset(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    # The summary request shares the main conversation's first user message, so it is main's turn 1.
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Hi.", "usage": {"input_tokens": 5000, "cache_read_input_tokens": 100,
                                 "cache_creation_input_tokens": 0}},
        {"say": "<summary>The user said hello; nothing else happened.</summary>"},
    ]}))
    env = md.env(cli_home)
    first, _ = await run_events("hello", ClaudeAgentOptions(env=env, cwd=str(tmp_path), max_turns=2))
    session_id = next(m for m in first if isinstance(m, ResultMessage)).session_id
    _, events = await run_events("/compact", ClaudeAgentOptions(env=env, cwd=str(tmp_path), resume=session_id))

    resets = of(events, "reset")
    assert len(resets) == 1, [str(ev) for ev in events]
    reset = resets[0]
    assert reset.text.startswith("compact boundary (manual)")
    assert (reset.payload["subtype"], reset.payload["trigger"], reset.payload["micro"]) == (
        "compact_boundary", "manual", False)
    assert reset.payload["pre_tokens"] >= 5100 and isinstance(reset.payload["post_tokens"], int)
    assert "compacting" in [ev.payload.get("status") for ev in of(events, "system") if ev.text == "status"]
    assert any("nothing else happened" in ev.text for ev in of(events, "prompt"))
    assert [r.served for r in md.model_requests()].count("turn") >= 2
