"""The real SDK and its bundled CLI against the model double."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    TextBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

from tests.conftest import scenario_of


async def collect(prompt: str, options: ClaudeAgentOptions) -> list[Any]:
    out: list[Any] = []
    async for msg in query(prompt=prompt, options=options):
        out.append(msg)
    return out


def texts(messages: list[Any]) -> list[str]:
    return [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


async def test_text_only_turn_carries_usage(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{
        "say": "Plain answer.",
        "usage": {"input_tokens": 1200, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 50}}]}))
    msgs = await collect("hello", ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path), max_turns=2))
    assistant = [m for m in msgs if isinstance(m, AssistantMessage)]
    assert texts(msgs) == ["Plain answer."]
    usage = assistant[0].usage or {}
    assert (usage["input_tokens"], usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]) == (
        1200, 300, 50)
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert [r.conversation for r in md.model_requests()] == ["main"]
    assert "hello" in md.model_requests()[0].first_user_text


async def test_ask_round_trip_through_in_process_mcp(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []

    @tool("ask", "Ask the human a question", {"question": str, "options": list})
    async def ask(args: dict[str, Any]) -> dict[str, Any]:
        asked.append(args)
        return {"content": [{"type": "text", "text": "use blue"}]}

    server = create_sdk_mcp_server("human", tools=[ask])
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Let me ask.", "call": [{"tool": "mcp__human__ask",
                                         "input": {"question": "Which colour?", "options": ["red", "blue"]}}]},
        {"say": "The human said: {last_tool_result}"},
    ]}))
    opts = ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path), max_turns=4,
                              mcp_servers={"human": server}, allowed_tools=["mcp__human__ask"])
    msgs = await collect("pick a colour", opts)
    assert asked == [{"question": "Which colour?", "options": ["red", "blue"]}]
    assert texts(msgs)[-1] == "The human said: use blue"
    assert md.model_requests()[1].last_tool_result == "use blue"


async def test_cli_retries_a_500_itself(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Recovered.", "fault": {"kind": "http", "status": 500, "times": 1}}]}))
    msgs = await collect("go", ClaudeAgentOptions(env=md.env(cli_home, max_retries=2), cwd=str(tmp_path),
                                                  max_turns=2))
    retries = [m for m in msgs if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert len(retries) == 1 and retries[0].data.get("error_status") == 500
    assert texts(msgs) == ["Recovered."]
    assert [r.served for r in md.model_requests()] == ["fault:http:500", "turn"]


async def test_persistent_fault_makes_the_cli_write_a_synthetic_error(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "never", "fault": {"kind": "http", "status": 529, "persistent": True}}]}))
    msgs: list[Any] = []
    try:
        async for m in query(prompt="go", options=ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path),
                                                                     max_turns=2)):
            msgs.append(m)
    except Exception:  # the SDK raises after an error result; the messages before it are what we check
        pass
    synthetic = [m for m in msgs if isinstance(m, AssistantMessage) and m.model == "<synthetic>"]
    assert synthetic and "API Error" in texts(synthetic)[0]
    results = [m for m in msgs if isinstance(m, ResultMessage)]
    assert results and results[-1].is_error


async def test_subagent_messages_carry_parent_tool_use_id(double_factory: Any, cli_home: Path,
                                                          tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        {"name": "worker", "match": "count the files", "turn": [{"say": "There are 3 files."}]},
        {"name": "main", "turn": [
            {"say": "Delegating.", "call": [{"tool": "Agent", "id": "toolu_sub1", "input": {
                "description": "count", "prompt": "Please count the files", "subagent_type": "general-purpose",
                "run_in_background": False}}]},
            {"say": "The worker reported: {last_tool_result}"},
        ]}))
    msgs = await collect("do it", ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path), max_turns=4))
    sub = [m for m in msgs if isinstance(m, AssistantMessage | UserMessage) and m.parent_tool_use_id]
    assert sub and all(m.parent_tool_use_id == "toolu_sub1" for m in sub)
    assert {r.conversation for r in md.model_requests()} == {"main", "worker"}
    assert "There are 3 files." in texts(msgs)[-1]


async def test_wait_for_sees_requests_without_sleeping(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "ok"}]}))
    task = asyncio.create_task(collect("x", ClaudeAgentOptions(env=md.env(cli_home), cwd=str(tmp_path))))
    await md.wait_for(lambda reqs: any(r.path == "/v1/messages" for r in reqs), timeout=60)
    await task


async def test_a_dropped_stream_is_retried_by_the_cli(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Back again.", "fault": {"kind": "drop", "times": 1}}]}))
    msgs = await collect("go", ClaudeAgentOptions(env=md.env(cli_home, max_retries=2), cwd=str(tmp_path),
                                                  max_turns=2))
    assert texts(msgs)[-1] == "Back again."
    assert [r.served for r in md.model_requests()] == ["fault:drop", "turn"]
