"""The payload readers (flower_core/payloads.py): what the writers write reads back by name, and a
malformed payload reads as defaults, never as an exception."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, get_args

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from adapters.view.approval_card import DIFF_KEYS
from flower_core import payloads
from flower_core.events import EVENT_KINDS, Event, EventKind, normalize
from flower_core.human import Ask, HumanChannel, Mail
from flower_core.human.ask import AskState
from flower_core.payloads import (
    ASK_FACT_KEYS,
    AskPayload,
    BudgetFigures,
    BudgetPayload,
    CutOffCall,
    CutOffPayload,
    ErrorPayload,
    HandoffPayload,
    InputNotePayload,
    MailPayload,
    ResetPayload,
    ResultPayload,
    RetryPayload,
    SharePayload,
    StepPayload,
    SystemPayload,
    TaskPayload,
    ThreadPayload,
    ToolCallPayload,
    ToolResultPayload,
)
from flower_core.runtime.budget import Budget
from flower_core.runtime.parked import ParkRecord
from flower_core.runtime.parking import _event as park_event
from flower_core.runtime.resume import cut_off_event
from flower_core.runtime.transcript import CutOff
from flower_core.workflow import Step, Workflow

READERS: list[type[Any]] = [getattr(payloads, name) for name in payloads.__all__
                            if isinstance(getattr(payloads, name), type)
                            and issubclass(getattr(payloads, name), payloads._Reader)]
# Fields a reader fills itself (nested readers), not from the key of their name.
NESTED = {("AskPayload", "figures"), ("AskPayload", "call"), ("AskPayload", "facts"), ("CutOffPayload", "calls")}
USAGE = {"input_tokens": 1000, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 34}


def only(events: list[Event]) -> Event:
    assert len(events) == 1, events
    return events[0]


# ---- one spelling -----------------------------------------------------------------------------------------------
def test_the_kinds_are_spelled_once() -> None:
    assert EVENT_KINDS == get_args(EventKind) and len(EVENT_KINDS) == len(set(EVENT_KINDS)) == 15


def test_every_field_is_read_from_its_key_or_by_its_reader() -> None:
    assert len(READERS) == 21
    for reader in READERS:
        planned = {name for name, _ in payloads._plan(reader)}
        rest = {f.name for f in dataclasses.fields(reader)} - planned
        assert {(reader.__name__, name) for name in rest} <= NESTED, (reader.__name__, rest)


def test_the_ask_facts_hold_what_the_approval_card_reads() -> None:
    assert set(DIFF_KEYS) <= set(ASK_FACT_KEYS)


# ---- malformed payloads read as defaults ------------------------------------------------------------------------
class Weird:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


HOSTILE: dict[str, Any] = {"none": None, "text": "text", "int": 7, "list": [1, 2], "weird": Weird(),
                           "dict": {"nested": Weird()}, "nan": math.nan, "inf": math.inf, "bool": True}


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.__name__)
def test_a_payload_that_is_no_dict_reads_as_defaults(reader: type[Any]) -> None:
    for junk in (None, "payload", ["a"], 3, Weird()):
        assert reader.of(Event("ask", payload=junk)) == reader()
    assert reader.of(Event("ask")) == reader()


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("junk", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_key_can_be_hostile(reader: type[Any], junk: Any) -> None:
    keys = {f.name for f in dataclasses.fields(reader)} | set(ASK_FACT_KEYS) | {"calls", "input"}
    got = reader.of(Event("system", payload=dict.fromkeys(keys, junk)))  # never raises
    assert isinstance(got, reader)
    for f in dataclasses.fields(got):
        value = getattr(got, f.name)
        if f.type == "str":
            assert type(value) is str
        if f.type in ("int", "int | None"):
            assert value is None or type(value) is int
        if f.type == "float | None":
            assert value is None or (type(value) is float and math.isfinite(value))


def test_wrong_types_become_defaults_and_numbers_become_what_the_field_holds() -> None:
    ask = AskPayload.of(Event("ask", payload={
        "id": 7, "state": AskState.ANSWERED, "options": ["a", 2, None, {"x": 1}], "answer": None, "remaining": "3",
        "asked_at": True, "restored": 1, "kind": ["budget"], "total": "12", "cap": 2, "input": "ls"}))
    assert ask.id == "7" and ask.state == "answered" and type(ask.state) is str
    assert ask.options == ("a", "2") and ask.answer == "" and ask.remaining == -1
    assert ask.asked_at is None and ask.restored is True and ask.kind == "" and ask.is_question
    assert ask.figures == BudgetFigures(cap=2.0) and ask.call.input == {}
    assert ask.facts == {"total": "12", "cap": 2, "input": "ls"}  # as written: the card keeps them
    step = StepPayload.of(Event("step", payload={"index": 2, "total": "5", "wake": False, "round": 2.0}))
    assert (step.index, step.total, step.wake, step.round, step.position) == (2, None, 0, 2, "2/?")
    assert StepPayload().position == "?/?"
    assert ResultPayload.of(Event("result", payload={"cost_usd": math.nan, "num_turns": "3"})) == ResultPayload()
    cut = CutOffPayload.of(Event("system", payload={"calls": [{"id": "c1", "tool": "Bash"}, "junk", None]}))
    assert cut.calls == (CutOffCall(id="c1", tool="Bash"),)
    assert CutOffPayload.of(Event("system", payload={"calls": "c1"})).calls == ()


# ---- what the writers write reads back --------------------------------------------------------------------------
def test_normalized_events_read_back() -> None:
    text = only(normalize(AssistantMessage([TextBlock("hi")], "m", parent_tool_use_id="toolu_p", usage=USAGE)))
    assert ThreadPayload.of(text) == ThreadPayload(subagent=True, parent_tool_use_id="toolu_p", context=1234)
    call = only(normalize(AssistantMessage([ToolUseBlock("toolu_1", "Bash", {"command": "ls"})], "m", usage=USAGE)))
    assert ToolCallPayload.of(call) == ToolCallPayload(context=1234, id="toolu_1", input={"command": "ls"})
    done = only(normalize(UserMessage([ToolResultBlock("toolu_1", "boom", True)])))
    assert ToolResultPayload.of(done) == ToolResultPayload(tool_use_id="toolu_1", is_error=True)
    error = only(normalize(AssistantMessage([TextBlock("API Error: 529 overloaded")], "<synthetic>")))
    assert ErrorPayload.of(error) == ErrorPayload(synthetic=True, status=529)
    result = only(normalize(ResultMessage("success", 5, 4, False, 3, "sess-1", total_cost_usd=0.25,
                                          stop_reason="end_turn")))
    assert ResultPayload.of(result) == ResultPayload("sess-1", 0.25, 3, False, "end_turn")
    reset = only(normalize(SystemMessage("compact_boundary", {
        "compact_metadata": {"trigger": "auto", "pre_tokens": 9000, "post_tokens": 800}})))
    assert ResetPayload.of(reset) == ResetPayload("auto", 9000, 800, False, "compact_boundary")
    init = only(normalize(SystemMessage("init", {"subtype": "init", "session_id": "sess-2"})))
    assert SystemPayload.of(init) == SystemPayload("init", "sess-2")
    task = only(normalize(TaskNotificationMessage(subtype="task_notification", data={}, task_id="t1",
                                                  status="completed", output_file="/o", summary="ok", uuid="u",
                                                  session_id="s")))
    assert TaskPayload.of(task) == TaskPayload("TaskNotificationMessage", "t1", "completed")


def test_ask_events_read_back() -> None:
    asked = Ask(id="q1", question="Colour?", options=["red", "blue"], asked_at=100.0, restored=True).event(2)
    assert AskPayload.of(asked) == AskPayload(id="q1", state="asked", options=("red", "blue"), remaining=2,
                                              asked_at=100.0, restored=True)
    budget = Ask(id="q2", question="More?", kind="budget", state=AskState.ANSWERED, answer="+$2",
                 facts={"spent": 1.0, "aside": 0.5, "total": 1.5, "cap": 1.5, "share": 1.0, "step": "work"}).event()
    read = AskPayload.of(budget)
    assert (read.kind, read.state, read.answer, read.remaining) == ("budget", "answered", "+$2", -1)
    assert read.figures == BudgetFigures(1.0, 0.5, 1.5, 1.5, 1.0, "work")
    assert read.facts == {"spent": 1.0, "aside": 0.5, "total": 1.5, "cap": 1.5, "step": "work"}
    facts = {"tool": "Edit", "input": {"file_path": "a.py"}, "diff_file": "/d/1-a.py.diff", "diff_lines": 9}
    approval = AskPayload.of(Ask(id="q3", question="Edit a.py?", kind="approval", facts=facts).event())
    assert approval.call.tool == "Edit" and approval.call.input == {"file_path": "a.py"}
    assert approval.facts == facts and approval.is_question
    mail = Mail(id="m1", text="also this", state="delivered", amended="/w/brief.md").event()
    assert AskPayload.of(mail).kind == "mail" and not AskPayload.of(mail).is_question
    assert MailPayload.of(mail) == MailPayload("m1", "delivered", True)


def test_a_share_reads_back(tmp_path: Path) -> None:
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append)
    channel.share_root = tmp_path
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text("12345")
    channel.share_file("out/report.md", "the report")
    read = SharePayload.of(only(events))
    assert AskPayload.of(events[0]).kind == "share" and not AskPayload.of(events[0]).is_question
    assert (read.path, read.name, read.size, read.note) == ("out/report.md", "report.md", 5, "the report")
    assert read.file == str((tmp_path / "out" / "report.md").resolve()) and read.id.startswith("s")


def test_the_runtimes_events_read_back() -> None:
    events: list[Event] = []
    budget = Budget(2.0, on_event=events.append)
    budget.book(0.5, aside=True, step="work")
    spent = BudgetPayload.of(only(events))
    assert SystemPayload.of(events[0]).subtype == "budget"
    assert spent == BudgetPayload(0.0, 0.5, 0.5, 2.0, 0.25, "work", phase="spent", source="aside")

    cut = cut_off_event([CutOff("toolu_1", "Bash", {"command": "make"}, {}), CutOff("toolu_2", "Read", {}, {})],
                        step="work", session_id="sess-1")
    assert CutOffPayload.of(cut) == CutOffPayload("work", "sess-1", (
        CutOffCall("toolu_1", "Bash", False, "make"), CutOffCall("toolu_2", "Read", True, "")))

    record = ParkRecord("sess-1", "toolu_1", "work", "Colour?")
    assert SystemPayload.of(park_event("unparked", record, "q1", restored=True, outcome="answered")) == \
        SystemPayload("unparked", "sess-1")

    steps: list[Event] = []
    wf = Workflow([Step("work", None, "go")])
    wf.round = 2
    wf._emit(steps.append, wf.steps[0], 1, 3, resumed=True, woke=False, reused=False)
    assert StepPayload.of(only(steps)) == StepPayload(1, 3, True, False, False, wf.wake, 2)


def test_the_other_readers_read_their_keys() -> None:
    """Writers outside flower_core's pure functions (the runtime's loop, the transport's applier): their keys."""
    retry = Event("retry", "work: retrying", payload={"step": "work", "attempt": 2, "max_attempts": 4,
                                                      "error": "529", "kind": "transient", "delay_s": 1.5})
    assert RetryPayload.of(retry) == RetryPayload("work", 2, 4, "529", False)
    done = Event("handoff", "handed off", payload={"phase": "done", "step": "work", "context": 180_000,
                                                   "window": 200_000, "degraded": True, "path": None,
                                                   "sections": [], "retired": "s1"})
    assert HandoffPayload.of(done) == HandoffPayload("done", "work", 180_000, 200_000, None, True, "")
    note = Event("system", "answer_to_inbox", payload={"subtype": "answer_to_inbox", "card": "c1", "mail": "m1",
                                                       "question": "Q?", "answer": "A", "user": "U1"})
    assert InputNotePayload.of(note) == InputNotePayload("c1", "m1", "Q?", "A", "U1")
