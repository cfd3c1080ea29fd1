"""plan_review's pure parts: what an answer decides, what planning holds, the state file, the plans folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flower_core.human.plan_review import (
    APPROVE_ASK,
    APPROVE_GO,
    GO,
    GO_ASK,
    KEEP_PLANNING,
    REVISE,
    PlanReview,
    decision_of,
    option_of,
    plans_dir,
)


@pytest.mark.parametrize(("answer", "expected"), [
    (APPROVE_GO, (GO, "")), ("  approve  AND go ", (GO, "")), ("1", (GO, "")),
    ("go", (REVISE, "go")), ("approve", (REVISE, "approve")),  # only an option (or its number) approves
    (APPROVE_ASK, (GO_ASK, "")), ("2", (GO_ASK, "")),
    (KEEP_PLANNING, (REVISE, "")), ("", (REVISE, "")), ("3", (REVISE, "")),
    ("Add tests first.", (REVISE, "Add tests first.")),
    ("  go on, but skip the docs ", (REVISE, "go on, but skip the docs")),
])
def test_an_answer_decides_by_its_option_or_its_number_and_words_keep_planning(answer: str,
                                                                               expected: tuple[str, str]) -> None:
    assert decision_of(answer) == expected


def test_each_decision_has_its_option_and_an_unknown_one_is_refused() -> None:
    assert [option_of(d) for d in (GO, GO_ASK, REVISE)] == [APPROVE_GO, APPROVE_ASK, KEEP_PLANNING]
    with pytest.raises(ValueError, match="decision must be one of go, go_ask, revise"):
        option_of("yes")


def test_planning_holds_what_could_change_something_and_frees_reading_delegating_and_the_plan_file(
        tmp_path: Path) -> None:
    plan = PlanReview(tmp_path / "plan.json")
    plan.plans_dir = tmp_path / "config" / "plans"
    assert not any(plan.holds(t, {}) for t in ("Read", "Glob", "Grep", "Agent", "TodoWrite", "ExitPlanMode",
                                                "mcp__human__ask", "mcp__human__inbox"))
    assert all(plan.holds(t, {"file_path": str(tmp_path / "ws" / "a.py")}) for t in ("Write", "Edit", "MultiEdit"))
    assert not plan.holds("Write", {"file_path": str(plan.plans_dir / "p.md")})
    assert plan.holds("Write", {"file_path": str(plan.plans_dir / ".." / "settings.json")})  # not in the folder
    assert plan.holds("Write", {"file_path": "plans/p.md"})  # relative: never the CLI's folder
    assert not plan.holds("Bash", {"command": "git status"}) and plan.holds("Bash", {"command": "rm -rf build"})
    assert plan.holds("mcp__other__deploy", {}) and plan.holds("NotebookEdit", {})


def test_an_approval_is_kept_across_instances_and_a_broken_file_means_planning(tmp_path: Path) -> None:
    path = tmp_path / "run" / "plan.json"

    class Channel:
        approvals = None

    channel = Channel()
    armed: list[str] = []
    plan = PlanReview(path, after=lambda: armed.append("gate") or "gate")
    assert plan.planning
    plan.decide(REVISE, channel)  # a revision keeps nothing
    assert plan.planning and not path.exists()
    plan.decide(GO_ASK, channel)
    assert channel.approvals == "gate" and json.loads(path.read_text())["state"] == GO_ASK
    again = PlanReview(path, after=lambda: armed.append("gate2") or "gate2")
    assert again.state == GO_ASK and not again.planning
    again.arm(channel)
    again.arm(channel)  # once
    assert armed == ["gate", "gate2"]
    path.write_text("{not json")
    assert PlanReview(path).planning
    path.write_text(json.dumps({"state": "whatever"}))
    assert PlanReview(path).planning


def test_the_plans_folder_follows_the_clis_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert plans_dir({"CLAUDE_CONFIG_DIR": str(tmp_path / "c" / ".." / "cfg")}) == tmp_path / "cfg" / "plans"
    assert plans_dir({}) == tmp_path / ".claude" / "plans"


async def test_the_plan_is_the_calls_own_else_the_last_plan_file_written(tmp_path: Path) -> None:
    from flower_core.events import Event

    plan = PlanReview(tmp_path / "plan.json")
    plan.plans_dir = tmp_path / "plans"
    plan.plans_dir.mkdir()
    (plan.plans_dir / "p.md").write_text("from the file")
    seen: list[Event] = []
    sink = plan.watching(seen.extend)
    sink([Event("tool_call", tool="Write", payload={"id": "w1", "input": {"file_path": str(plan.plans_dir / "p.md")}}),
          Event("tool_call", tool="ExitPlanMode", payload={"id": "e1", "input": {}}),
          Event("tool_call", tool="ExitPlanMode", payload={"id": "e2", "input": {"plan": "from the call"}})])
    assert len(seen) == 3  # the step's own sink sees everything
    assert await plan.text_of("e1") == "from the file"
    assert await plan.text_of("e2") == "from the call"


def test_a_decline_is_a_revision_and_only_real_words_are_feedback() -> None:
    from flower_core.human.plan_review import outcome

    assert outcome("declined", "Keep planning…") == (REVISE, "")
    assert outcome("declined", " go ") == (REVISE, "go")
    assert outcome("answered", "2") == (GO_ASK, "")
    assert outcome("cancelled", "") == ("", "") and outcome("timeout", "x") == ("", "")
