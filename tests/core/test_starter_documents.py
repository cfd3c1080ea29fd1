"""Pure parsers behind starter_flow's gates: the brief's four sections, the goal's checklist, verdicts."""

from __future__ import annotations

import pytest

from flower_core.documents import Verdict, brief_missing, goal_checks, goal_complete

BRIEF = """# Brief
## Goal (目标)
Build X for the team.
**Acceptance criteria:** running `x` prints y
3. 边界 - no web UI
未知与假设: none asked
"""


def test_brief_headings_in_many_shapes() -> None:
    assert brief_missing(BRIEF) == []
    assert brief_missing("## Goal\nonly this") == ["acceptance criteria", "boundaries", "unknowns and assumptions"]


def test_code_fences_never_count_and_an_unclosed_one_swallows_the_rest() -> None:
    text = "## Goal\nX\n## Acceptance criteria\n- a\n```\n## Boundaries\n- b\n## Unknowns and assumptions\n- c\n"
    assert brief_missing(text) == ["boundaries", "unknowns and assumptions"]
    fenced = "## Goal\n```\n## Goal\nfake\n```\n"
    assert brief_missing(fenced)[0] == "goal"


def test_goal_needs_a_statement_and_checks() -> None:
    goal = "## Goal\nMake a.\n\n## Checklist (判定清单)\n- a exists\n2. b runs\n"
    assert goal_checks(goal) == ["a exists", "b runs"] and goal_complete(goal)
    assert not goal_complete("## Goal\nMake a.\n## Checklist\n(none)")


@pytest.mark.parametrize(("text", "passed", "clear"), [
    ("VERDICT: PASS\n- all good", True, True),
    ("## Verdict\nFAIL\n- missing a", False, True),
    ("Verdict: not yet achieved", False, True),
    ("结论:未通过\n- 缺少 a", False, True),
    ("结论: 通过", True, True),
    ("VERDICT: PASS — nothing failed", True, True),
    ("Looks fine to me.", False, False),  # ambiguous never passes
])
def test_verdicts(text: str, passed: bool, clear: bool) -> None:
    v = Verdict.parse(text)
    assert (v.passed, v.clear) == (passed, clear)
    if not passed:
        assert "not done yet" in v.feedback()
