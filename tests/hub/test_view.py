"""The run view, pure: Events in, OutMessages out, on a hand-driven clock."""

from __future__ import annotations

from typing import Any

from adapters.ids import decode
from adapters.platform import OutMessage
from adapters.view import AskCard, RunOutcome, RunView, ViewConfig
from flower_core import Event


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def make(**cfg: Any) -> tuple[RunView, Clock]:
    clock = Clock()
    return RunView("r1", "build a thing", clock=clock, config=ViewConfig(**cfg), epoch="e"), clock


def kinds(msgs: list[OutMessage]) -> list[str]:
    return [m.kind for m in msgs]


def step(i: int, n: int, name: str, **p: Any) -> Event:
    return Event("step", name, payload={"index": i, "total": n, "resumed": False, "woke": False, **p})


def asked(qid: str, q: str, options: list[str], state: str = "asked", answer: str = "") -> Event:
    return Event("ask", q, payload={"id": qid, "options": options, "state": state, "answer": answer,
                                    "remaining": -1, "asked_at": 0.0})


def test_step_is_a_milestone_with_a_notice_and_a_status_edit() -> None:
    v, _ = make()
    out = v.on_event(step(2, 3, "goal"))
    assert kinds(out) == ["notice", "status"]
    assert "Step 2/3: goal" in out[0].text
    st = out[1]
    assert st.key == "status" and st.replace and "step 2/3 goal" in st.title
    assert dict(st.fields)["Step"] == "2/3 goal"
    assert [decode(b.action_id).verb for b in st.buttons] == ["int", "orc", "stop"]


def test_tool_calls_fold_into_one_status_edit_per_interval() -> None:
    v, clock = make(status_every_s=10.0)
    v.on_event(step(1, 1, "work"))
    sent = []
    for i in range(50):
        clock.t += 0.5
        sent += v.on_event(Event("tool_call", f"file{i}.py", tool="Read", payload={"subagent": i % 2 == 1}))
    statuses = [m for m in sent if m.kind == "status"]
    # 25 s of tool calls at one edit per 10 s
    assert 2 <= len(statuses) <= 3
    assert "Read file49.py" in statuses[-1].text or v.due_in() is not None
    clock.t += 10
    final = v.tick()
    assert kinds(final) == ["status"] and "↳ Read file49.py" in final[0].text
    assert v.due_in() is None


def test_prose_is_gathered_then_posted_once_and_never_from_subagents_or_thinking() -> None:
    v, clock = make(prose_linger_s=5.0)
    v.on_event(step(1, 1, "work"))
    out = v.on_event(Event("text", "First I read the brief.", payload={"subagent": False, "context": 5000}))
    out += v.on_event(Event("thinking", "hmm", payload={"subagent": False}))
    out += v.on_event(Event("text", "worker chatter", payload={"subagent": True}))
    clock.t += 1
    out += v.on_event(Event("text", "Now the tests.", payload={"subagent": False}))
    assert "prose" not in kinds(out)
    assert v.due_in() == 4.0
    clock.t += 4
    flushed = v.tick()
    prose = [m for m in flushed if m.kind == "prose"]
    assert len(prose) == 1 and prose[0].text == "First I read the brief.\n\nNow the tests."
    assert not prose[0].replace  # prose never edits an older message


def test_prose_goes_out_before_a_question_card() -> None:
    v, _ = make()
    v.on_event(step(1, 3, "clarify"))
    v.on_event(Event("text", "I need to know one thing.", payload={"subagent": False}))
    out = v.on_event(asked("q1", "Which colour?", ["red", "blue"]))
    assert kinds(out) == ["prose", "ask", "status"]
    card = out[1]
    assert card.important and card.key == "ask:1-q1"
    ids = [decode(b.action_id) for b in card.buttons]
    assert [(a.verb, a.card_id, a.option) for a in ids] == [
        ("ans", "1-q1", 0), ("ans", "1-q1", 1), ("txt", "1-q1", None), ("dec", "1-q1", None)]
    assert "Waiting" in out[2].title


def test_answer_updates_the_same_card_naming_who_answered() -> None:
    v, _ = make(who=lambda u: f"<@{u}>")
    v.on_event(step(1, 1, "clarify"))
    v.on_event(asked("q1", "Which colour?", ["red", "blue"]))
    assert v.open_card("1-q1") is not None
    v.answering("1-q1", "U42")
    out = v.on_event(asked("q1", "Which colour?", ["red", "blue"], state="answered", answer="blue"))
    card = next(m for m in out if m.kind == "ask")
    assert card.key == "ask:1-q1" and card.replace and not card.buttons
    assert card.title == "✅ Answered by <@U42>" and "Answer: blue" in card.text
    assert v.open_card("1-q1") is None
    assert "Running" in next(m for m in out if m.kind == "status").title


def test_timeout_and_over_budget_outcomes_have_no_buttons() -> None:
    v, _ = make()
    out = v.on_event(asked("q1", "Anyone?", [], state="timeout"))
    out += v.on_event(asked("q2", "Again?", [], state="over_budget"))
    cards = [m for m in out if m.kind == "ask"]
    assert [c.buttons for c in cards] == [[], []]
    assert "No answer in time" in cards[0].title and "budget" in cards[1].title


def test_woken_run_names_cards_by_wake_and_a_bound_card_keeps_its_key() -> None:
    v, _ = make()
    v.on_event(step(1, 1, "clarify", woke=True, wake=2))
    old = AskCard("1-q3", "q3", "Which colour?", ["red", "blue"])
    v.bind("q1", old)
    out = v.on_event(asked("q1", "Which colour?", ["red", "blue"]))
    assert [m.key for m in out if m.kind == "ask"] == ["ask:1-q3"]
    out = v.on_event(asked("q2", "Size?", []))
    assert [m.key for m in out if m.kind == "ask"] == ["ask:2-q2"]


def test_mail_receipt_goes_from_queued_to_delivered_in_place() -> None:
    v, _ = make()
    v.expect_mail("alice")
    q = v.on_event(Event("ask", "also count bytes", payload={"kind": "mail", "state": "queued", "id": "m1",
                                                             "amended": True}))
    d = v.on_event(Event("ask", "also count bytes", payload={"kind": "mail", "state": "delivered", "id": "m1",
                                                             "amended": True}))
    rq, rd = (next(m for m in x if m.kind == "receipt") for x in (q, d))
    assert rq.key == rd.key and rd.replace
    assert "Queued" in rq.text and "alice" in rq.text and "Delivered" in rd.text and "alice" in rd.text
    assert "added to the brief" in rd.text


def test_handoff_writing_then_done_edit_one_notice_and_set_the_window() -> None:
    v, _ = make()
    near = v.on_event(Event("handoff", "near", payload={"phase": "near", "context": 130_000, "window": 200_000}))
    w = v.on_event(Event("handoff", "w", payload={"phase": "writing", "context": 152_000, "window": 200_000}))
    d = v.on_event(Event("handoff", "d", payload={"phase": "done", "context": 152_000, "window": 200_000,
                                                  "path": "notes/handoff-work.md", "degraded": False}))
    n1, n2, n3 = (next(m for m in x if m.kind == "notice") for x in (near, w, d))
    assert n1.key != n2.key and n2.key == n3.key
    assert "130.0K/200.0K" in n1.text and "notes/handoff-work.md" in n3.text
    assert "/ 200.0K" in dict(next(m for m in d if m.kind == "status").fields)["Context"]


def test_errors_and_retries_of_one_streak_share_a_notice() -> None:
    v, _ = make()
    a = v.on_event(Event("error", "API Error: 529 overloaded", payload={"synthetic": True}))
    b = v.on_event(Event("retry", "retrying in 4s", payload={"step": "work", "attempt": 2}))
    c = v.on_event(Event("retry", "retrying in 8s", payload={"step": "work", "attempt": 3}))
    keys = {m.key for x in (a, b, c) for m in x if m.kind == "notice"}
    assert len(keys) == 1
    assert "attempt 3" in c[0].text and "529" in c[0].text
    v.on_event(Event("tool_call", "x", tool="Read", payload={"subagent": False}))
    e = v.on_event(Event("retry", "again", payload={}))
    assert e[0].key not in keys


def test_unknown_kinds_and_bad_payloads_are_tolerated() -> None:
    v, _ = make()
    assert kinds(v.on_event(Event("brand_new_kind", "x"))) == ["status"]  # only the first status card
    assert v.on_event(Event("brand_new_kind", "y")) == []
    assert all(m.kind == "status" for m in v.on_event(Event("system", "init", payload=None)))  # type: ignore[arg-type]
    assert v.on_event(Event("result", "success", payload={"cost_usd": "n/a"})) is not None
    assert v.errors == 0


def test_finish_closes_open_cards_and_posts_an_important_summary() -> None:
    v, clock = make()
    v.on_event(step(3, 3, "work"))
    v.on_event(Event("result", "success", payload={"cost_usd": 0.25, "subagent": False}))
    v.on_event(asked("q1", "Still there?", ["yes"]))
    v.on_event(Event("text", "All done.", payload={"subagent": False}))
    clock.t += 125
    out = v.finish(RunOutcome("failed", result="partial", cost_usd=0.5, duration_s=125, failed_at="work", steps=3))
    assert kinds(out) == ["prose", "ask", "status", "summary"]
    assert "Closed" in out[1].title and not out[1].buttons
    assert out[2].buttons == [] and "Failed" in out[2].title
    s = out[3]
    assert s.important and "failed" in s.title.lower() and "work" in s.title
    assert dict(s.fields) == {"Cost": "$0.5000", "Duration": "2m 05s", "Steps": "3", "Failed step": "work"}


def test_a_parked_approval_says_so_on_the_status_card() -> None:
    for kind, label in (("approval", "Parked — waiting for approval"), ("", "Parked — waiting for an answer")):
        v, _ = make()
        v.on_event(step(1, 1, "work"))
        v.on_event(Event("ask", "Run Bash?", payload={"id": "q1", "options": ["Allow once"], "state": "asked",
                                                      "answer": "", "remaining": -1, "asked_at": 0.0, "kind": kind}))
        out = v.on_event(Event("system", "parked", payload={"subtype": "parked", "ask_id": "q1"}))
        titles = [m.title for m in out if m.key == "status"]
        assert titles and titles[-1].startswith(f"🅿️ {label}"), titles
        assert v.status_card.state in ("parked", "parked_approving")
        back = v.on_event(Event("system", "unparked", payload={"subtype": "unparked", "ask_id": "q1"}))
        assert [m.title for m in back if m.key == "status"][-1].startswith("🔐" if kind else "❓")
