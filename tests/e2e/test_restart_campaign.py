"""Issue 18's restart campaign, bounded for the suite: about 20 random kills of a real `flower-bot web`
process driven only through its HTTP API, against the model double that never re-asks after a restart.

Done when: no accepted input is lost or duplicated, no run is left stuck, every accepted interrupt
reaches the model (and event seq numbers never step back over the WebSocket). Issue 32 adds: each accepted
input is the input of exactly one model turn (0 only in history, 0 twice), asserted once
`EVERY_INPUT_AS_ONE_TURN` (tests/support/campaign/turns.py) is flipped on. The plan of kills comes
from a fixed seed; FLOWER_CAMPAIGN_SEED picks another. On failure the whole table is printed, and
`<tmp_path>/evidence.json` holds what it was counted from.

The count itself (tests/support/campaign/tally.py) is pure, and checked first against hand-made requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flower_core.devmodel import RecordedRequest
from tests.support.campaign import Settings, run_campaign
from tests.support.campaign.ledger import Accepted
from tests.support.campaign.script import Script
from tests.support.campaign.tally import tally
from tests.support.campaign.turns import EVERY_INPUT_AS_ONE_TURN, HISTORY, ONCE, TWICE, Reach, RunView, shape

SCRIPT = Script.load()
NO_RESPONSE = {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}  # the CLI's


def request(session: str, at: float, *messages: dict[str, Any], turn: int = 1, served: str = "turn",
            reply: tuple[str, ...] = (), said: str = "said by the model: ansr-000000000001") -> RecordedRequest:
    """A request as the double records it; `reply` and `said`: the tool_use ids and the text it served."""
    body = {"messages": list(messages), "metadata": {"user_id": json.dumps({"session_id": session})}}
    return RecordedRequest(path="/v1/messages", body=body, turn=turn, served=served, received_at=at,
                           reply_text=said, reply_tool_ids=reply)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def called(tool_id: str, what: str = "said by the model: ansr-000000000001") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": what},
                                             {"type": "tool_use", "id": tool_id, "name": "x", "input": {}}]}


def result(tool_id: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                         "content": [{"type": "text", "text": text}]}]}


def test_the_count_reads_the_last_request_of_each_session_and_only_the_human_side() -> None:
    task = user("Campaign run task-aaaaaaaaaaaa")
    accepted = [Accepted("task", "r1", "task-aaaaaaaaaaaa", 0.0),
                Accepted("answer", "r1", "ansr-000000000001", 1.0),  # reached once (the model's echo is not counted)
                Accepted("answer", "r1", "ansr-000000000002", 2.0),  # only in an earlier request: lost
                Accepted("mail", "r1", "mail-000000000001", 3.0),  # twice in the last request: duplicated
                Accepted("interrupt", "r1", "word-000000000001", 4.0)]  # never seen: lost
    requests = [request("s1", 1.5, task, called("t1"), result("t1", "ansr-000000000002")),
                request("s1", 5.0, task, called("t1"), result("t1", "ansr-000000000001"),
                        called("t2"), result("t2", "mail-000000000001 mail-000000000001"), turn=4, served="fallback")]
    f = tally(accepted, requests, SCRIPT)
    assert (f.of("answer").reached, f.of("answer").lost, f.of("answer").lost_tokens) == (1, 1, ["r1:ansr-000000000002"])
    assert (f.of("mail").duplicated, f.of("interrupt").lost) == (1, 1)
    assert (f.runs_started, f.runs_finished, f.stuck, f.multi_session) == (1, 1, [], [])


def test_a_session_carried_into_a_later_one_is_not_counted_twice_and_separate_ones_are() -> None:
    task = user("Campaign run task-bbbbbbbbbbbb")
    accepted = [Accepted("task", "r2", "task-bbbbbbbbbbbb", 0.0), Accepted("answer", "r2", "ansr-00000000000a", 1.0),
                Accepted("answer", "r2", "ansr-00000000000b", 2.0)]
    forked = [request("old", 1.5, task, called("t1"), result("t1", "ansr-00000000000a")),
              request("new", 3.0, task, called("t1"), result("t1", "ansr-00000000000a"), called("t2"),
                      result("t2", "ansr-00000000000b"))]
    f = tally(accepted, forked, SCRIPT)
    assert (f.of("answer").reached, f.multi_session, f.stuck) == (2, [], ["r2"])  # no last word: stuck
    apart = [request("old", 1.5, task, called("t1"), result("t1", "ansr-00000000000a")),
             request("new", 3.0, task, called("t9"), result("t9", "ansr-00000000000b"))]
    f = tally(accepted, apart, SCRIPT)
    assert (f.of("answer").reached, f.multi_session) == (2, ["r2"])


def test_mail_is_late_only_when_the_run_finished_without_reading_its_inbox_again() -> None:
    inbox = min(SCRIPT.inbox_turns)
    task = user("Campaign run task-cccccccccccc")
    accepted = [Accepted("task", "r3", "task-cccccccccccc", 0.0), Accepted("mail", "r3", "mail-00000000000c", 9.0)]
    read_before = request("s", 5.0, task, turn=inbox)
    ended = request("s", 10.0, task, turn=SCRIPT.end_turn)
    assert tally(accepted, [read_before, ended], SCRIPT).of("mail").late == 1
    assert tally(accepted, [read_before], SCRIPT).of("mail").lost == 1  # it never finished: lost, not late


def test_a_turn_whose_reply_was_lost_and_repeated_after_the_restart_had_the_answer_as_input_once() -> None:
    task, answer = user("Campaign run task-dddddddddddd"), "ansr-00000000000d"
    accepted = [Accepted("task", "r4", "task-dddddddddddd", 0.0), Accepted("answer", "r4", answer, 1.0)]
    asked = (task, called("t1"), result("t1", answer))
    requests = [request("s", 1.2, *asked, reply=("t2",)),  # killed before its reply was kept
                request("s", 3.0, *asked, reply=("t3",)),  # the same request after the restart: this one went on
                request("s", 4.0, *asked, called("t3"), result("t3", "inbox empty"), turn=SCRIPT.end_turn,
                        said="All done.")]
    f = tally(accepted, requests, SCRIPT)
    a = f.of("answer")
    assert (a.accepted, a.as_input, a.only_in_history, a.twice, a.lost, a.reached) == (1, 1, 0, 0, 0, 1)
    view = f.views["r4"]
    assert [r.received_at for r in view.turns] == [3.0, 4.0] and view.reach(answer).kind == ONCE
    # A reply of text alone is known by its text and place: "All done." went on to a restart prompt here.
    ended = request("s", 4.0, *asked, called("t3"), result("t3", "inbox empty"), turn=SCRIPT.end_turn,
                    said="All done.")
    later = request("s", 6.0, *asked, called("t3"), result("t3", "inbox empty"),
                    {"role": "assistant", "content": [{"type": "text", "text": "All done."}]},
                    user("You were cut off by a restart."), turn=SCRIPT.end_turn + 1, served="fallback",
                    said="All done.")
    assert [r.received_at for r in RunView.of([*requests[:2], ended, later]).turns] == [3.0, 4.0, 6.0]


def test_a_tool_result_followed_by_the_no_response_stand_in_and_a_restart_prompt_is_only_in_history() -> None:
    task, answer, stored = user("Campaign run task-eeeeeeeeeeee"), "ansr-00000000000e", "ansr-00000000000f"
    accepted = [Accepted("task", "r5", "task-eeeeeeeeeeee", 0.0), Accepted("answer", "r5", answer, 1.0),
                Accepted("answer", "r5", stored, 5.0)]
    restart = user("You were cut off by a restart. Continue where you were.")
    first = (task, called("t1"), result("t1", answer))
    second = (*first, NO_RESPONSE, restart, called("t3"), result("t3", stored))  # `stored`: no request had it
    requests = [request("s", 1.2, *first, reply=("t2",)),  # sent, then killed before the reply was kept
                request("s", 3.0, *first, NO_RESPONSE, restart, reply=("t3",)),
                request("s", 7.0, *second, NO_RESPONSE, restart, reply=("t5",)),
                request("s", 8.0, *second, NO_RESPONSE, restart, called("t5"), result("t5", "inbox empty"),
                        turn=SCRIPT.end_turn, said="All done.")]
    f = tally(accepted, requests, SCRIPT)
    a = f.of("answer")
    assert (a.as_input, a.only_in_history, a.twice, a.lost, a.reached) == (0, 2, 0, 0, 2)
    assert a.history_tokens == [f"r5:{answer}", f"r5:{stored}"]
    assert f.only_in_history == 2 and f.twice == 0
    view = f.views["r5"]
    assert view.reach(answer).kind == HISTORY and view.reach(answer).sent == 4
    line = shape(view, answer)
    assert "new input of: not a turn (tool result; its reply was lost)" in line, line
    assert "'No response requested.'" in line, line
    assert "You were cut off" in line and shape(view, stored).startswith("new input of: no request"), line


def test_the_hand_over_note_beside_the_answer_it_repeats_is_one_input_of_one_turn() -> None:
    """The restart hand-over continues the stored turn with a note that says the reply again: one input, once."""
    task, answer = user("Campaign run task-acacacacacac"), "ansr-0000000000ac"
    accepted = [Accepted("task", "r7", "task-acacacacacac", 0.0), Accepted("answer", "r7", answer, 1.0)]
    first = (task, called("t1"), result("t1", answer))
    note = user(f"(Picked up where you left off …)\n- Your question “which side?” got this reply: {answer}")
    requests = [request("s", 1.2, *first, reply=("t2",)),  # killed before its reply was kept
                request("s", 4.0, *first, note, reply=("t3",)),  # after the restart: the same turn, with the note
                request("s", 5.0, *first, note, called("t3"), result("t3", "inbox empty"), turn=SCRIPT.end_turn,
                        said="All done.")]
    f = tally(accepted, requests, SCRIPT)
    a = f.of("answer")
    assert (a.as_input, a.only_in_history, a.twice) == (1, 0, 0)
    assert a.duplicated == 1  # issue 18's history count counts occurrences: it calls the repetition a duplicate


def test_a_turn_the_resumed_history_dropped_is_not_a_turn() -> None:
    task, answer = user("Campaign run task-abababababab"), "ansr-0000000000ab"
    first = (task, called("t1"), result("t1", answer))
    restart = (*first, NO_RESPONSE, user("You were cut off by a restart."))
    view = RunView.of([request("s", 1.0, *first, reply=("t2",)),
                       request("s", 2.0, *first, called("t2"), result("t2", "inbox empty"), reply=("t3",)),  # killed
                       request("s", 5.0, *restart, reply=("t4",)),  # resumed from a history without t2
                       request("s", 6.0, *restart, called("t4"), result("t4", "inbox empty"), said="All done.")])
    assert [r.received_at for r in view.turns] == [5.0, 6.0] and view.reach(answer).kind == HISTORY
    assert "not a turn (tool result; its reply was sent on, then dropped from the resumed history)" in shape(
        view, answer)


def test_an_input_given_again_after_the_restart_is_counted_twice() -> None:
    task, answer = user("Campaign run task-ffffffffffff"), "ansr-0000000000ff"
    accepted = [Accepted("task", "r6", "task-ffffffffffff", 0.0), Accepted("answer", "r6", answer, 1.0)]
    first = (task, called("t1"), result("t1", answer))
    again = (*first, called("t2"), result("t2", "inbox empty"), NO_RESPONSE,
             user(f"You were cut off by a restart. The person had answered: {answer}"))
    requests = [request("s", 1.2, *first, reply=("t2",)),  # its reply was kept: the model had a turn on it
                request("s", 3.0, *again, reply=("t3",)),  # and again after the restart
                request("s", 4.0, *again, called("t3"), result("t3", "inbox empty"), turn=SCRIPT.end_turn,
                        said="All done.")]
    f = tally(accepted, requests, SCRIPT)
    a = f.of("answer")
    assert (a.as_input, a.only_in_history, a.twice, a.duplicated, a.twice_tokens) == (0, 0, 1, 1, [f"r6:{answer}"])
    reach = f.views["r6"].reach(answer)
    assert (reach.as_input, reach.in_history, reach.kind) == (2, 2, TWICE)
    # Twice too when a fresh session is told it again: both sessions are kept, and each had a turn on it.
    fresh = [request("old", 1.2, *first, reply=("t2",)),
             request("new", 3.0, task, user(f"The person had answered: {answer}"), reply=("t8",), turn=0)]
    assert RunView.of(fresh).reach(answer) == Reach(as_input=2, in_history=2, sent=2)


@pytest.mark.slow
@pytest.mark.timeout(600)  # ~20 kills, restarts and CLI starts on a shared 2-core machine: a few minutes
async def test_twenty_random_kills_lose_nothing_and_leave_no_run_stuck(tmp_path: Path) -> None:
    report = await run_campaign(Settings.from_env(kills=20, evidence=True), tmp_path)
    problems = report.problems() + (report.turn_problems() if EVERY_INPUT_AS_ONE_TURN else [])
    assert not problems, ("; ".join(problems) + "\n\n" + report.table() + f"\n\nevidence: {tmp_path / 'evidence.json'}"
                          f"\nbot log ({tmp_path / 'bot.log'}), last lines:\n{report.log_tail}"
                          + "\n\n" + report.explanation())
