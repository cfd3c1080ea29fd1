"""Throughput of normalize() over a realistic mix of SDK message objects.

The mix mirrors a tool-heavy run: per 20 messages, 6 assistant text, 5 assistant tool_use, 5 user tool_result,
1 subagent tool_use, 2 system (status / api_retry) and 1 result; one init per 1000. Prints messages/s,
events/s and the cost per message type (best of 3 repeats each).
Run: .venv/bin/python -m bench.bench_normalize [N]   (N messages, default 200000)
"""

from __future__ import annotations

import sys
import time
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from flower_core.events import normalize

USAGE = {"input_tokens": 4200, "cache_read_input_tokens": 38000, "cache_creation_input_tokens": 900,
         "output_tokens": 310, "service_tier": "standard"}


def samples() -> dict[str, Any]:
    prose = "I looked at the module and the failing test; the fix is to normalise the path before comparing. " * 3
    listing = "\n".join(f"{i:>6}\tline {i} of a file the agent read, with some ordinary code in it" for i in range(40))
    return {
        "assistant_text": AssistantMessage([TextBlock(prose)], model="claude-x", usage=USAGE, message_id="msg_1"),
        "assistant_tool_use": AssistantMessage(
            [ToolUseBlock("toolu_1", "Edit", {"file_path": "/work/src/app/module.py", "old_string": "a = 1\n" * 10,
                                              "new_string": "a = 2\n" * 10, "replace_all": False})],
            model="claude-x", usage=USAGE),
        "user_tool_result": UserMessage([ToolResultBlock("toolu_1", listing, False)], uuid="u1"),
        "subagent_tool_use": AssistantMessage(
            [ToolUseBlock("toolu_2", "Bash", {"command": "pytest -q tests/test_app.py", "description": "run tests"})],
            model="claude-x", parent_tool_use_id="toolu_sub", usage=USAGE),
        "system_status": SystemMessage("status", {"type": "system", "subtype": "status", "status": "compacting",
                                                  "session_id": "s", "uuid": "u"}),
        "system_api_retry": SystemMessage("api_retry", {"type": "system", "subtype": "api_retry", "attempt": 1,
                                                        "max_retries": 10, "retry_delay_ms": 500,
                                                        "error_status": 529, "error": "overloaded"}),
        "result": ResultMessage("success", 1200, 900, False, 12, "sess", stop_reason="end_turn",
                                total_cost_usd=0.42, usage=USAGE, result=prose, terminal_reason="completed"),
        "system_init": SystemMessage("init", {
            "type": "system", "subtype": "init", "cwd": "/work", "session_id": "s", "model": "claude-x",
            "tools": [f"Tool{i}" for i in range(40)], "mcp_servers": [{"name": "human", "status": "connected"}],
            "slash_commands": [f"cmd{i}" for i in range(30)], "agents": ["general-purpose"], "skills": [],
            "plugins": [], "permissionMode": "default", "output_style": "default", "apiKeySource": "none"}),
    }


def mix(n: int) -> list[Any]:
    s = samples()
    cycle = (["assistant_text"] * 6 + ["assistant_tool_use"] * 5 + ["user_tool_result"] * 5
             + ["subagent_tool_use", "system_status", "system_api_retry", "result"])
    out = [s[cycle[i % len(cycle)]] for i in range(n)]
    for i in range(0, n, 1000):
        out[i] = s["system_init"]
    return out


def _timed(messages: list[Any]) -> tuple[float, int]:
    start = time.perf_counter()
    events = 0
    for m in messages:
        events += len(normalize(m))
    return time.perf_counter() - start, events


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 200_000
    messages = mix(n)
    _timed(messages[:2000])  # warm up
    runs = [_timed(messages) for _ in range(3)]
    best, events = min(runs)
    print(f"normalize: {n} messages -> {events} events, best of 3: {best:.3f} s")
    print(f"  {n / best:,.0f} messages/s, {events / best:,.0f} events/s, {best / n * 1e6:.2f} µs/message")
    per = 20_000
    for name, msg in samples().items():
        same = [msg] * per
        t = min(_timed(same)[0] for _ in range(3))
        print(f"  {name:<20} {t / per * 1e6:6.2f} µs")
    print("run: .venv/bin/python -m bench.bench_normalize [N]")


if __name__ == "__main__":
    main()
