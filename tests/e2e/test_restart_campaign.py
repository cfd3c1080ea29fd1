"""Issue 18's restart campaign, bounded for the suite: about 20 random kills of a real `flower-bot web`
process driven only through its HTTP API, against the model double that never re-asks after a restart.

Done when: no accepted input is lost or duplicated, no run is left stuck, every accepted interrupt
reaches the model (and event seq numbers never step back over the WebSocket). The plan of kills comes
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

SCRIPT = Script.load()


def request(session: str, at: float, *messages: dict[str, Any], turn: int = 1, served: str = "turn") -> RecordedRequest:
    body = {"messages": list(messages), "metadata": {"user_id": json.dumps({"session_id": session})}}
    return RecordedRequest(path="/v1/messages", body=body, turn=turn, served=served, received_at=at)


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


@pytest.mark.slow
@pytest.mark.timeout(600)  # ~20 kills, restarts and CLI starts on a shared 2-core machine: a few minutes
async def test_twenty_random_kills_lose_nothing_and_leave_no_run_stuck(tmp_path: Path) -> None:
    report = await run_campaign(Settings.from_env(kills=20, evidence=True), tmp_path)
    problems = report.problems()
    assert not problems, ("; ".join(problems) + "\n\n" + report.table() + f"\n\nevidence: {tmp_path / 'evidence.json'}"
                          f"\nbot log ({tmp_path / 'bot.log'}), last lines:\n{report.log_tail}")
