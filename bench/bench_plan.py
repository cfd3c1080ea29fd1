"""Plan first: what a plan card's approval costs a person, beside a question's answer in the same run.

Each run (the real SDK + bundled CLI on the model double in this process, one Runtime, a plan-first step) asks
one question, then presents its plan, then edits a file. A person answers the question and approves the plan
the moment each is shown (live: the CLI still waits) or once the run has parked (parked: no CLI; the answer
costs a CLI start and a session resume). Printed per mode, over K runs: the time from the answer (or the
approval) to the model double receiving its next request, median and p95, and the ratio plan / question
measured in the same runs: what approving a plan costs beyond answering a question (writing the CLI's own
"approved" result and leaving plan mode, instead of the answer).

Run: .venv/bin/python -m bench.bench_plan [K]   (default K = 10)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flower_core import AgentSpec, Event, HumanChannel, Runtime
from flower_core.devmodel import ModelDouble, Scenario, parse_scenario
from flower_core.human.plan_review import APPROVE_GO, APPROVED, plan_first


def _scenario(ws: Path) -> Scenario:
    return parse_scenario({"name": "bench-plan", "conversation": [{"name": "main", "turn": [
        {"say": "One question.", "call": [{"tool": "mcp__human__ask",
                                           "input": {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}}]},
        {"say": "My plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": "1. Write notes.txt."}}]},
        {"say": "Writing.", "call": [{"tool": "Write", "input": {"file_path": str(ws / "notes.txt"),
                                                                  "content": "yo"}}]},
        {"say": "Done."}]}]})


async def _one(md: ModelDouble, tmp: Path, parked: bool) -> tuple[float, float]:
    """(question answer -> next request, plan approval -> next request) in seconds, for one run."""
    ws, run_dir = tmp / "ws", tmp / "runs"
    shown: asyncio.Queue[Event] = asyncio.Queue()
    channel = HumanChannel(on_event=shown.put_nowait, timeout_s=600, max_asks=5, language="en")
    plan_first(channel, run_dir, cwd=ws)
    rt = Runtime(workspace=ws, run_dir=run_dir, env=md.env(tmp / "cfg"), park=0.0 if parked else None,
                 handoff=False)
    spec = AgentSpec(name="bench", channel=channel, permission_mode="acceptEdits", allowed_tools=["Read"],
                     max_turns=10, plan_first=True)
    answered: dict[str, float] = {}

    async def person() -> None:
        waiting: dict[str, str] = {}  # ask id -> kind, shown and not answered yet
        while len(answered) < 2:
            ev = await shown.get()
            p = ev.payload
            if ev.kind == "ask" and p.get("state") == "asked" and (p.get("kind") or "") in ("", "plan"):
                waiting[str(p["id"])] = str(p.get("kind") or "question")
            elif not (parked and ev.kind == "system" and ev.text == "parked"):
                continue
            if parked and ev.kind == "ask":
                continue  # answer once it has parked
            for ask_id, kind in list(waiting.items()):
                answered[kind] = time.perf_counter()
                channel.answer(ask_id, APPROVE_GO if kind == "plan" else "tabs")
                del waiting[ask_id]

    before = len(md.model_requests())
    try:
        persona = asyncio.ensure_future(person())
        result = await rt.run(spec, "go", step_name="work", on_event=shown.put_nowait)
        await asyncio.wait_for(persona, 5)
    finally:
        rt.close()
    assert result.ok and (ws / "notes.txt").read_text() == "yo", result.error
    requests = md.model_requests()[before:]
    assert any(r.last_tool_result == APPROVED for r in requests)

    def next_after(t: float) -> float:
        return min(r.received_at for r in requests if r.received_at > t) - t
    return next_after(answered["question"]), next_after(answered["plan"])


def _figures(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(0.95 * len(xs)))]
    return f"median {statistics.median(xs) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms"


async def _measure(k: int) -> None:
    for parked in (False, True):
        questions: list[float] = []
        plans: list[float] = []
        for _ in range(k):
            with tempfile.TemporaryDirectory() as tmp:
                async with ModelDouble(_scenario(Path(tmp) / "ws")) as md:
                    q, p = await _one(md, Path(tmp), parked)
            questions.append(q)
            plans.append(p)
        mode = "parked (no CLI while it waits)" if parked else "live (the CLI waits)"
        ratio = statistics.median(plans) / statistics.median(questions)
        print(f"{mode}: question answered -> model {_figures(questions)}; plan approved -> model {_figures(plans)}; "
              f"plan / question {ratio:.2f}x over {k} runs")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    asyncio.run(_measure(int(args[0]) if args else 10))
    print("command: .venv/bin/python -m bench.bench_plan 10")


if __name__ == "__main__":
    main()
