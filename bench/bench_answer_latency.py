"""HumanChannel answer latency: answer() called on another thread -> the CLI's next model request.

One session asks N questions in a row through the real bundled CLI. A plain thread answers each
as soon as its "asked" event arrives; the latency is the time from that answer() call until the
model double receives the request carrying the tool result (so it includes the CLI's own work).
Run: .venv/bin/python -m bench.bench_answer_latency [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import threading
import time

from flower_core import AgentSpec, Event, HumanChannel, Runtime
from flower_core.devmodel import ModelDouble, Scenario, parse_scenario


def _scenario(n: int) -> Scenario:
    ask = {"say": "", "call": [{"tool": "mcp__human__ask", "input": {"question": "Next?", "options": ["go"]}}]}
    return parse_scenario({"name": "latency", "conversation": [
        {"name": "main", "turn": [ask] * n + [{"say": "done"}]}]})


async def _measure(n: int) -> list[float]:
    answered_at: dict[str, float] = {}
    asked: list[str] = []
    ready = threading.Condition()

    def on_event(ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            with ready:
                asked.append(str(ev.payload["id"]))
                ready.notify()

    channel = HumanChannel(on_event=on_event, timeout_s=60)
    stop = threading.Event()

    def answerer() -> None:
        done: set[str] = set()
        while not stop.is_set():
            with ready:
                ready.wait_for(lambda: len(asked) > len(done) or stop.is_set(), timeout=0.5)
                todo = [a for a in asked if a not in done]
            for ask_id in todo:
                answered_at[ask_id] = time.perf_counter()
                channel.answer(ask_id, "go")
                done.add(ask_id)

    thread = threading.Thread(target=answerer, daemon=True)
    thread.start()
    async with ModelDouble(_scenario(n)) as md:
        with tempfile.TemporaryDirectory() as tmp:
            rt = Runtime(workspace=f"{tmp}/ws", run_dir=f"{tmp}/runs", env=md.env(f"{tmp}/cfg"), handoff=False)
            try:
                result = await rt.run(AgentSpec(name="asker", channel=channel, max_turns=n + 4), "ask away")
            finally:
                rt.close()
                stop.set()
        assert result.ok, result.error
        requests = md.model_requests("main")
    # Request k+1 carries the answer to question q(k+1).
    return [requests[i + 1].received_at - answered_at[f"q{i + 1}"] for i in range(n)]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 20
    lat = sorted(asyncio.run(_measure(n)))
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    print(f"answer() on another thread -> tool result at the model: median {statistics.median(lat) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms over {n} questions")
    print("command: .venv/bin/python -m bench.bench_answer_latency 20")


if __name__ == "__main__":
    main()
