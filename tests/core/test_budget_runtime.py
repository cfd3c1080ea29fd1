"""The cost cap through the real SDK + bundled CLI against the model double.

The double reports usage; the CLI prices it (the model is pinned to claude-sonnet-4-5 so the
figures are fixed: a turn of 1,000 input and 40,000 output tokens costs $0.603) and stops at the
message that reaches what is left of the cap; the Runtime asks through the channel and resumes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flower_core import AgentSpec, Budget, BudgetError, Event, HandoffPolicy, HumanChannel, Step, Workflow, starter_flow
from flower_core.runtime.budget import REFUSED
from tests.conftest import scenario_of
from tests.support.runtime_support import Recorder, make_runtime

MODEL = "claude-sonnet-4-5"
COSTLY = {"input_tokens": 1000, "output_tokens": 40000}  # $0.603 a turn at Sonnet prices
TURN = 0.603
READ = [{"tool": "Read", "input": {"file_path": "notes.md"}}]


def priced(name: str = "worker", channel: Any = None, **kw: Any) -> AgentSpec:
    kw.setdefault("allowed_tools", ["Read", "Agent"])
    return AgentSpec(name=name, model=MODEL, channel=channel, max_turns=12, **kw)


def budget_events(rec: Recorder) -> list[dict[str, Any]]:
    return [e.payload for e in rec.events if e.kind == "system" and e.payload.get("subtype") == "budget"]


class Owner:
    """Answers the budget question the way a front end does: from the event, a moment later, from the
    loop (never inside the channel's own emit). Remembers what the double had seen at that moment."""

    def __init__(self, ch: HumanChannel, md: Any, answer: str | None) -> None:
        self.ch, self.md, self.answer = ch, md, answer
        self.asked: list[Event] = []
        self.requests_then: list[int] = []

    def __call__(self, ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("kind") == "budget" and ev.payload.get("state") == "asked":
            self.asked.append(ev)
            self.requests_then.append(len(self.md.model_requests()))
            if self.answer is not None:
                asyncio.get_running_loop().call_soon(self.ch.answer, ev.payload["id"], self.answer)


async def test_crossing_the_cap_mid_step_pauses_at_the_boundary_and_plus_5_resumes_the_same_session(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Resumed: {last_user_text}", "turn": [
        {"say": "Reading once.", "call": READ, "usage": COSTLY},
        {"say": "Reading twice.", "call": READ, "usage": COSTLY},  # crosses $1.00: the CLI stops right here
        {"say": "Resumed: {last_user_text}"},
    ]}))
    ch = HumanChannel(timeout_s=30)
    owner = Owner(ch, md, "+$5")
    rec = Recorder(react=owner)
    sessions: list[str] = []
    rt = make_runtime(tmp_path, md, cli_home, on_session=sessions.append)
    (rt.workspace / "notes.md").write_text("hello")
    wf = Workflow([Step("read", priced(channel=ch), "read notes.md twice")], channel=ch, budget=1.0)
    try:
        ctx = await wf.run(rt, on_event=rec)
    finally:
        rt.close()
    r = wf.results["read"]
    assert "_failed_at" not in ctx and r.ok and r.attempts == 1 and not r.errors  # a pause is not a failure
    # The pause came at the boundary after the message that crossed the cap: two requests, nothing after.
    assert owner.requests_then == [2] and [q.turn for q in md.model_requests()[:2]] == [0, 1]
    asked = owner.asked[0].payload
    assert (asked["kind"], asked["cap"], asked["step"], asked["options"]) == ("budget", 1.0, "read",
                                                                              ["+$5", "+$20", "Stop"])
    assert asked["spent"] == pytest.approx(2 * TURN) and asked["aside"] == 0
    # +$5 resumed the same session: one session id, and the double saw the conversation go on.
    assert len(sessions) == 1 and r.session_id == sessions[0]
    resumed = md.model_requests()[-1]
    history = json.dumps(resumed.body["messages"], ensure_ascii=False)
    assert "Reading once." in history and "Reading twice." in history
    assert "raised the cap to $6.00 ($1.21 spent so far)" in resumed.last_user_text
    assert r.text.endswith("Resumed: The run paused at its cost cap; the human raised the cap to $6.00 ($1.21 "
                           "spent so far).\n\n" + rt.INTERRUPT_NOTE)
    phases = [p["phase"] for p in budget_events(rec)]
    assert phases == ["set", "spent", "paused", "raised", "spent"]
    assert wf.budget.cap == 6.0 and wf.budget.spent == pytest.approx(rt.total_cost(), abs=1e-4)
    assert [a.state for a in ch.asks] == ["answered"]


@pytest.mark.parametrize("how", ["Stop", "no answer"])
async def test_stop_or_silence_ends_the_run_at_the_step_that_reached_the_cap(
        double_factory: Any, cli_home: Path, tmp_path: Path, how: str) -> None:
    md = await double_factory(scenario_of(
        {"name": "report", "match": "^report:", "turn": [{"say": "Report written."}]},
        {"name": "build", "turn": [
            {"say": "Building.", "call": READ, "usage": COSTLY},
            {"say": "Still building.", "call": READ, "usage": COSTLY},
            {"say": "Built."},
        ]}))
    ch = HumanChannel(timeout_s=0.5 if how == "no answer" else 30)
    owner = Owner(ch, md, "Stop" if how == "Stop" else None)
    rec = Recorder(react=owner)
    rt = make_runtime(tmp_path, md, cli_home)
    (rt.workspace / "notes.md").write_text("hello")
    spec = priced(channel=ch)
    wf = Workflow([Step("build", spec, "build: it"), Step("report", spec, "report: it")], channel=ch,
                  budget=Budget(1.0))
    try:
        ctx = await wf.run(rt, on_event=rec)
    finally:
        rt.close()
    assert ctx["_failed_at"] == "build" and "report" not in wf.results
    error = wf.results["build"].error or ""
    why = "the owner chose Stop" if how == "Stop" else "nobody answered within the question window"
    assert error == f"stopped at the cost cap: $1.21 spent of a $1.00 cap — {why}"
    assert [q.conversation for q in md.model_requests()] == ["build", "build"]  # nothing after the pause
    assert budget_events(rec)[-1]["phase"] == "stopped" and wf.budget.stopped == error
    assert [a.state for a in ch.asks] == ["answered" if how == "Stop" else "timeout"]
    rows = json.loads(rt.manifest_path.read_text())
    assert [(row["step"], row["ok"], row["error"]) for row in rows] == [("build", False, error)]


async def test_a_cap_of_zero_refuses_to_start(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "never"}]}))
    rec = Recorder()
    rt = make_runtime(tmp_path, md, cli_home, budget=0)
    rt.budget.on_event = rec
    try:
        r = await rt.run(priced(), "anything", step_name="first")
    finally:
        rt.close()
    assert not r.ok and r.error == REFUSED and md.requests == []  # no CLI was started
    assert budget_events(rec) == [{**budget_events(rec)[0], "phase": "refused", "note": REFUSED}]
    ws = tmp_path / "starter"
    with pytest.raises(BudgetError, match="refusing to start"):
        starter_flow("build me a thing", workspace=ws, run_dir=ws / "runs", budget_usd=0)
    assert not (ws / ".flower").exists()  # refused before the workbench was made


async def test_the_books_count_subagents_and_handoff_documents(double_factory: Any, cli_home: Path,
                                                              tmp_path: Path) -> None:
    doc = ("## Goal\nCount.\n## Done\nhalf.\n## In progress\nCounting.\n## Decisions\nnone.\n## Next steps\n"
           "finish.\n## Open questions\nnone.")
    writing = {"say": doc, "usage": COSTLY}  # the handoff document costs $0.603 and emits no event
    md = await double_factory(scenario_of(
        {"name": "successor", "match": "taking over this task", "turn": [{"say": "Successor done."}]},
        {"name": "helper", "match": "Count the words, please", "turn": [{"say": "42 words.", "usage": COSTLY}]},
        {"name": "main", "turn": [
            {"say": "Delegating.", "call": [{"tool": "Agent", "input": {
                "description": "count", "prompt": "Count the words, please", "subagent_type": "general-purpose",
                "run_in_background": False}}], "usage": {"input_tokens": 6500}},
            {"say": "Reading.", "call": READ, "usage": {"input_tokens": 8500}},
            writing, writing,
        ]}))
    rec = Recorder()
    rt = make_runtime(tmp_path, md, cli_home, handoff=HandoffPolicy(window=10_000, near=0.70, trigger=0.80),
                      workbench=SimpleNamespace(notes=tmp_path / "notes"),
                      budget=Budget(100.0, on_event=rec))
    (rt.workspace / "notes.md").write_text("hello")
    try:
        r = await rt.run(priced(), "count the words", step_name="count", on_event=rec)
    finally:
        rt.close()
    assert r.ok and len(r.retired) == 1, r.error
    seen = sum(e.payload["cost_usd"] for e in rec.kinds("result") if not e.payload.get("subagent"))
    assert seen >= TURN  # the subagent's turn is in its parent's result
    assert rt.budget.spent == pytest.approx(r.cost_usd) and rt.budget.spent == pytest.approx(seen + TURN, abs=0.01)
    spent = [p for p in budget_events(rec) if p["phase"] == "spent"]
    assert len(spent) == 3 and spent[-1]["spent"] == pytest.approx(rt.budget.spent)  # step, writing, successor
