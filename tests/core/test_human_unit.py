"""HumanChannel without the CLI: the bookkeeping, the limits and the cross-thread settlement rules."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from flower_core.events import Event
from flower_core.human import MAX_TEXT_CHARS, TIMEOUT, Ask, HumanChannel, Mail
from flower_core.human.texts import MAX_OPTIONS, cap


async def started_ask(ch: HumanChannel, question: str = "Q?") -> tuple[asyncio.Task[str], Ask]:
    """Start ch.ask() in a task and return it once the question is pending."""
    task = asyncio.create_task(ch.ask(question))
    while not ch.pending():  # the ask registers before its first await; one loop turn suffices
        await asyncio.sleep(0)
    return task, ch.pending()[0]


def test_ask_event_shape_and_waited_s() -> None:
    a = Ask(id="q1", question="Why?", options=["a", "b"], asked_at=100.0)
    a.settled_at = 103.26
    ev = a.event(remaining=4)
    assert (ev.kind, ev.text, ev.raw) == ("ask", "Why?", a)
    assert ev.payload == {"id": "q1", "options": ["a", "b"], "state": "asked", "answer": "",
                          "remaining": 4, "asked_at": 100.0}
    assert a.waited_s == 3.3


def test_mail_event_has_no_options_or_remaining() -> None:
    ev = Mail(id="m2", text="hi", amended="/w/notes/brief.md").event()
    assert ev.payload == {"kind": "mail", "state": "queued", "id": "m2", "amended": "/w/notes/brief.md"}


def test_cap_marks_what_was_cut() -> None:
    assert cap("abc", 5) == "abc"
    out = cap("x" * 30, 10)
    assert out.startswith("x" * 10) and "20" in out and len(out) < 40


def test_remaining_is_minus_one_when_unlimited() -> None:
    assert HumanChannel().remaining == -1
    assert HumanChannel(max_asks=0).remaining == 0
    assert HumanChannel(max_asks=3).remaining == 3


def test_unknown_ids_and_empty_mail() -> None:
    ch = HumanChannel()
    assert ch.answer("q9", "x") is False and ch.decline("nope") is False
    assert ch.send("   ") is None and ch.mail == []
    assert ch.amend("text") is False  # no amend_path


async def test_double_answer_returns_false_and_changes_nothing() -> None:
    events: list[Event] = []
    ch = HumanChannel(on_event=events.append)
    task, ask = await started_ask(ch)
    assert ch.answer(ask.id, "first") is True
    assert ch.answer(ask.id, "second") is False
    assert ch.decline(ask.id, "late") is False
    assert (await task).reply == "first"
    assert (ask.state, ask.answer) == ("answered", "first")
    assert [e.payload["state"] for e in events] == ["asked", "answered"]


async def test_many_threads_answer_at_once_only_one_wins() -> None:
    events: list[Event] = []
    ch = HumanChannel(on_event=events.append)
    task, ask = await started_ask(ch)
    n = 16
    barrier = threading.Barrier(n)
    wins: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def racer(i: int) -> None:
        barrier.wait()
        ok = ch.answer(ask.id, f"answer {i}") if i % 2 else ch.decline(ask.id, f"reason {i}")
        with lock:
            wins.append((i, ok))

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    def join_all() -> None:
        for t in threads:
            t.join()

    await asyncio.to_thread(join_all)
    reply = (await asyncio.wait_for(task, 5)).reply
    winners = [i for i, ok in wins if ok]
    assert len(wins) == n and len(winners) == 1
    w = winners[0]
    assert ask.answer == (f"answer {w}" if w % 2 else f"reason {w}")
    assert f"{w}" in reply
    assert [e.payload["state"] for e in events].count("asked") == 1
    assert len(events) == 2 and events[1].payload["state"] in ("answered", "declined")


async def test_timeout_zero_never_enters_pending() -> None:
    events: list[Event] = []
    ch = HumanChannel(on_event=events.append, timeout_s=-1)
    assert (await ch.ask("Anyone?")).reply == TIMEOUT
    assert [e.payload["state"] for e in events] == ["timeout"] and ch.pending() == []
    assert ch.answer("q1", "late") is False


async def test_over_budget_after_quota_and_invalid_does_not_count() -> None:
    ch = HumanChannel(max_asks=1, timeout_s=0, over_budget_text="NO MORE")
    assert "提问无效" in (await ch.ask("")).reply
    assert "提问无效" in (await ch.ask("pick", ["a", "a"])).reply
    assert "提问无效" in (await ch.ask("pick", ["x"] * (MAX_OPTIONS + 1))).reply
    assert ch.remaining == 1
    assert (await ch.ask("real?")).reply == TIMEOUT
    assert (await ch.ask("again?")).reply == "NO MORE"
    assert [a.state for a in ch.asks] == ["invalid", "invalid", "invalid", "timeout", "over_budget"]
    assert [a.id for a in ch.asks] == ["q1", "q2", "q3", "q4", "q5"] and ch.remaining == 0


async def test_oversize_question_and_answer_are_capped() -> None:
    ch = HumanChannel()
    task = asyncio.create_task(ch.ask("Q" * (MAX_TEXT_CHARS + 5)))
    while not ch.pending():
        await asyncio.sleep(0)
    ask = ch.pending()[0]
    assert len(ask.question) < MAX_TEXT_CHARS + 100 and ask.question.startswith("Q" * 100)
    assert ch.answer(ask.id, "A" * (MAX_TEXT_CHARS * 2))
    reply = (await task).reply
    assert len(reply) < MAX_TEXT_CHARS + 100 and str(MAX_TEXT_CHARS) in reply


async def test_next_ask_skips_settled_and_times_out() -> None:
    ch = HumanChannel()
    assert await ch.next_ask(timeout=0.01) is None
    t1, a1 = await started_ask(ch, "one")
    assert ch.answer(a1.id, "done")  # settled before anyone pulled it
    await t1
    t2 = asyncio.create_task(ch.ask("two"))
    pulled = await asyncio.wait_for(ch.next_ask(), 5)
    assert pulled is not None and pulled.question == "two"
    assert await ch.next_ask(timeout=0.01) is None  # already pulled
    ch.decline(pulled.id)
    await t2


async def test_cancelled_ask_leaves_pending_and_reports_it() -> None:
    events: list[Event] = []
    ch = HumanChannel(on_event=events.append)
    task, ask = await started_ask(ch)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ask.state == "cancelled" and ch.pending() == []
    assert ch.answer(ask.id, "too late") is False
    assert events[-1].payload["state"] == "cancelled"


def test_amend_appends_with_a_dated_heading(tmp_path: Path) -> None:
    brief = tmp_path / "deep" / "brief.md"
    ch = HumanChannel(amend_path=brief)
    assert ch.send("first change") is not None
    assert ch.amend("second change", label="later") is True
    text = brief.read_text(encoding="utf-8")
    assert text.index("first change") < text.index("## later") < text.index("second change")
    assert "## 运行中补充" in text and text.count("## ") == 2


def test_transcript_lists_each_question() -> None:
    ch = HumanChannel()
    assert "问答记录" in ch.transcript()
    ch.asks.append(Ask(id="q1", question="Colour?", options=["red"], state="answered", answer="red"))
    md = ch.transcript()
    assert "q1" in md and "Colour?" in md and "**答:** red" in md
