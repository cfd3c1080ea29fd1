"""Plan first in the terminal: the plan prints with its lines and the prompt "1) Approve and go  2) Approve, ask
before edits  or type words to keep planning"; 1 and 2 approve, words (and Enter alone) keep planning. A real
pipe and a real HumanChannel with a PlanReview (its verdicts are what the CLI would be told), then `flower
--plan` itself in a pseudo-terminal on the real CLI and the model double.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from adapters.terminal import Render, StdinReader
from bots.flower_cli import build_parser, main
from bots.terminal_run import UsageError, check_plan
from flower_core import Event, HumanChannel
from flower_core.human.plan_review import GO, GO_ASK, REVISE, PlanReview, Verdict
from tests.conftest import scenario_of
from tests.e2e.test_flower_cli import ROOT, clean_env, finish
from tests.platforms.terminal.test_terminal_stdin import Pipe, pipe, until, wired
from tests.support.plan_support import PLAN, PLAN2, turns

__all__ = ["pipe"]

PROMPT = "     1) Approve and go  2) Approve, ask before edits  or type words to keep planning"


class Reviews:
    """A PlanReview fed ExitPlanMode calls as the stream would carry them, decided by lines typed into the pipe."""

    def __init__(self, ch: HumanChannel, path: Path, pipe: Pipe) -> None:
        self.ch, self.plan, self.pipe = ch, PlanReview(path), pipe
        self._seen = self.plan.watching(lambda events: None)
        self._calls = 0

    async def decided(self, plan: str, line: str) -> Verdict:
        self._calls += 1
        call_id = f"toolu_{self._calls}"
        self._seen([Event("tool_call", tool="ExitPlanMode", payload={"id": call_id, "input": {"plan": plan}})])
        deciding = asyncio.create_task(self.plan.review(self.ch, call_id))
        await until(lambda: self.ch.pending())
        self.pipe.type(line)
        return await asyncio.wait_for(deciding, 5)


async def test_words_and_enter_keep_planning_then_1_approves_and_go(pipe: Pipe, tmp_path: Path) -> None:
    ch = HumanChannel(timeout_s=30, language="en")
    render, out, _ = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    reviews = Reviews(ch, tmp_path / "plan.json", pipe)
    try:
        verdict = await reviews.decided(PLAN, "Add a test first.\n")
        assert (verdict.allow, verdict.decision) == (False, REVISE) and "Add a test first." in verdict.message
        shown = out.getvalue()
        assert "  ? The agent's plan is ready for review" in shown
        assert "    1. Write notes.txt with the word yo.\n    2. Say done.\n" in shown  # line by line
        assert PROMPT + "\n" in shown
        assert "  . keep planning: Add a test first. — the agent presents a new plan" in shown
        assert reviews.plan.planning

        verdict = await reviews.decided(PLAN2, "\n")  # Enter alone: keep planning, no words
        assert (verdict.allow, verdict.decision) == (False, REVISE)
        assert "  . keep planning — the agent presents a new plan" in out.getvalue()

        verdict = await reviews.decided(PLAN2, "1\n")
        assert (verdict.allow, verdict.decision) == (True, GO)
        assert "  + plan approved — the agent goes on" in out.getvalue()
        assert not reviews.plan.planning and ch.pending() == []
    finally:
        reader.stop()


async def test_2_approves_and_asks_before_edits(pipe: Pipe, tmp_path: Path) -> None:
    ch = HumanChannel(timeout_s=30, language="en")
    render, out, _ = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    try:
        verdict = await Reviews(ch, tmp_path / "plan.json", pipe).decided(PLAN, "2\n")
        assert (verdict.allow, verdict.decision) == (True, GO_ASK)
        assert "  + plan approved — edits and commands will ask first" in out.getvalue()
        assert json.loads((tmp_path / "plan.json").read_text())["state"] == GO_ASK
    finally:
        reader.stop()


def test_a_plan_prints_as_text_and_a_long_one_says_where_the_rest_is() -> None:
    render = Render(color=False)
    long = "step\x1b[2J one\n" + "x" * 30
    asked = Event("ask", "The agent's plan is ready for review.", payload={
        "id": "q1", "kind": "plan", "state": "asked", "options": ["Approve and go", "Approve, ask before edits",
                                                                   "Keep planning…"],
        "plan": long, "plan_chars": 50_000, "plan_file": "/runs/r1/plans/plan-1.md"})
    lines = [text for text, _ in render.lines(asked)]
    assert lines[1:3] == ["    step one", "    " + "x" * 30]  # no escape sequence reaches the terminal
    assert "    (cut here: the whole plan, 50000 characters, is in /runs/r1/plans/plan-1.md)" in lines
    assert lines[-2] == PROMPT
    closed = Event("ask", "", payload={"id": "q1", "kind": "plan", "state": "cancelled"})
    assert [t for t, _ in render.lines(closed)] == [
        "  . plan review closed (the run was interrupted) — it is still planning"]


def test_plan_flag_and_no_terminal_is_a_usage_error() -> None:
    assert build_parser().parse_args(["go", "x", "--plan"]).plan is True
    assert build_parser().parse_args(["go", "x"]).plan is False
    with pytest.raises(UsageError, match="--plan waits for you"):
        check_plan(True, interactive=False)
    check_plan(True, interactive=True)
    check_plan(False, interactive=False)


def test_plan_without_a_terminal_stops_before_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["--plan", "x", "-w", str(tmp_path / "ws")]) == 2
    assert "--plan waits for you" in capsys.readouterr().err and not (tmp_path / "ws").exists()


def work_turns(ws: Path) -> list[dict[str, Any]]:
    return turns(ws / "notes.txt", plans=(PLAN, PLAN2))


async def test_flower_plan_in_a_terminal(tmp_path: Path, double_factory: Any) -> None:
    ws = tmp_path / "ws"
    md = await double_factory(scenario_of(
        {"name": "clarify", "match": "Clarify this request before any work starts", "turn": [
            {"say": "## Goal\nA note that says yo.\n\n## Acceptance criteria\n- notes.txt exists\n\n"
                    "## Boundaries\n- no other files\n\n## Unknowns and assumptions\n- none"}]},
        {"name": "work", "match": "Carry out the work described in the brief", "turn": work_turns(ws)}))
    env = {**clean_env(tmp_path), **md.env(str(tmp_path / ".claude")), "PYTHONPATH": str(ROOT)}
    child = pexpect.spawn(sys.executable, ["-m", "bots.flower_cli", "write a note", "--plan", "--no-goal",
                                           "-w", str(ws), "-r", str(ws / "runs")],
                          cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(50, 200))
    async def expect(pattern: str) -> None:  # in a thread: the model double answers on this test's event loop
        await asyncio.to_thread(child.expect, pattern)

    try:
        await expect("1\\. Write notes\\.txt with the word yo\\.")
        await expect("or type words to keep planning")
        assert not (ws / "notes.txt").exists()
        child.sendline("Add a test first.")
        await expect("1\\. Add a test first\\.")
        await expect("or type words to keep planning")
        feedback = md.model_requests()[-1].last_tool_result
        assert "keep planning" in feedback and "Add a test first." in feedback
        assert not (ws / "notes.txt").exists()
        child.sendline("1")
        await expect("plan approved — the agent goes on")
        await expect("\\+ finished")
        assert await asyncio.to_thread(finish, child) == 0
    finally:
        child.close(force=True)
    assert (ws / "notes.txt").read_text() == "yo"
