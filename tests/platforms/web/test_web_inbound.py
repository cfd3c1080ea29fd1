"""The web front end's pure parts, without a server: request bodies and parameters read into values and
intents (adapters/web/inbound.py), runs, cards and outcomes as JSON (adapters/web/render.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.hub import Attached, Click, IntentResult, OpenCard, RunOptions, SavedFile, Start
from adapters.ids import encode
from adapters.platform import Button, FileRef, OutMessage, ThreadRef
from adapters.platform.limits import WEB
from adapters.state import RunRecord
from adapters.view.shares import beside_path
from adapters.web.errors import ApiError
from adapters.web.inbound import (
    START_FIELDS,
    after_cursor,
    button_run,
    cursor,
    number_field,
    page_frame,
    parse_body,
    read_approval,
    read_click,
    read_start,
    show_all,
    shown,
    text_field,
)
from adapters.web.render import (
    activity_json,
    ask_json,
    attached_json,
    click_json,
    message_json,
    result_json,
    run_json,
    stamped,
)

JSON = "application/json"
TEXT: dict[str, type | tuple[type, ...]] = {"text": str}


def refused(status: int, call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    assert caught.value.status == status
    return str(caught.value)


# ---- bodies --------------------------------------------------------------------------------------
def test_an_empty_body_is_an_empty_object_whatever_its_type() -> None:
    assert parse_body(b"", "text/plain", TEXT) == {}
    assert parse_body(b"  \n", "", TEXT) == {}


def test_a_body_is_one_flat_json_object_of_known_fields() -> None:
    assert parse_body(b'{"text": "hi"}', JSON, TEXT) == {"text": "hi"}
    assert parse_body(b'{"text": null}', JSON, TEXT) == {"text": None}  # null: as if absent
    assert "Content-Type: application/json" in refused(415, parse_body, b'{"text": "hi"}', "text/plain", TEXT)
    assert refused(400, parse_body, b'{"text": ', JSON, TEXT).startswith("malformed JSON")
    assert "nested too deeply" in refused(400, parse_body, b"[" * 100_000 + b"]" * 100_000, JSON, TEXT)
    assert refused(400, parse_body, b'["hi"]', JSON, TEXT) == "the body must be a JSON object"
    assert refused(400, parse_body, b'{"txt": "hi"}', JSON, TEXT) == "unknown field 'txt' (known: text)"
    assert refused(400, parse_body, b'{"x": 1}', JSON, {}) == "unknown field 'x' (known: none)"


def test_field_types_are_strict() -> None:
    nums: dict[str, type | tuple[type, ...]] = {"n": (int, float), "k": int}
    assert parse_body(b'{"n": 1.5, "k": 2}', JSON, nums) == {"n": 1.5, "k": 2}
    assert refused(400, parse_body, b'{"text": 5}', JSON, TEXT) == "'text' must be a string, got 5"
    assert refused(400, parse_body, b'{"k": true}', JSON, nums) == "'k' must be a whole number, got true"
    assert refused(400, parse_body, b'{"k": 1.5}', JSON, nums) == "'k' must be a whole number, got 1.5"
    assert refused(400, parse_body, b'{"n": "1"}', JSON, nums) == "'n' must be a number, got \"1\""
    assert refused(400, parse_body, b'{"n": {"a": 1}}', JSON, nums) == "'n' must be a number, got an object"
    for bad in (b"NaN", b"Infinity", b"-Infinity", b"1e400"):
        assert "must be a finite number" in refused(400, parse_body, b'{"n": ' + bad + b"}", JSON, nums)


def test_shown_names_containers_by_kind_and_cuts_scalars() -> None:
    assert (shown({}), shown([1]), shown("x" * 100)) == ("an object", "a list", json.dumps("x" * 100)[:60])


def test_text_fields() -> None:
    assert text_field({"text": "hi"}, "text") == "hi"
    assert text_field({}, "text", required=False) == ""
    assert text_field({"text": " "}, "text", empty_ok=True) == " "
    assert refused(400, text_field, {}, "text") == "missing field 'text'"
    assert refused(400, text_field, {"text": "  "}, "text") == "'text' is empty: say something"
    long = "x" * (WEB.input_max + 1)
    assert refused(400, text_field, {"text": long}, "text") == \
        f"'text' is {WEB.input_max + 1} characters, over the {WEB.input_max} limit"


def test_number_fields() -> None:
    assert number_field({}, "n") is None
    assert number_field({"n": 0}, "n") == 0
    assert refused(400, number_field, {"n": -1}, "n") == "'n' must be 0 or more, got -1"
    assert refused(400, number_field, {"n": 1.5}, "n", integer=True) == "'n' must be a whole number, got 1.5"


# ---- intents -------------------------------------------------------------------------------------
def test_a_start_body_is_a_start_with_its_options() -> None:
    body = parse_body(b'{"task": "write a CLI", "timeout_s": 60, "max_asks": 3, "budget_usd": 2.5, '
                      b'"approve": ["Bash"]}', JSON, START_FIELDS)
    assert read_start(body) == Start("write a CLI", RunOptions(timeout_s=60, max_asks=3, budget_usd=2.5,
                                                               approve=("Bash",)))
    assert read_start({"task": "t"}) == Start("t", RunOptions())
    assert refused(400, read_start, {}) == "missing field 'task'"
    assert "list of tool rules" in refused(400, read_start, {"task": "t", "approve": [1]})
    assert refused(400, read_start, {"task": "t", "approve": ["no such tool("]}).startswith("Bad approval list")
    assert refused(400, read_start, {"task": "t", "max_asks": -1}) == "'max_asks' must be 0 or more, got -1"


def test_an_approval_takes_once_run_or_deny() -> None:
    assert read_approval({"ask_id": "q1", "decision": " run "}) == ("q1", "run", "")
    assert read_approval({"ask_id": "q1", "decision": "deny", "text": "not now"}) == ("q1", "deny", "not now")
    assert refused(400, read_approval, {"ask_id": "q1", "decision": "maybe"}) == \
        'decision must be one of once, run, deny, got "maybe"'
    assert refused(400, read_approval, {"decision": "once"}) == "missing field 'ask_id'"


def test_a_click_names_its_run() -> None:
    stop = encode("stop", "r1")
    assert read_click({"action_id": stop}) == (Click(stop), None)
    assert read_click({"action_id": stop, "text": "", "delivery_id": "d1"}) == (Click(stop, ""), "d1")
    assert read_click({"action_id": stop, "delivery_id": ""})[1] is None
    assert (button_run(stop), button_run("nope")) == ("r1", None)  # whether it is ours is the door's to say


def test_query_parameters() -> None:
    assert (after_cursor("0"), after_cursor("42")) == (0, 42)
    for bad in ("-1", "x", "1" * 19, ""):
        assert refused(400, after_cursor, bad).startswith("'after' must be a sequence number")
    assert (show_all(""), show_all("0"), show_all("1")) == (False, False, True)
    assert refused(400, show_all, "yes") == "'all' is 0 or 1 (got 'yes')"


def test_page_frames() -> None:
    assert page_frame('{"op": "ping"}') is None
    assert page_frame('{"op": "watch", "run": "r1"}') == {"op": "watch", "run": "r1"}
    for bad in ('{"op": "other"}', "not json", "[1]", "[" * 100_000):
        assert page_frame(bad) == {"op": "bad"}
    assert [cursor(v) for v in (5, 0, -3, True, "7", 2.0, None)] == [5, 0, 0, 0, 0, 0, 0]


# ---- render --------------------------------------------------------------------------------------
def test_a_message_as_the_page_renders_it() -> None:
    att = FileRef(path="/w/out dir/a b.txt", name="a b.txt", size=3, rel="out dir/a b.txt", run_id="r1")
    msg = OutMessage("status", "status", "going", title="Run", fields=[("Step", "1")],
                     buttons=[Button("Stop", "fl1:stop:r1:", "danger")], tone="warning", attachment=att)
    assert message_json(msg) == {
        "key": "status", "kind": "status", "title": "Run", "text": "going", "fields": [["Step", "1"]],
        "buttons": [{"label": "Stop", "action_id": "fl1:stop:r1:", "style": "danger"}], "important": False,
        "origin": "", "tone": "warning",
        "file": {"name": "a b.txt", "size": 3, "path": "out dir/a b.txt",
                 "url": "/api/runs/r1/files/out%20dir/a%20b.txt"}}
    assert message_json(OutMessage("p", "prose", "x", attachment=FileRef("/a", "a", 1)))["file"] is None
    whole = "/runs/r1/plans/plan-1.md"
    plan = FileRef(whole, "plan-1.md", 9, run_id="r1", beside=beside_path(whole))
    assert message_json(OutMessage("plan:1-q1", "notice", "x", attachment=plan))["file"] == {
        "name": "plan-1.md", "size": 9, "path": "plans/plan-1.md", "url": "/api/runs/r1/beside/plans/plan-1.md"}
    assert beside_path("plan.md") == "" and beside_path("C:\\r\\approvals\\a.diff") == "approvals/a.diff"
    assert stamped({"k": 1}, 12.34567) == {"k": 1, "at": 12.346}


def test_a_run_and_its_cards() -> None:
    r = RunRecord("r1", ThreadRef("web", "page", "t1"), "web", "task", "running", created_at=1.0, updated_at=2.0)
    assert run_json(r, page=r.thread, live=True, worker="") == {
        "id": "r1", "task": "task", "status": "running", "owner": "web", "platform": "web", "thread": str(r.thread),
        "page_thread": str(r.thread), "created_at": 1.0, "updated_at": 2.0, "round": 1, "live": True, "worker": "",
        "model": None, "effort": None}
    assert run_json(r, page=None, live=False, worker="w2")["page_thread"] is None
    question = OpenCard("1-q1", "Dark or light?", ["dark", "light"], 3.0)
    assert ask_json(question) == {"id": "1-q1", "question": "Dark or light?", "options": ["dark", "light"],
                                  "waited_s": 3.0, "kind": "question"}
    approval = OpenCard("1-q2", "Run it?", [], None, "approval", {"tool": "Bash", "input": {"command": "ls"}})
    assert ask_json(approval)["tool"] == "Bash" and ask_json(approval)["input"] == {"command": "ls"}


def test_outcomes_as_answers() -> None:
    assert result_json(IntentResult(True, "sent", "r1"), ask_id="1-q1") == \
        ({"ok": True, "message": "sent", "id": "r1", "ask_id": "1-q1"}, 200)
    assert result_json(IntentResult(False, "no", "r1", told=True)) == \
        ({"ok": False, "error": "no", "id": "r1", "duplicate": False}, 409)
    late = IntentResult(False, "already settled", "r1", duplicate=True)
    assert click_json(late) == ({"ok": False, "message": "already settled", "id": "r1", "needs_input": "",
                                 "duplicate": True}, 200)
    assert click_json(IntentResult(False, "no", "r1"))[1] == 409
    saved = Attached(True, "attached", "r1", files=(SavedFile("a.txt", "inbox/a.txt", 3, "text/plain"),))
    assert attached_json(saved) == ({"ok": True, "message": "attached", "id": "r1",
                                     "files": [{"name": "a.txt", "path": "inbox/a.txt", "size": 3}]}, 201)
    assert [attached_json(Attached(False, "x", "r1", problem=p))[1] for p in ("too_large", "bad_file", "")] == \
        [413, 400, 409]


def test_activity_is_tool_calls_but_questions() -> None:
    events = [{"seq": 1, "kind": "tool_call", "tool": "Bash", "text": "ls\n-la", "payload": {}},
              {"seq": 2, "kind": "tool_call", "tool": "mcp__human__ask", "text": "q", "payload": {}},
              {"seq": 3, "kind": "text", "tool": "", "text": "hello", "payload": {}},
              {"seq": 4, "kind": "tool_call", "tool": "Read", "text": "a.py", "payload": {"subagent": True}}]
    items = activity_json(events)
    assert [(i["seq"], i["sub"]) for i in items] == [(1, False), (4, True)]
    assert "\n" not in items[0]["text"]
