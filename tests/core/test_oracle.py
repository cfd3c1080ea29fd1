"""The oracle: side questions on its own runtime under <run_dir>/aside; the main books never move."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flower_core.devmodel import Scenario, load_scenario, parse_scenario
from flower_core.events import Event
from flower_core.oracle import Oracle, render_event
from flower_core.workbench import Workbench
from flower_core.workflow import Step, Workflow
from tests.support.workflow_support import make_runtime, spec


def demo_plus_main() -> Scenario:
    """The shipped demo (its oracle conversation) plus a catch-all main thread for the watched run."""
    demo = load_scenario("demo")
    main = parse_scenario({"conversation": [{"name": "main", "turn": [
        {"say": "Looking around.", "call": [{"tool": "Glob", "input": {"pattern": "*"}}]},
        {"say": "Main step finished."}]}]})
    return Scenario(name="demo+main", conversations=demo.conversations + main.conversations)


async def test_oracle_answers_twice_without_touching_the_main_books(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path) -> None:
    md = await double_factory(demo_plus_main())
    wb = Workbench(tmp_path / "ws").ensure()
    wb.brief.write_text("## Goal\nA greeting note.\n", encoding="utf-8")
    rt = make_runtime(tmp_path, md, cli_home, workbench=wb)
    oracle = Oracle(workspace=rt.workspace, run_dir=rt.run_dir, workbench=wb, env=md.env(cli_home))
    try:
        ctx = await Workflow([Step("main", spec(), "please work")]).run(rt, on_event=oracle.observe)
        assert {k: v for k, v in ctx.items() if not k.startswith("_")} == {
            "main": "Looking around.\n\nMain step finished."}
        before = rt.manifest_path.read_bytes()
        first = await oracle.ask("Where are we now?")
        second = await oracle.ask("Anything blocked?")
    finally:
        oracle.close()
        rt.close()
    assert "(offline demo)" in first and "(offline demo)" in second
    assert rt.manifest_path.read_bytes() == before  # the main manifest did not grow a byte
    aside = rt.run_dir / "aside"
    assert [row["step"] for row in json.loads((aside / "manifest.json").read_text())] == ["oracle#1", "oracle#2"]
    asked = md.model_requests("oracle")
    assert [r.turn for r in asked] == [0, 1, 0, 1]  # two fresh sessions, never the main one
    prompt = asked[0].first_user_text
    assert "Where are we now?" in prompt and "== step main (1/1)" in prompt and "[Glob] *" in prompt
    assert str(wb.brief) in prompt and "Anything blocked?" in asked[2].first_user_text
    body = asked[0].body
    offered = {t["name"] for t in body.get("tools", [])} - {"DeferredToolPlaceholder"}  # the CLI's own stub
    assert offered == {"Read", "Glob", "Grep"}
    assert oracle.total_cost() > 0


def test_oracle_keeps_a_window_of_recent_events(tmp_path: Path) -> None:
    oracle = Oracle(workspace=tmp_path, run_dir=tmp_path / "runs")
    for i in range(100):
        oracle(Event("text", text=f"line {i}"))
    assert len(oracle.events) == 60 and oracle.events[0].text == "line 40"
    assert (oracle.spec.max_turns, oracle.spec.max_budget_usd, oracle.spec.tools) == (12, 0.5, ["Read", "Glob", "Grep"])
    assert oracle.run_dir == tmp_path / "runs" / "aside"
    prompt = oracle.prompt("what now?")
    assert "line 99" in prompt and "line 39" not in prompt


def test_render_event_is_compact() -> None:
    assert render_event(Event("thinking", text="hmm")) is None
    assert render_event(Event("tool_result", text="ok", payload={"is_error": False})) is None
    call = Event("tool_call", text="a.py", tool="Read", payload={"subagent": True})
    assert render_event(call) == "subagent [Read] a.py"
    assert render_event(Event("ask", text="Colour?", payload={"state": "answered", "answer": "blue"})) == (
        "asked human (answered): Colour? -> blue")
    long = render_event(Event("text", text="x" * 1000))
    assert long is not None and len(long) == 240
