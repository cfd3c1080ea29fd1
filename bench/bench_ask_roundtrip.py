"""Wall time of one ask round trip through the real bundled CLI and the model double.

A two-turn run: the model calls mcp__human__ask (an in-process MCP tool answering at once),
then echoes the answer. Measures the whole query() from spawn to result; prints the median of N.
Run: .venv/bin/python -m bench.bench_ask_roundtrip [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, query, tool

from flower_core.devmodel import ModelDouble, parse_scenario

SCENARIO = parse_scenario({"name": "ask-roundtrip", "conversation": [{"name": "main", "turn": [
    {"say": "Asking.", "call": [{"tool": "mcp__human__ask", "input": {"question": "Go?", "options": ["yes"]}}]},
    {"say": "Answer was {last_tool_result}"},
]}]})


@tool("ask", "Ask the human", {"question": str, "options": list})
async def _ask(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "yes"}]}


async def _one(md: ModelDouble) -> float:
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as ws:
        opts = ClaudeAgentOptions(env=md.env(home), cwd=ws, max_turns=4,
                                  mcp_servers={"human": create_sdk_mcp_server("human", tools=[_ask])},
                                  allowed_tools=["mcp__human__ask"])
        start = time.perf_counter()
        async for _ in query(prompt="go", options=opts):
            pass
        return time.perf_counter() - start


async def _run(n: int) -> list[float]:
    async with ModelDouble(SCENARIO) as md:
        return [await _one(md) for _ in range(n)]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 10
    times = asyncio.run(_run(n))
    print(f"ask round trip through the real CLI: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s, max {max(times):.3f} s over {n} runs")
    print("command: .venv/bin/python -m bench.bench_ask_roundtrip 10")


if __name__ == "__main__":
    main()
