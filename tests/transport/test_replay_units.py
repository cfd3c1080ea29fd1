"""Pure parts of restart recovery: what a stored session says reached the model (transcript.py), and how
a new holder sorts the inputs the last one left unsettled (replay.py)."""

from __future__ import annotations

from typing import Any

from adapters.transport.intents import Intent, Op, mail_id_for
from adapters.transport.replay import CLOCK_SKEW_S, plan
from flower_core.runtime.transcript import (
    CUT_OFF_UNSAFE,
    SessionFacts,
    ask_calls,
    cut_off_calls,
    human_inputs,
)

ASK = "mcp__human__ask"


def user(*blocks: Any, at: str = "2026-12-01T10:00:00.000Z") -> dict[str, Any]:
    return {"type": "user", "timestamp": at, "uuid": f"u{len(blocks)}{at}", "message": {"role": "user",
                                                                                        "content": list(blocks)}}


def assistant(*blocks: Any, mid: str = "msg_1") -> dict[str, Any]:
    return {"type": "assistant", "uuid": f"a-{mid}-{len(blocks)}", "message": {"id": mid, "content": list(blocks)}}


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def result(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": [{"type": "text", "text": text}]}


def test_transcript_facts_name_inputs_questions_and_cut_off_calls() -> None:
    entries = [
        user({"type": "text", "text": "build it"}),
        assistant(call("t1", ASK, question="Tabs?")),
        user(result("t1", "tabs")),
        assistant({"type": "text", "text": "Doing two things."}, mid="msg_2"),
        assistant(call("t2", "Bash", command="make"), mid="msg_2"),
        assistant(call("t3", "Read", file_path="a"), mid="msg_2"),
        user(result("t3", "contents")),  # one of two parallel calls answered before the process died
        {"type": "attachment"}, {"type": "user", "isSidechain": True, "message": {"content": "brief"}},
    ]
    assert [i.text for i in human_inputs(entries)] == ["build it", "tabs", "contents"]
    asks = ask_calls(entries, ASK)
    assert [(a.question, a.result) for a in asks] == [("Tabs?", "tabs")]
    assert [(c.call_id, c.tool, c.safe) for c in cut_off_calls(entries)] == [("t2", "Bash", False)]
    assert cut_off_calls(entries[:3]) == []  # the last assistant message's calls are all answered


def facts(*entries: dict[str, Any]) -> SessionFacts:
    return SessionFacts(human_inputs(list(entries)), ask_calls(list(entries), ASK))


def test_answers_go_to_the_open_question_or_are_known_delivered_or_become_mail() -> None:
    f = facts(assistant(call("t1", ASK, question="Tabs?")), user(result("t1", "tabs")),
              assistant(call("t2", ASK, question="Size?"), mid="m2"))
    delivered = Intent(Op.ANSWER, "tabs", question="Tabs?")
    waiting = Intent(Op.ANSWER, "L", question="  size? ")
    lost = Intent(Op.ANSWER, "blue", question="Colour?")  # asked, shown, answered: never stored
    declined = Intent(Op.DECLINE, "", question="Colour?")
    budget = Intent(Op.ANSWER, "+$5", question="Budget reached…", kind="budget")
    todo = plan([delivered, waiting, lost, declined, budget], f)
    assert todo.delivered == [delivered] and todo.waiting == [waiting] and todo.to_inbox == [lost]
    assert todo.moot == [declined, budget] and todo.stop is None


def test_an_approval_decided_between_two_holders_waits_for_the_approval_restored_from_its_park_record() -> None:
    """Its Bash call is no question in the session (facts know nothing of it): the new holder asks it again
    from the park record, and the kept click decides it there (the person is not asked to click again)."""
    allow = Intent(Op.ANSWER, "Allow once", question="🔐 Run Bash?", kind="approval")
    deny = Intent(Op.DECLINE, "not that", question="🔐 Run Bash?", kind="approval")
    todo = plan([allow, deny], facts())
    assert todo.waiting == [allow, deny] and not todo.moot and not todo.to_inbox


def test_a_call_closed_by_a_cut_is_not_a_delivered_answer() -> None:
    f = facts(assistant(call("t1", ASK, question="Tabs?")), user(result("t1", CUT_OFF_UNSAFE)))
    assert plan([Intent(Op.ANSWER, "tabs", question="Tabs?")], f).to_inbox


def test_an_answer_an_earlier_holder_sent_to_the_inbox_is_not_sent_again() -> None:
    """Sent as mail by one holder (its question was never stored) and read in a prompt; that holder died
    before settling it: the next one must not mail it again, even when the question is asked anew."""
    answer = Intent(Op.ANSWER, "left", question="Which side?")
    read = {"type": "text", "text": f"Continue.\n\n[{mail_id_for(answer)}] The human's answer to …: left"}
    f = facts(user(read), assistant(call("t2", ASK, question="Which side?"), mid="m2"))
    todo = plan([answer], f)
    assert todo.delivered == [answer] and not todo.to_inbox and not todo.waiting
    assert plan([answer], facts(assistant(call("t2", ASK, question="Which side?")))).waiting == [answer]


def test_mail_is_known_by_its_id_and_interrupts_by_their_words_since_they_were_given() -> None:
    seen, unseen = Intent(Op.SEND, "a"), Intent(Op.SEND, "a")  # the same words twice: the ids tell them apart
    f = facts(user(result("t9", f"inbox:\n\n[{mail_id_for(seen)}] a")))
    todo = plan([seen, unseen], f)
    assert todo.delivered == [seen] and todo.mail == [unseen]

    at = 1796100000.0  # 2026-12-01T...; prompts before the words were said do not count
    early = user({"type": "text", "text": "use M"}, at="2026-11-30T10:00:00.000Z")
    late = user({"type": "text", "text": "use M\n\nnote"}, at="2099-01-01T00:00:00.000Z")
    first, second = Intent(Op.INTERRUPT, "use M", at=at), Intent(Op.INTERRUPT, "use M", at=at + 1)
    empty = Intent(Op.INTERRUPT, "")  # "stop and go on": the restart did that already
    todo = plan([first, second, empty], facts(early, late))
    assert todo.delivered == [empty, first] and todo.words == [second]
    assert CLOCK_SKEW_S < 60


def test_a_stop_wins_and_oracle_questions_are_asked_again() -> None:
    stop, orc = Intent(Op.STOP), Intent(Op.ORACLE, "how far?")
    todo = plan([Intent(Op.SEND, "x"), stop, orc], SessionFacts())
    assert todo.stop is stop and todo.oracle == [orc]


def test_intents_travel_as_json() -> None:
    intent = Intent(Op.ANSWER, "é", card="1-q1", ask="q1", question="Q?", user="ana", kind="budget")
    assert Intent.from_json(intent.to_json()) == intent
