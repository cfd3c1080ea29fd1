"""Render is a pure mapping Event → terminal lines; these tests pin that mapping."""

from __future__ import annotations

import io

from adapters.terminal import Render, clean, pick_option
from flower_core import Event


def texts(render: Render, events: list[Event]) -> list[str]:
    out: list[str] = []
    for ev in events:
        out += [text for text, _tone in render.lines(ev)]
    return out


def test_a_run_renders_steps_prose_tools_and_hides_subagent_chatter() -> None:
    events = [
        Event("step", "work", payload={"index": 3, "total": 3, "resumed": False}),
        Event("prompt", "the brief", payload={"subagent": False}),
        Event("thinking", "hmm", payload={"subagent": False}),
        Event("text", "Reading the notes.", payload={"subagent": False, "context": 4200}),
        Event("tool_call", "notes.md", tool="Read", payload={"id": "t1", "input": {}, "subagent": False}),
        Event("tool_result", "file body", payload={"tool_use_id": "t1", "is_error": False}),
        Event("text", "subagent musing", payload={"subagent": True, "parent_tool_use_id": "t9", "context": 99999}),
        Event("tool_call", "ls -la", tool="Bash", payload={"subagent": True}),
        Event("tool_call", "", tool="mcp__human__inbox", payload={"subagent": False}),
        Event("tool_call", '{"question": "Q?"}', tool="mcp__human__ask", payload={"subagent": False}),
        Event("tool_result", "no such file", payload={"tool_use_id": "t2", "is_error": True}),
        Event("system", "init", payload={}),
        Event("task", "TaskStartedMessage"),
    ]
    r = Render(color=False)
    assert texts(r, events) == [
        "",
        "=== work (3/3) ===",
        "Reading the notes.",
        "  [Read] notes.md",
        "  | [Bash] ls -la",
        "  [human.inbox]",
        "  x tool failed: no such file",
    ]


def test_a_question_lists_numbered_options_and_how_to_answer_then_its_outcome() -> None:
    r = Render(color=False)
    asked = Event("ask", "Which greeting?", payload={"id": "q1", "options": ["Hello", "Olá"], "state": "asked",
                                                     "answer": "", "remaining": 2, "asked_at": 0.0})
    answered = Event("ask", "Which greeting?", payload={"id": "q1", "options": ["Hello", "Olá"],
                                                        "state": "answered", "answer": "Olá", "remaining": 2})
    assert texts(r, [asked, answered]) == [
        "  ? Which greeting?",
        "     1) Hello",
        "     2) Olá",
        "     (type 1-2 or your own answer, then Enter; Enter alone skips; 2 more questions allowed)",
        "  + answered: Olá",
    ]


def test_outcomes_of_questions_never_shown_name_the_question() -> None:
    r = Render(color=False)
    unattended = Event("ask", "Tabs or spaces?", payload={"id": "q2", "state": "timeout", "remaining": -1})
    [line] = texts(r, [unattended])
    assert "nobody answered (Tabs or spaces?)" in line
    outcomes = {state: texts(Render(color=False), [Event("ask", "Q", payload={"id": "q", "state": state})])[0]
                for state in ("declined", "over_budget", "invalid", "cancelled")}
    assert outcomes["declined"].startswith("  . skipped")
    assert outcomes["over_budget"].startswith("  ! question quota used up")
    assert outcomes["invalid"].startswith("  x invalid question")
    assert outcomes["cancelled"].startswith("  . question withdrawn")


def test_unlimited_quota_is_not_mentioned() -> None:
    r = Render(color=False)
    asked = Event("ask", "Go?", payload={"id": "q1", "options": [], "state": "asked", "remaining": -1})
    assert texts(r, [asked])[-1] == "     (type your answer, then Enter; Enter alone skips)"


def test_mail_receipts_queued_then_delivered() -> None:
    r = Render(color=False)
    queued = Event("ask", "also count bytes", payload={"kind": "mail", "state": "queued", "id": "m1", "amended": True})
    delivered = Event("ask", "also count bytes", payload={"kind": "mail", "state": "delivered", "id": "m1"})
    first, second = texts(r, [queued, delivered])
    assert first.startswith("  + queued: also count bytes")
    assert second == "  + delivered: also count bytes"


def test_notices_for_handoff_retry_error_reset_and_result() -> None:
    r = Render(color=False)
    events = [
        Event("retry", "server said 529, resuming (attempt 2)", payload={"step": "work", "attempt": 2}),
        Event("handoff", "context 950.0K/1000K", payload={"phase": "near", "step": "work", "at": 950000}),
        Event("handoff", "new session", payload={"phase": "done", "path": "/w/.flower/notes/handoff.md",
                                                 "degraded": True, "sections": {}}),
        Event("error", "API Error: 500 Internal server error", payload={"synthetic": True}),
        Event("reset", "compact(manual) 167000 → 42000 tokens", payload={"trigger": "manual"}),
        Event("result", "success", payload={"num_turns": 3, "cost_usd": 0.0123, "is_error": False}),
    ]
    assert texts(r, events) == [
        "  ~ retry: server said 529, resuming (attempt 2)",
        "  # handoff/near: context 950.0K/1000K",
        "  # handoff/done: new session",
        "  <- handoff document: /w/.flower/notes/handoff.md",
        "  x the handoff document could not be written; a fallback was used",
        "  x API Error: 500 Internal server error",
        "  # context reset: compact(manual) 167000 → 42000 tokens",
        "  - success · 3 turns · $0.0123",
    ]


def test_unknown_kinds_get_one_dim_line_and_never_crash() -> None:
    r = Render(color=False)
    odd = Event("telepathy", "a brand new kind", payload={"whatever": object()})  # type: ignore[arg-type]
    weird_payload = Event("step", "s", payload=None)  # type: ignore[arg-type]
    assert r.lines(odd) == [("  · telepathy: a brand new kind", "dim")]
    assert r.lines(Event("unknown", "StreamEvent")) == [("  · unknown: StreamEvent", "dim")]
    assert texts(r, [weird_payload])[-1] == "=== s (?/?) ==="
    out = io.StringIO()
    Render(out, color=False)(odd)
    assert out.getvalue() == "  · telepathy: a brand new kind\n"


def test_the_sink_swallows_its_own_failures() -> None:
    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            raise OSError("terminal went away")

    r = Render(Broken(), color=False)
    r(Event("text", "hello", payload={}))  # must not raise
    assert isinstance(r.ui_errors[0], OSError)


def test_model_text_cannot_drive_the_terminal() -> None:
    assert clean("ok\x1b[2J\x1b[H done\x07") == "ok done"
    assert clean("line1\n\tline2") == "line1\n\tline2"
    r = Render(color=False)
    assert texts(r, [Event("text", "\x1b]0;title\x07hi", payload={})]) == ["hi"]


def test_colour_only_when_asked_for() -> None:
    plain, coloured = io.StringIO(), io.StringIO()
    Render(plain)(Event("retry", "again"))  # a StringIO is not a TTY: plain
    Render(coloured, color=True)(Event("retry", "again"))
    assert "\x1b[" not in plain.getvalue()
    assert coloured.getvalue() == "\x1b[33m  ~ retry: again\x1b[0m\n"


def test_summary_lines() -> None:
    r = Render(color=False)
    assert r.summary_lines(failed_at=None, cost_usd=0.5, duration_s=75)[-1][0] == "+ finished · cost $0.5000 · 1:15"
    assert r.summary_lines(failed_at="work", cost_usd=0, duration_s=3700)[-1][0] == \
        "x failed at step 'work' · cost $0.0000 · 1:01:40"
    assert r.summary_lines(failed_at=None, cost_usd=0, duration_s=1, interrupted=True)[-1][0].startswith("! stopped")


def test_interrupt_warning_says_what_is_lost_before_anything_happens() -> None:
    lines = [t for t, _ in Render.interrupt_lines(pending=1)]
    assert "a subagent in flight loses its half-done work" in lines[0]
    assert "Ctrl-C again = quit" in lines[1]
    assert "1 question(s) still waiting" in lines[2]


def test_pick_option() -> None:
    options = ["Hello", "Olá", "안녕하세요"]
    assert pick_option("3", options) == "안녕하세요"
    assert pick_option("4", options) == "4"
    assert pick_option("0", options) == "0"
    assert pick_option("2", []) == "2"
    assert pick_option("tabs please", options) == "tabs please"
