"""Continuity across processes: a workflow killed mid-step wakes in a new process and picks up."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from flower_core.human import HumanChannel
from flower_core.lineage import Lineage
from flower_core.workflow import Step, Workflow
from tests.conftest import scenario_of
from tests.support.workflow_support import REPO, Events, Steps, make_runtime, spec

# Step two checks the inbox, then asks a question nobody answers in the first process. The child
# reports every batch its session store receives; it is killed once step two's first tool round is
# stored (a step killed before anything was stored has only an id: it then starts afresh).
SCENARIO = scenario_of(
    {"name": "one", "match": "ONE go", "turn": [{"say": "one done"}]},
    {"name": "two", "match": "TWO go", "after_end": "two done", "turn": [
        {"say": "checking the inbox", "call": [{"tool": "mcp__human__inbox", "input": {}}]},
        {"call": [{"tool": "mcp__human__ask", "input": {"question": "Proceed?"}}]}]},
    {"name": "three", "match": "THREE go", "turn": [{"say": "three done"}]},
)

CHILD = """
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.core.test_workflow_wake import build
from flower_core.runtime import Resilience, Runtime

async def main() -> None:
    tmp = Path(sys.argv[2])
    rt = Runtime(workspace=tmp / "ws", run_dir=tmp / "runs", env=json.loads(sys.argv[3]),
                 resilience=Resilience(enabled=False))
    store_append = rt.store.append

    async def append(key, entries):  # tell the parent what reached the store
        await store_append(key, entries)
        for e in entries:
            content = (e.get("message") or {}).get("content")
            blocks = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            print(json.dumps([e.get("type"), blocks]), flush=True)

    rt.store.append = append
    await build(timeout_s=None).run(rt)

asyncio.run(main())
"""


def build(timeout_s: float | None = 0) -> Workflow:
    ch = HumanChannel(timeout_s=timeout_s)
    return Workflow([Step("s1", spec(), "ONE go"),
                     Step("s2", spec(channel=ch), "TWO go", resume_prompt="TWO RESUMED: carry on"),
                     Step("s3", spec(), "THREE go")], channel=ch)


async def stored_tool_result(stream: asyncio.StreamReader) -> None:
    """Read the child's store reports until a tool result (step two's first round) is stored."""
    while line := await stream.readline():
        kind, blocks = json.loads(line)
        if kind == "user" and "tool_result" in blocks:
            return
    raise AssertionError("the child ended before step two stored a tool result")


async def test_killed_mid_step_wakes_where_it_stopped(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(SCENARIO)
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(REPO), str(tmp_path), json.dumps(md.env(cli_home)),
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=asyncio.subprocess.PIPE)
    try:
        assert child.stdout is not None
        await asyncio.wait_for(stored_tool_result(child.stdout), timeout=60)
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    assert child.returncode == -signal.SIGKILL
    killed = Lineage.open(tmp_path / "runs", tmp_path / "ws")
    assert set(killed.done) == {"s1"} and set(killed.steps) == {"s1", "s2"}
    before = len(md.model_requests())

    rt = make_runtime(tmp_path, md, cli_home)
    events, steps = Events(), Steps()
    wf = build()
    try:
        ctx = await wf.run(rt, on_event=events, on_step=steps)
    finally:
        rt.close()

    assert (ctx["s1"], ctx["s3"], {k for k in ctx if not k.startswith("_")}) == ("one done", "three done",
                                                                             {"s1", "s2", "s3"})
    assert ctx["s2"].endswith("two done")
    flags = {name: (p["woke"], p["resumed"], p["reused"], p["wake"]) for name, p in events.steps()}
    assert flags == {"s1": (True, False, True, 2), "s2": (True, True, False, 2), "s3": (False, False, False, 2)}
    assert steps.names == ["s1", "s2", "s3"] and steps.seen[0][1].session_id == killed.steps["s1"]
    new = md.model_requests()[before:]
    assert {r.conversation for r in new} == {"two", "three"}  # step one was not run again
    two = [r for r in new if r.conversation == "two"]
    # Every request of the woken step carries its old history (a fresh session would be turn 0) and the
    # wake prompt is said into it. (The CLI may first close the tool call the kill cut off.)
    assert all(r.turn >= 1 and "TWO go" in r.first_user_text for r in two)
    assert any("TWO RESUMED" in r.last_user_text for r in two)
    assert wf.results["s2"].session_id == killed.steps["s2"]
    after = Lineage.open(tmp_path / "runs", tmp_path / "ws")
    assert after.done == {} and after.woke == 2  # the pass completed: the next wake starts a new one


async def test_a_recorded_session_missing_from_the_store_starts_afresh(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(SCENARIO)
    rt = make_runtime(tmp_path, md, cli_home)
    Lineage.open(rt.run_dir, rt.workspace).remember("s1", "00000000-0000-4000-8000-000000000000")
    events = Events()
    try:
        ctx = await Workflow([Step("s1", spec(), "ONE go")]).run(rt, on_event=events)
    finally:
        rt.close()
    assert {k: v for k, v in ctx.items() if not k.startswith("_")} == {"s1": "one done"}
    assert [(p["woke"], p["resumed"]) for _, p in events.steps()] == [(False, False)]
    assert [r.turn for r in md.model_requests("one")] == [0]
