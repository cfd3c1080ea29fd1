"""The cost cap's pure parts: reading answers, the books, the gate's question through a real
HumanChannel (no CLI needed: the channel is plain asyncio), and how front ends draw it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from adapters.terminal.render import Render
from adapters.view import RunView
from adapters.view.asks import AskCard, render
from adapters.view.status import StatusCard
from adapters.view.status import render as render_status
from flower_core import Budget, BudgetError, Event, HumanChannel
from flower_core.runtime.budget import REFUSED, BudgetDecision, Limit, decide


@pytest.mark.parametrize(("answer", "expected"), [
    ("+$5", BudgetDecision(False, 5.0)),
    ("+$20", BudgetDecision(False, 20.0)),
    ("Stop", BudgetDecision(True, why="stop", words="Stop")),
    ("stop it now", BudgetDecision(True, why="stop", words="stop it now")),
    ("no, that's enough", BudgetDecision(True, why="stop", words="no, that's enough")),
    ("7", BudgetDecision(False, 7.0)),
    ("$2.50", BudgetDecision(False, 2.5)),
    ("+3", BudgetDecision(False, 3.0)),
    ("continue but wrap up within $2", BudgetDecision(False, 2.0, words="continue but wrap up within $2")),
    ("give it 3 dollars more", BudgetDecision(False, 3.0, words="give it 3 dollars more")),
    ("keep going, finish the tests", BudgetDecision(False, 5.0, words="keep going, finish the tests")),
    ("", BudgetDecision(True, why="empty")),
    ("$0", BudgetDecision(True, why="stop")),
])
def test_reading_the_owners_answer(answer: str, expected: BudgetDecision) -> None:
    assert decide(answer, (5.0, 20.0)) == expected


def test_caps_and_steps_that_cannot_be_used_are_refused_clearly() -> None:
    for bad in (-1, float("nan"), float("inf"), "5", True):
        with pytest.raises(BudgetError, match="cost cap"):
            Budget(bad)  # type: ignore[arg-type]
    with pytest.raises(BudgetError, match="steps"):
        Budget(5, steps=(5, 0))
    assert Budget(None).cap is None and Budget(0).cap == 0.0 and Budget.coerce(2).cap == 2.0


def test_the_limit_each_attempt_gets_and_how_a_brake_is_read() -> None:
    b = Budget(5.0)
    assert Budget(None).limit(None) is None and Budget(0).limit(None) is None
    assert b.limit(None) == Limit(5.0, ours=True)
    assert b.limit(0.5) == Limit(0.5, ours=False)  # the spec's own cap binds: its brake stays a hard stop
    b.book(4.0)
    assert b.limit(None) == Limit(pytest.approx(1.0), ours=True)
    b.book(2.0)
    assert b.limit(None) is not None and b.limit(None).usd > 0  # the CLI ignores 0; the gate asks first anyway

    def outcome(stop_reason: str) -> SimpleNamespace:
        return SimpleNamespace(cost_usd=0.1, subtype="error_max_budget_usd", stop_reason=stop_reason, ok=False,
                               error="error_max_budget_usd: Reached maximum budget ($1)", stopped=None)
    paused, finished, theirs = outcome("tool_use"), outcome("end_turn"), outcome("tool_use")
    b.settle(paused, Limit(1.0, True))
    b.settle(finished, Limit(1.0, True))
    b.settle(theirs, Limit(0.5, False))
    assert (paused.stopped, paused.ok) == ("budget", False)  # tools were due: pause, resume after the question
    assert (finished.stopped, finished.ok, finished.error) == (None, True, None)  # the turn was done anyway
    assert (theirs.stopped, theirs.ok) == (None, False)
    assert b.spent == pytest.approx(6.3)


async def _answer_when_asked(ch: HumanChannel, answers: list[str], seen: list[Event]) -> None:
    for text in answers:
        ask = await ch.next_ask(timeout=5)
        assert ask is not None
        seen.append(ask.event(ch.remaining))
        ch.answer(ask.id, text)


async def test_the_gate_asks_through_the_channel_and_raises_the_cap() -> None:
    events: list[Event] = []
    ch = HumanChannel(timeout_s=5, max_asks=0)  # the model may not ask; the runtime's question still goes
    b = Budget(1.0, channel=ch, on_event=events.append)
    assert (await b.gate("work")).stop is False and ch.asks == []  # under the cap: nothing asked
    b.book(1.25, step="work")
    seen: list[Event] = []
    # Too little first: the cap is still reached after +$0.10, so it asks again.
    answerer = asyncio.create_task(_answer_when_asked(ch, ["$0.10", "continue but wrap up within $2"], seen))
    gate = await b.gate("work")
    await answerer
    assert not gate.stop and b.cap == pytest.approx(3.1)
    assert gate.words is not None and "raised the cap to $3.10" in gate.words and "wrap up within $2" in gate.words
    first = seen[0].payload
    assert (first["kind"], first["cap"], first["spent"], first["total"], first["step"]) == (
        "budget", 1.0, 1.25, 1.25, "work")
    assert first["options"] == ["+$5", "+$20", "Stop"] and first["remaining"] == -1
    assert "spent $1.25 of its $1.00 cost cap" in seen[0].text
    assert [a.state for a in ch.asks] == ["answered", "answered"] and ch.remaining == 0  # quota untouched
    phases = [e.payload["phase"] for e in events]
    assert phases == ["spent", "paused", "raised", "paused", "raised"]


@pytest.mark.parametrize(("how", "why"), [("Stop", "the owner chose Stop"), ("decline", "declined"),
                                          ("timeout", "nobody answered")])
async def test_stop_decline_or_silence_stop_every_later_step(how: str, why: str) -> None:
    ch = HumanChannel(timeout_s=0.2 if how == "timeout" else 5)
    events: list[Event] = []
    b = Budget(1.0, channel=ch, on_event=events.append)
    b.book(1.0)

    async def settle() -> None:
        ask = await ch.next_ask(timeout=5)
        assert ask is not None
        if how == "Stop":
            ch.answer(ask.id, "Stop")
        else:
            ch.decline(ask.id)
    task = asyncio.create_task(settle()) if how != "timeout" else None
    gate = await b.gate("goal")
    if task is not None:
        await task
    assert gate.stop and why in gate.error and "stopped at the cost cap: $1.00 spent of a $1.00 cap" in gate.error
    again = await b.gate("work")
    assert again.stop and again.error == gate.error and len(ch.asks) == 1  # never asked twice
    assert events[-1].payload["phase"] == "stopped" and events[-1].payload["note"] == gate.error


async def test_a_cap_of_zero_refuses_and_no_channel_means_stop() -> None:
    events: list[Event] = []
    zero = Budget(0, on_event=events.append)
    gate = await zero.gate("clarify")
    assert gate.stop and gate.error == REFUSED and events[0].payload["phase"] == "refused"
    lonely = Budget(1.0)
    lonely.book(2.0)
    gate = await lonely.gate("clarify")
    assert gate.stop and "nobody to ask" in gate.error


async def test_two_steps_at_the_cap_share_one_question_and_a_side_question_wakes_watchers() -> None:
    ch = HumanChannel(timeout_s=5)
    b = Budget(1.0, channel=ch)
    woken: list[str] = []
    b.watch(lambda: woken.append("x"))
    b.book(0.5)
    assert woken == []
    b.book(0.6, aside=True)  # the oracle pushed the run over the cap
    assert woken == ["x"] and (b.spent, b.aside) == (0.5, 0.6)
    gates = asyncio.gather(b.gate("a"), b.gate("b"))
    ask = await ch.next_ask(timeout=5)
    assert ask is not None and ask.facts["aside"] == 0.6
    ch.answer(ask.id, "+$5")
    first, second = await gates
    assert not first.stop and not second.stop and len(ch.asks) == 1


def test_the_status_card_shows_spent_over_cap_and_warns_from_80_percent() -> None:
    card = StatusCard("r1", "task", 0.0)
    assert render_status(card, 1.0).tone == "" and all(k != "Budget" for k, _ in render_status(card, 1).fields)
    card.cap_usd, card.cost_usd = 5.0, 3.0
    msg = render_status(card, 1.0)
    assert msg.tone == "" and ("Budget", "$3.00 / $5.00 (60%)") in msg.fields
    card.aside_usd = 1.1
    msg = render_status(card, 1.0)
    assert msg.tone == "warning" and ("Budget", "$4.10 / $5.00 (82%) ⚠️") in msg.fields
    assert ("Side questions", "$1.10") in msg.fields
    card.cost_usd = 4.0
    assert render_status(card, 1.0).tone == "danger"


def test_the_run_view_turns_budget_events_into_the_card_and_notices() -> None:
    view = RunView("r7", "task", clock=lambda: 10.0)

    def budget(phase: str, **kw: object) -> Event:
        return Event("system", "budget", payload={"subtype": "budget", "phase": phase, **kw})
    out = view.on_event(budget("spent", spent=4.2, aside=0.0, total=4.2, cap=5.0, share=0.84))
    status = [m for m in out if m.kind == "status"]
    assert status and status[-1].tone == "warning" and ("Budget", "$4.20 / $5.00 (84%) ⚠️") in status[-1].fields
    ask = Event("ask", "Budget reached…", payload={
        "id": "q1", "state": "asked", "options": ["+$5", "+$20", "Stop"], "kind": "budget", "spent": 5.1,
        "aside": 0.1, "total": 5.2, "cap": 5.0, "remaining": -1})
    card = next(m for m in view.on_event(ask) if m.kind == "ask")
    assert card.title == "💰 Budget reached" and card.tone == "danger" and card.important
    assert [b.label for b in card.buttons] == ["+$5 (cap $10.00)", "+$20 (cap $25.00)", "Stop", "Answer in words…"]
    assert [b.style for b in card.buttons][:3] == ["primary", "default", "danger"]
    assert ("Spent", "$5.20") in card.fields and ("Side questions", "$0.1000 (included)") in card.fields
    assert view.status_card.state == "waiting"
    done = next(m for m in view.on_event(Event("ask", "Budget reached…", payload={**ask.payload,
                                                                                  "state": "answered",
                                                                                  "answer": "+$5"}))
                if m.kind == "ask")
    assert done.title == "💰 Budget answered by someone: +$5" and not done.buttons
    raised = view.on_event(budget("raised", spent=5.1, aside=0.1, total=5.2, cap=10.0, share=0.52))
    notice = next(m for m in raised if m.kind == "notice")
    assert notice.text.startswith("💰 Cost cap raised to $10.00")
    assert next(m for m in raised if m.kind == "status").tone == ""
    stopped = view.on_event(budget("stopped", cap=10.0, note="stopped at the cost cap: $10.00 spent — x"))
    assert next(m for m in stopped if m.kind == "notice").text == "⏹️ Stopped at the cost cap: $10.00 spent — x"


def test_a_settled_budget_card_says_who_stopped_it_or_that_nobody_answered() -> None:
    facts = {"total": 1.2, "cap": 1.0}
    stop = render("r1", AskCard("1-q1", "q1", "?", ["+$5", "Stop"], state="answered", answer="Stop", by="ann",
                                kind="budget", facts=facts))
    assert stop.title == "⏹️ Stopped at the cost cap by ann" and "had spent $1.20" in stop.text
    late = render("r1", AskCard("1-q1", "q1", "?", ["+$5", "Stop"], state="timeout", kind="budget", facts=facts))
    assert late.title == "⌛ No answer in time — the run stopped at its cost cap"


def test_the_terminal_prints_the_budget_question_for_its_prompt() -> None:
    r = Render(color=False)
    ask = Event("ask", "Budget reached…", payload={"id": "q1", "state": "asked", "options": ["+$5", "+$20", "Stop"],
                                                  "kind": "budget", "total": 1.2, "cap": 1.0, "aside": 0.0})
    lines = [t for t, _ in r.lines(ask)]
    assert lines[0] == "  $ Budget reached: spent $1.20 of the $1.00 cost cap — paused"
    assert lines[1:4] == ["     1) +$5   (cap $6.00)", "     2) +$20   (cap $21.00)", "     3) Stop"]
    assert "Enter alone stops the run" in lines[4]
    spent = Event("system", "budget", payload={"subtype": "budget", "phase": "spent", "total": 0.85, "cap": 1.0,
                                               "share": 0.85})
    assert r.lines(spent) == [("  ! cost $0.8500 of the $1.00 cap (85%)", "warn")] and r.lines(spent) == []
    brake = Event("result", "error_max_budget_usd", payload={"cost_usd": 1.2, "is_error": True})
    assert r.lines(brake) == [("  - cost cap reached · $1.2000", "warn")]
