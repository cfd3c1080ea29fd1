"""The card ledger keeps a card's kind and facts beside it, so a run that is not live (asleep, not yet woken
after a restart) still lists its plan or approval card as one (`GET …/asks` kind, plan, tool)."""

from __future__ import annotations

from pathlib import Path

from adapters.hub.ledger import FACTS_KEEP_CHARS, CardLedger


def test_kind_and_facts_outlive_the_process_and_an_oversize_input_is_left_out(tmp_path: Path) -> None:
    ledger = CardLedger(tmp_path)
    ledger.asked("1-q1", "Approve the plan?", ["Approve and go"], kind="plan",
                 facts={"tool": "ExitPlanMode", "input": {}, "plan": "## Plan\n1. Write notes.md", "plan_chars": 26})
    big = {"tool": "Write", "input": {"file_path": "a.txt", "content": "x" * FACTS_KEEP_CHARS}, "diff_lines": 1}
    ledger.asked("1-q2", "Allow Write?", ["Allow once"], kind="approval", facts=big)
    ledger.asked("1-q3", "Which colour?", ["red", "blue"])

    again = CardLedger(tmp_path)  # the next process reads what this one wrote
    plan, approval, question = (again.get(c) for c in ("1-q1", "1-q2", "1-q3"))
    assert plan is not None and (plan.kind, plan.facts["plan"]) == ("plan", "## Plan\n1. Write notes.md")
    assert approval is not None and approval.kind == "approval"
    assert approval.facts == {"tool": "Write", "diff_lines": 1}  # the whole file's content stays in the run's log
    assert question is not None and (question.kind, question.facts) == ("", {})


def test_a_ledger_written_before_kinds_were_kept_still_reads(tmp_path: Path) -> None:
    (tmp_path / "bridge").mkdir()
    (tmp_path / "bridge" / "cards.json").write_text(
        '{"cards": [{"card_id": "1-q1", "question": "Old?", "options": ["yes"], "state": "asked"}]}')
    [card] = CardLedger(tmp_path).open_cards()
    assert (card.card_id, card.kind, card.facts) == ("1-q1", "", {})
