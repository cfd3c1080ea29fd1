"""ApprovalGate and the channel's approval members without a CLI: decisions, double clicks, bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flower_core.human import HumanChannel
from flower_core.human.approval import ALLOW_ONCE, MAX_INPUT_CHARS, ApprovalGate, Decision, decision_of, run_option
from flower_core.human.approval_diff import diff_facts
from flower_core.permissions import Policy


def gate(tmp: Path | None = None) -> ApprovalGate:
    return ApprovalGate(Policy.of(ask=["Bash"]), cwd="/w", grants_path=None if tmp is None else tmp / "g.json")


async def pending(ch: HumanChannel) -> str:
    for _ in range(200):
        if ch.pending_approvals():
            return ch.pending_approvals()[0].id
        await asyncio.sleep(0.01)
    raise AssertionError("no approval was asked")


def test_answers_read_as_decisions_words_mean_deny() -> None:
    assert decision_of(ALLOW_ONCE, "Bash") == ("once", "") and decision_of(" y ", "Bash") == ("once", "")
    assert decision_of(run_option("Bash"), "Bash") == ("run", "") and decision_of("a", "Bash") == ("run", "")
    assert decision_of("n", "Bash") == ("deny", "") and decision_of("Deny", "Bash") == ("deny", "")
    assert decision_of("not  now, use ls", "Bash") == ("deny", "not now, use ls")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="unattended_approvals"):
        ApprovalGate(Policy(), unattended="maybe")
    with pytest.raises(ValueError, match="approval_timeout_s"):
        ApprovalGate(Policy(), timeout_s=0)


async def test_the_first_decision_wins_and_bad_decisions_change_nothing() -> None:
    ch = HumanChannel(timeout_s=60)
    ch.approvals = gate()
    asking = asyncio.create_task(ch.approvals.decide(ch, "Bash", {"command": "make", "x": "y" * (MAX_INPUT_CHARS * 2)}))
    ask_id = await pending(ch)
    with pytest.raises(ValueError, match="once, run, deny"):
        ch.approve(ask_id, "sure")
    assert ch.pending_approvals() and not ch.approve("q99", "once")
    assert ch.approve(ask_id, "deny", "no", by="bea")
    assert not ch.approve(ask_id, "once") and not ch.answer(ask_id, ALLOW_ONCE)  # a late click is refused
    d = await asyncio.wait_for(asking, 10)
    assert d == Decision(False, d.message, "deny", ask_id) and d.message.endswith("no")
    ask = ch.asks[0]
    assert len(ask.facts["input"]["x"]) < MAX_INPUT_CHARS + 100 and ask.facts["by"] == "bea"


async def test_an_approval_is_not_a_question_to_approve(tmp_path: Path) -> None:
    ch = HumanChannel(timeout_s=60, max_asks=1)
    ch.approvals = gate(tmp_path)
    question = asyncio.create_task(ch.ask_outcome("Which?", ["a", "b"]))
    await asyncio.sleep(0)
    assert not ch.approve("q1", "once") and ch.remaining == 0
    ch.answer("q1", "a")
    await asyncio.wait_for(question, 10)
    asking = asyncio.create_task(ch.approvals.decide(ch, "Bash", {"command": "ls"}))
    ask_id = await pending(ch)  # asked though the question quota is used up
    assert ch.approve(ask_id, "run")
    assert (await asyncio.wait_for(asking, 10)).how == "run"
    assert (await ch.approvals.decide(ch, "Bash", {"command": "pwd"})).how == "allowed"
    assert gate(tmp_path).policy.granted == frozenset({"Bash"})


def test_the_whole_diff_of_an_edit_is_against_the_file_as_it_is_and_other_calls_get_none(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    folder = tmp_path / "runs" / "approvals"
    edit = {"file_path": "a.py", "old_string": "two", "new_string": "TWO"}
    facts = diff_facts("Edit", edit, tmp_path, folder)
    text = Path(facts["diff_file"]).read_text()
    assert " one\n-two\n+TWO\n three\n" in text and text.startswith("--- a/a.py\n+++ b/a.py\n")
    assert facts["diff_lines"] == text.count("\n") and facts["diff_bytes"] == len(text.encode())
    multi = {"file_path": str(tmp_path / "a.py"), "edits": [{"old_string": "one", "new_string": "1"},
                                                            {"old_string": "three", "new_string": "3"}]}
    assert "+1\n" in Path(diff_facts("MultiEdit", multi, tmp_path, folder)["diff_file"]).read_text()
    gone = {"file_path": "a.py", "old_string": "not there", "new_string": "x"}  # the call's strings alone
    assert "-not there\n+x\n" in Path(diff_facts("Edit", gone, tmp_path, folder)["diff_file"]).read_text()
    assert diff_facts("Bash", {"command": "ls"}, tmp_path, folder) == {}
    assert diff_facts("Write", {"file_path": "new.txt", "content": "hi"}, tmp_path, None) == {}  # nowhere to keep it
    assert "+hi\n" in Path(diff_facts("Write", {"file_path": "new.txt", "content": "hi"}, tmp_path,
                                      folder)["diff_file"]).read_text()
