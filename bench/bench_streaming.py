"""Streaming: how soon a person sees the agent's words, and what it costs in platform calls.

The model double writes each agent message as 200 words, one word a delta, 25 ms apart (~5 s a
message); a run says K such messages (each turn also calls Read, so the next turn follows). Through
the real SDK + CLI and the hub:

  slack   real slack-sdk (AsyncWebClient, chat_stream helper) against the Slack double, streaming on;
  slack0  the same, streaming off (today: each message posted once complete), for the ratio;
  web     the web page's surface (WebSurface: what its WebSocket serves), streaming on.

1. First words visible after the model's first token, per message (p50, p95): the model double stamps
   when a reply's first text delta leaves it (`RecordedRequest.first_text_at`); visible is the Slack
   double receiving chat.startStream (slack), chat.postMessage of those words (slack0), or the web
   surface storing the message (web). Same clock (perf_counter), same process.
2. Web API calls per agent message and per 1,000 streamed words (chat.startStream / appendStream /
   stopStream), and the largest number of appends to one message within any one second.
3. The ask round trip (bench_ask_roundtrip's run: spawn, ask, answer, result) with partial messages on
   against off, interleaved in the same process: the ratio of the medians.

Run: .venv/bin/python -m bench.bench_streaming [K] [N]   (defaults 6 and 5)

Measured (K=6, N=8, 2-core machine shared with five other engineers):
  slack   first words visible p50 0.004 s, p95 0.008 s; per message 1.0 startStream, 5.0 appendStream, 1.0
          stopStream (7.0 calls); 35 calls per 1,000 streamed words; at most 1 append to a message in any 1 s
  slack0  (today, streaming off) p50 5.184 s, p95 5.357 s: the words appear once the message is complete
  web     p50 0.003 s, p95 0.006 s; 55 page writes per message (the web's own pace, 0.1 s)
  ratio slack streaming / today at p50: 0.001; ask round trip on/off: 0.870 (noise: 0.87-1.10 over runs)
Two fixes came from these figures: appends get Slack's Tier 4 bucket of their own (they had shared
chat.update's 50/min with the status card, p50 1.07 s), and a message's close is not held back by its
pace (the next message's start waited behind it, p50 0.41 s).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from adapters.hub import Hub, HubSettings
from adapters.platform import ThreadRef
from adapters.slack import SlackFrontend, SlackSettings
from adapters.state import MemoryStateStore
from adapters.transport.engine import EngineKit
from adapters.view import ViewConfig
from adapters.web.surface import WebSurface
from flower_core.devmodel import ModelDouble, Scenario, parse_scenario
from tests.support.drive import drive
from tests.support.hub_support import one_step_flow
from tests.support.slack_double import APP_TOKEN, BOT_TOKEN, SlackDouble

C1 = "C0000001"
WORDS = 200
VIEW = ViewConfig(status_every_s=5.0, prose_linger_s=0.0)


def words(k: int) -> str:
    return " ".join(f"m{k}w{i}" for i in range(WORDS)) + "."


def scenario(k: int) -> Scenario:
    turns: list[dict[str, Any]] = [
        {"say": words(i), "stream": {"words": 1, "pause_s": 0.025},
         "call": [{"tool": "Read", "input": {"file_path": f"n{i}.md"}}]} for i in range(k - 1)]
    turns.append({"say": words(k - 1), "stream": {"words": 1, "pause_s": 0.025}})
    return parse_scenario({"name": "streaming", "conversation": [{"name": "main", "turn": turns}]})


def _hub(surface: Any, md: ModelDouble, tmp: Path, stream: bool) -> Hub:
    kit = EngineKit(factory=one_step_flow(steps=("work",)), env=md.env(tmp / "cfg"),
                    runtime_options={"partial_text": stream})
    return Hub(surface, MemoryStateStore(), HubSettings(root=tmp / "runs", view=VIEW), kit=kit)


def _first_text(md: ModelDouble) -> list[float]:
    return [r.first_text_at for r in md.model_requests("main") if r.first_text_at is not None]


async def slack(md: ModelDouble, k: int, tmp: Path, *, stream: bool) -> dict[str, Any]:
    async with SlackDouble() as double:
        front = SlackFrontend(SlackSettings(bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=double.api_url))
        hub = _hub(front.surface, md, tmp, stream)
        front.attach(hub)
        await front.start()
        try:
            root = double.person_says(C1, "go", user="UALICE")
            run = (await drive(hub).start("talk", ThreadRef("slack", C1, root.ts), "UALICE")).run_id
            await hub.query.wait(run)
        finally:
            await hub.close()
            await front.stop()
        firsts = _first_text(md)
        if stream:
            seen = [c.at for c in double.called("chat.startStream")]
        else:
            seen = [c.at for c in double.called("chat.postMessage") if f"w{WORDS - 1}." in str(c.args)]
        calls = Counter(c.method for c in double.calls if c.method.startswith("chat.") and c.method.endswith("Stream"))
        appends: dict[str, list[float]] = {}
        for c in double.called("chat.appendStream"):
            appends.setdefault(str(c.args.get("ts")), []).append(c.at)
        per_second = max((sum(1 for t in ts if t0 <= t < t0 + 1.0) for ts in appends.values() for t0 in ts),
                         default=0)
        return {"visible": [v - f for v, f in zip(seen, firsts[-len(seen):], strict=False)], "calls": calls,
                "per_second": per_second}


async def web(md: ModelDouble, k: int, tmp: Path) -> dict[str, Any]:
    surface = WebSurface(None)
    seen: dict[str, float] = {}
    count = Counter[str]()

    def listener(thread: ThreadRef, body: dict[str, Any]) -> None:
        if body.get("kind") == "live" and body.get("text"):
            seen.setdefault(str(body.get("key")), time.perf_counter())
            count[str(body.get("key"))] += 1

    surface.listeners.append(listener)
    hub = _hub(surface, md, tmp, True)
    run = (await drive(hub).start("talk", ThreadRef("web", "page", "t1"), "ana")).run_id
    await hub.query.wait(run)
    await hub.close()
    firsts = _first_text(md)
    visible = [t - f for t, f in zip(sorted(seen.values()), firsts[-len(seen):], strict=False)]
    return {"visible": visible, "writes": sum(count.values())}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


async def run(k: int) -> None:
    rows = []
    for name in ("slack", "slack0", "web"):
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            md = ModelDouble(scenario(k))
            await md.start()
            try:
                got = await (web(md, k, tmp) if name == "web" else slack(md, k, tmp, stream=name == "slack"))
            finally:
                await md.stop()
        rows.append((name, got))
        vis = got["visible"]
        print(f"{name:7} first words visible after the model's first token: p50 {statistics.median(vis):.3f} s "
              f"p95 {pct(vis, 0.95):.3f} s  ({len(vis)} messages)", flush=True)
        if name == "slack":
            calls, total = got["calls"], sum(got["calls"].values())
            print(f"        Web API stream calls: {dict(calls)}; per message {total / k:.1f} "
                  f"(startStream {calls['chat.startStream'] / k:.1f}); per 1,000 streamed words "
                  f"{total / (k * WORDS / 1000):.1f}; most appends to one message within 1 s: {got['per_second']}")
        if name == "web":
            print(f"        web page writes per message {got['writes'] / k:.1f}; per 1,000 words "
                  f"{got['writes'] / (k * WORDS / 1000):.1f}")
    slack_p50 = statistics.median(rows[0][1]["visible"])
    today_p50 = statistics.median(rows[1][1]["visible"])
    print(f"ratio slack streaming / today (p50 first words visible): {slack_p50 / today_p50:.3f}")


async def ask_roundtrip(n: int) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, query

    from bench.bench_ask_roundtrip import SCENARIO, _ask

    md = ModelDouble(SCENARIO)
    await md.start()
    took: dict[bool, list[float]] = {False: [], True: []}
    try:
        for _ in range(n):
            for partial in (False, True):
                with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as ws:
                    opts = ClaudeAgentOptions(env=md.env(home), cwd=ws, max_turns=4, include_partial_messages=partial,
                                              mcp_servers={"human": create_sdk_mcp_server("human", tools=[_ask])},
                                              allowed_tools=["mcp__human__ask"])
                    t0 = time.perf_counter()
                    async for _ in query(prompt="go", options=opts):
                        pass
                    took[partial].append(time.perf_counter() - t0)
    finally:
        await md.stop()
    off, on = statistics.median(took[False]), statistics.median(took[True])
    print(f"ask round trip (n={n} each, interleaved): off p50 {off:.3f} s, on p50 {on:.3f} s, ratio {on / off:.3f}")


def main() -> None:
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    asyncio.run(run(k))
    asyncio.run(ask_roundtrip(int(sys.argv[2]) if len(sys.argv) > 2 else 5))


if __name__ == "__main__":
    main()
