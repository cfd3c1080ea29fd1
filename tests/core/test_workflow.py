"""Workflow through the real SDK + CLI against the model double: order, on_fail, gates, ctx, wiring."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from flower_core.human import HumanChannel
from flower_core.lineage import Lineage
from flower_core.workflow import Step, StepAbort, Workflow, current_run
from tests.conftest import scenario_of
from tests.support.workflow_support import Events, Steps, make_runtime, spec

FAIL_FOREVER = {"say": "never", "fault": {"kind": "http", "status": 500, "persistent": True}}


def outputs(ctx: dict[str, Any]) -> dict[str, Any]:
    """The step outputs in ctx, without the workflow's own ``_`` keys."""
    return {k: v for k, v in ctx.items() if not k.startswith("_")}


def conv(name: str, *turns: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "match": name.upper(), "turn": list(turns)}


async def test_stop_records_failed_at_and_runs_nothing_after(double_factory: Any, cli_home: Path,
                                                             tmp_path: Path) -> None:
    md = await double_factory(scenario_of(conv("one", {"say": "first answer"}), conv("two", FAIL_FOREVER),
                                          conv("three", {"say": "never reached"})))
    rt = make_runtime(tmp_path, md, cli_home)
    steps, events = Steps(), Events()
    wf = Workflow([Step("s1", spec(), "ONE go"),
                   Step("s2", spec(), lambda ctx: f"TWO after: {ctx['s1']}"),
                   Step("s3", spec(), "THREE go")])
    try:
        ctx = await wf.run(rt, on_event=events, on_step=steps)
    finally:
        rt.close()
    assert outputs(ctx) == {"s1": "first answer"} and ctx["_failed_at"] == "s2"
    # The original flower's private keys: the loop's own dicts, the runtime, the sink.
    assert ctx["_sessions"] is wf.sessions and ctx["_results"] is wf.results and "s1" in wf.sessions
    assert ctx["_runtime"] is rt and ctx["_on_event"] is events and ctx["_lineage"] is not None
    assert ctx["_woke"] == wf.wake == 1
    assert steps.ok() == {"s1": True, "s2": False}
    assert "API Error" in (steps.seen[1][1].error or "")
    assert [(n, p["index"], p["total"], p["woke"]) for n, p in events.steps()] == [("s1", 1, 3, False),
                                                                                 ("s2", 2, 3, False)]
    assert md.model_requests("three") == []
    assert "TWO after: first answer" in md.model_requests("two")[0].first_user_text
    assert wf.results["s1"].ok and wf.results["s1"].session_id
    lin = Lineage.open(rt.run_dir, rt.workspace)
    assert set(lin.done) == {"s1"} and set(lin.steps) == {"s1", "s2"} and lin.woke == 1


async def test_skip_and_continue_go_on(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        conv("one", FAIL_FOREVER),
        conv("two", {"say": "partial work", "call": [{"tool": "Glob", "input": {"pattern": "*"}}]}, FAIL_FOREVER),
        conv("three", {"say": "third done"})))
    rt = make_runtime(tmp_path, md, cli_home)
    steps = Steps()
    wf = Workflow([Step("s1", spec(), "ONE go", on_fail="skip"),
                   Step("s2", spec(), "TWO go", on_fail="continue"),
                   Step("s3", spec(), lambda ctx: f"THREE go; s1={ctx.get('s1', 'absent')} s2={ctx['s2']}")])
    try:
        ctx = await wf.run(rt, on_step=steps)
    finally:
        rt.close()
    assert steps.ok() == {"s1": False, "s2": False, "s3": True}
    assert outputs(ctx) == {"s2": "partial work", "s3": "third done"}
    assert "s1=absent s2=partial work" in md.model_requests("three")[0].first_user_text


async def test_gate_pushes_back_into_the_same_session_and_abort_spends_no_retries(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        conv("gated", {"say": "round one"}, {"say": "round two: {last_user_text}"}),
        conv("hopeless", {"say": "cannot"})))
    rt = make_runtime(tmp_path, md, cli_home)
    verdicts = iter([False, True])
    seen_runtime: list[Any] = []

    def gate(result: Any, ctx: dict[str, Any]) -> bool:
        seen_runtime.append(current_run().runtime)
        return next(verdicts)

    async def abort(result: Any, ctx: dict[str, Any]) -> bool:
        raise StepAbort("no environment for this")

    steps = Steps()
    wf = Workflow([
        Step("g", spec(), "GATED work", gate=gate, retries=2, on_reject=lambda r, ctx: "PUSH BACK: more",
             reduce=lambda r, ctx: r.text.upper()),
        Step("h", spec(), "HOPELESS try", gate=abort, retries=3),
    ])
    try:
        ctx = await wf.run(rt, on_step=steps)
    finally:
        rt.close()
    gated = md.model_requests("gated")
    assert [r.turn for r in gated] == [0, 1]  # the second round resumed the rejected session
    assert "PUSH BACK: more" in gated[1].last_user_text
    assert ctx["g"] == "ROUND TWO: PUSH BACK: MORE"
    assert seen_runtime == [rt, rt]
    assert len(md.model_requests("hopeless")) == 1 and wf.aborted == "no environment for this"
    assert ctx["_failed_at"] == "h" and steps.names == ["g", "h"]
    rows = [row["step"] for row in json.loads(rt.manifest_path.read_text())]
    assert rows == ["g", "g#round2", "h"]


async def test_channel_wiring_only_when_unset(tmp_path: Path) -> None:
    from flower_core.runtime import Runtime

    def sink(ev: Any) -> None: ...
    def mine(ev: Any) -> None: ...

    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    try:
        free, taken = HumanChannel(), HumanChannel(on_event=mine)
        await Workflow([], channel=free).run(rt, on_event=sink)
        await Workflow([], channel=taken).run(rt, on_event=sink)
        quiet = HumanChannel()
        await Workflow([], channel=quiet).run(rt, on_event=None)
    finally:
        rt.close()
    assert free.on_event is sink and taken.on_event is mine and quiet.on_event is None


def test_step_declaration_rules() -> None:
    with pytest.raises(ValueError):
        Step("s", spec(), "p", on_fail="retry")
    with pytest.raises(ValueError):
        Step("_private", spec(), "p")
    with pytest.raises(ValueError):
        Workflow([Step("a", spec(), "p"), Step("a", spec(), "q")])
    step = Step("s", lambda ctx: spec(ctx["who"]), lambda ctx: f"hi {ctx['who']}", resume_prompt="go on")
    assert step.agent({"who": "x"}).name == "x"
    assert step.render({"who": "x"}) == "hi x" and step.render({}, resuming=True) == "go on"


def test_lineage_is_absent_when_foreign_or_corrupt(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    lin = Lineage.open(runs, tmp_path / "ws")
    lin.remember("a", "sid-1")
    assert lin.bump() == 1
    again = Lineage.open(runs, tmp_path / "ws")
    assert again.steps == {"a": "sid-1"} and again.woke == 1
    assert Lineage.open(runs, tmp_path / "elsewhere").steps == {}
    (runs / "lineage.json").write_text("{not json", encoding="utf-8")
    assert Lineage.open(runs, tmp_path / "ws").steps == {}


def test_step_fields_come_in_the_original_flowers_order() -> None:
    step = Step("b", spec(), "go on", "a")  # the fourth positional field is resume_from
    assert (step.resume_from, step.on_fail, step.fork) == ("a", "stop", False)
    assert [f.name for f in dataclasses.fields(Step)] == [
        "name", "spec", "prompt", "resume_from", "fork", "retries", "gate", "on_fail", "when", "on_reject",
        "resume_prompt", "reduce"]
