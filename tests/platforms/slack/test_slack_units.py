"""Pure parts of the Slack bridge: text defusing, Block Kit rendering, payload parsing, modals,
error mapping."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError

from adapters.hub import RunOptions
from adapters.ids import encode
from adapters.platform import Button, OutMessage, PermanentSurfaceError, TransientSurfaceError
from adapters.slack.errors import to_surface_error
from adapters.slack.inbound import PayloadError, dedupe_key, parse_flower, read_action
from adapters.slack.modals import input_view, read_submission, stop_view
from adapters.slack.render import render
from adapters.slack.sessions import SESSION_STATUS, state_of
from adapters.slack.text import bar, defuse, mrkdwn_escape, strip_bot_mention
from adapters.view.status import STATES, StatusCard
from adapters.view.status import render as render_status

PINGS = "hi <!channel> <!here|here> <!everyone> <!subteam^S1|devs> <@U123> <@W9|bob> @here @channel @everyone"


def test_defuse_leaves_no_ping_and_is_idempotent() -> None:
    out = defuse(PINGS)
    for ping in ("<!channel>", "<!here", "<!everyone>", "<!subteam^", "<@U123>", "<@W9", "@here", "@channel",
                 "@everyone"):
        assert ping not in out
    assert defuse(out) == out and out.replace("\u200b", "") == PINGS  # reads the same
    assert defuse("a <#C1> link and `<@U1>` in code") == "a <#C1> link and `<\u200b@U1>` in code"


def test_mrkdwn_escape_makes_no_control_sequence() -> None:
    assert mrkdwn_escape("a < b && c > <https://x|y>") == "a &lt; b &amp;&amp; c &gt; &lt;https://x|y&gt;"
    assert "<" not in mrkdwn_escape(PINGS)


def test_context_bar_and_mention_stripping() -> None:
    assert bar("80.2K / 1M (8%)") == "▰░░░░░░░░░ 80.2K / 1M (8%)"
    assert bar("900K / 1M (95%)").startswith("▰" * 10)
    assert bar("— / 1M") == "— / 1M"
    assert strip_bot_mention("<@UBOT> build <@UBOT|flower> it", "UBOT").split() == ["build", "it"]
    assert strip_bot_mention("<@UBOT>   build it", "UBOT") == "build it"


def _types(blocks: list[Any]) -> list[str]:
    return [b.to_dict()["type"] for b in blocks]


def test_status_card_renders_header_fields_bar_footer_and_buttons_with_confirm() -> None:
    card = StatusCard("r1", "build <@U1> a CLI", 0.0, state="running", context=80_200)
    msg = render_status(card, 5.0)
    blocks, text = render(msg, footer="Started by Alice · run r1")
    assert _types(blocks) == ["header", "markdown", "section", "context", "actions"]
    d = [b.to_dict() for b in blocks]
    assert d[0]["text"]["text"].startswith("▶️ Running")
    assert "<@U1>" not in d[1]["text"] and "build" in d[1]["text"]
    assert any("▰" in f["text"] or "░" in f["text"] for f in d[2]["fields"])
    assert d[3]["elements"][0]["text"] == "Started by Alice · run r1"
    buttons = d[4]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Interrupt…", "Ask the oracle…", "Stop"]
    assert "subagent in flight" in buttons[0]["confirm"]["text"]["text"] and buttons[2]["style"] == "danger"
    assert "<" not in text and text.startswith("▶️ Running")


def test_ask_prose_notice_and_receipt_layouts() -> None:
    ask = OutMessage("ask:1-q1", "ask", "Which **colour**?", title="❓ Question from the agent",
                     buttons=[Button("red", encode("ans", "r1", "1-q1", 0), "primary"),
                              Button("Decline", encode("dec", "r1", "1-q1"), "danger")], important=True)
    blocks, _ = render(ask)
    assert _types(blocks) == ["header", "markdown", "actions"]
    assert blocks[1].to_dict()["text"] == "Which **colour**?"  # standard Markdown goes to Slack as is
    assert "confirm" not in blocks[2].to_dict()["elements"][0]
    prose, _ = render(OutMessage("prose:1", "prose", "```py\nx = 1\n```\n<!here> done", replace=False))
    assert _types(prose) == ["markdown"] and "<!here>" not in prose[0].to_dict()["text"]
    notice, _ = render(OutMessage("note:1", "notice", "➡️ Step 1/3: clarify <b>", replace=False))
    assert _types(notice) == ["context"] and "&lt;b&gt;" in notice[0].to_dict()["elements"][0]["text"]
    many = OutMessage("ask:1-q9", "ask", "pick", buttons=[Button(str(i), encode("ans", "r1", "1-q9", i))
                                                         for i in range(30)])
    blocks, _ = render(many)
    assert _types(blocks)[-2:] == ["actions", "actions"]  # 25 per actions block


def test_long_titles_and_labels_are_clipped_to_slacks_limits() -> None:
    msg = OutMessage("ask:1-q1", "ask", "q", title="T" * 400, buttons=[Button("L" * 200, encode("txt", "r", "1-q1"))])
    for b in render(msg)[0]:
        b.to_dict()  # slack-sdk validates lengths here


@pytest.mark.parametrize(("text", "kind", "rest"), [
    ("", "usage", ""), ("help", "help", ""), ("STATUS", "status", ""), ("runs", "runs", ""),
    ("runs ALL", "runs", "all"), ("runs all the tests", "start", "runs all the tests"),
    ("stauts", "usage", "stauts"), ("start", "usage", ""), ("start refactor", "start", "refactor"),
    ("build me a CLI", "start", "build me a CLI"), ("help me write a parser", "start", "help me write a parser"),
    ("follow r1a2b3c4d", "follow", "r1a2b3c4d"), ("UNFOLLOW r9", "unfollow", "r9"), ("follow", "usage", ""),
    ("follow the style guide", "start", "follow the style guide"), ("wake r1a2b3c4d", "wake", "r1a2b3c4d"),
])
def test_flower_command_grammar(text: str, kind: str, rest: str) -> None:
    cmd = parse_flower(text)
    assert (cmd.kind, cmd.text) == (kind, rest)


@pytest.mark.parametrize(("text", "kind", "rest", "options"), [
    ("budget=5 write a CLI", "start", "write a CLI", {"budget_usd": 5.0}),
    ("budget=$2.5 timeout=600 asks=3 go", "start", "go", {"budget_usd": 2.5, "timeout_s": 600.0, "max_asks": 3.0}),
    ("budget=five write a CLI", "usage", "budget=five", {}),
    ("asks=1.5 write a CLI", "usage", "asks=1.5", {}),
    ("budget=5", "usage", "", {}),
    ("x=1 is not an option", "start", "x=1 is not an option", {}),
])
def test_flower_takes_per_run_options_before_the_task(text: str, kind: str, rest: str,
                                                       options: dict[str, float]) -> None:
    cmd = parse_flower(text)
    assert (cmd.kind, cmd.text, cmd.options) == (kind, rest, options)


def test_flower_takes_an_approve_list_and_short_names_are_spelled_out() -> None:
    cmd = parse_flower("budget=5 approve=bash,edits write a CLI")
    assert (cmd.kind, cmd.text, cmd.options, cmd.approve) == ("start", "write a CLI", {"budget_usd": 5.0}, "bash,edits")
    assert parse_flower("approve=bash").kind == "usage"  # options and no task
    assert parse_flower("approve= go on").approve == "" and parse_flower("approve= go on").text == "approve= go on"
    assert RunOptions.approve_from("bash,edits, Bash(git push:*),bash") == ("Bash", "Edit", "Bash(git push:*)")
    assert RunOptions(approve=("Bash(",)).problem() is not None and RunOptions(approve=("Edit",)).problem() is None


def test_read_action_takes_the_thread_from_the_container_or_the_message() -> None:
    body = {"user": {"id": "U1", "name": "al"}, "channel": {"id": "C1"}, "trigger_id": "t1",
            "container": {"message_ts": "2.0", "thread_ts": "1.0", "is_ephemeral": False},
            "message": {"ts": "2.0", "thread_ts": "1.0", "blocks": [{"type": "markdown", "text": "Which?"}]},
            "actions": [{"action_id": "fl1:stop:r1:", "action_ts": "9.9", "value": "msg"}]}
    a = read_action(body)
    assert (a.channel, a.thread_ts, a.message_ts, a.value, a.message_text) == ("C1", "1.0", "2.0", "msg", "Which?")
    root = {**body, "container": {"message_ts": "1.0", "channel_id": "C2"}, "message": {"ts": "1.0"}, "channel": None}
    assert (read_action(root).channel, read_action(root).thread_ts) == ("C2", "1.0")
    for broken in ({**body, "actions": []}, {**body, "user": {}}, {**body, "channel": None, "container": {}},
                   {**body, "actions": [{"action_id": {"not": "text"}}]}):
        with pytest.raises(PayloadError):
            read_action(broken)


def test_dedupe_keys() -> None:
    assert dedupe_key({"event_id": "Ev1", "event": {}}) == "slack:event:Ev1"
    assert dedupe_key({"trigger_id": "t1"}) == "slack:trigger:t1"
    assert dedupe_key({"view": {"id": "V1", "hash": "h"}}) == "slack:view:V1:h"
    assert dedupe_key({"type": "unknown"}) is None


def _submitted(view: Any, text: str | None, end: bool = False) -> dict[str, Any]:
    d = view.to_dict()
    values: dict[str, Any] = {"text": {"text": {"type": "plain_text_input", "value": text}}}
    if any(b.get("block_id") == "end" for b in d["blocks"]):
        values["end"] = {"end": {"type": "checkboxes", "selected_options": [{"value": "end"}] if end else []}}
    return {**d, "id": "V1", "state": {"values": values}}


def test_modals_round_trip_their_metadata_and_inputs() -> None:
    aid = encode("txt", "r1", "1-q3")
    view = input_view(aid, "txt", "Your answer", channel="C1", thread="1.0", context="Indentation?")
    sub = read_submission(_submitted(view, "tabs"))
    assert (sub.meta, sub.text, sub.end) == ({"a": aid, "c": "C1", "t": "1.0"}, "tabs", False)
    stop = stop_view("r1", channel="C1", thread="", message="use tabs", task="build")
    d = stop.to_dict()
    assert d["blocks"][-2]["element"]["initial_value"] == "use tabs"
    sub = read_submission(_submitted(stop, None, end=True))
    assert (sub.meta, sub.text, sub.end) == ({"r": "r1", "c": "C1"}, "", True)
    with pytest.raises(PayloadError):
        read_submission({"private_metadata": "{oops", "state": {"values": {}}})
    with pytest.raises(PayloadError):
        read_submission({"private_metadata": json.dumps({"a": 1}), "state": {"values": {}}})


def _api_error(status: int, error: str, headers: dict[str, str] | None = None) -> SlackApiError:
    resp = SimpleNamespace(status_code=status, headers=headers or {}, data={"ok": False, "error": error})
    return SlackApiError("failed", resp)


def test_slack_errors_map_to_transient_or_permanent() -> None:
    rate = to_surface_error(_api_error(429, "ratelimited", {"Retry-After": "7"}), "chat.postMessage")
    assert isinstance(rate, TransientSurfaceError) and rate.retry_after == 7.0
    assert isinstance(to_surface_error(_api_error(503, ""), "chat.update"), TransientSurfaceError)
    assert isinstance(to_surface_error(_api_error(200, "internal_error"), "chat.update"), TransientSurfaceError)
    assert isinstance(to_surface_error(aiohttp.ClientConnectionError("reset"), "x"), TransientSurfaceError)
    assert isinstance(to_surface_error(TimeoutError(), "x"), TransientSurfaceError)
    gone = to_surface_error(_api_error(200, "message_not_found"), "chat.update")
    assert isinstance(gone, PermanentSurfaceError) and "message_not_found" in str(gone)


def test_every_status_label_maps_to_a_session_status() -> None:
    for state, (_icon, label) in STATES.items():
        msg = OutMessage("status", "status", "", fields=[("State", label)])
        assert state_of(msg) == state and SESSION_STATUS[state] in ("processing", "active", "closed")


@pytest.mark.parametrize(("text", "kind", "task", "schedule", "options"), [
    ("every weekday at 9:00 triage the issues", "routine", "triage the issues", "every weekday at 9:00", {}),
    ("at 22:00 run the long migration test", "routine", "run the long migration test", "at 22:00", {}),
    ("in 30 minutes check CI", "routine", "check CI", "in 30 minutes", {}),
    ("cron 0 9 * * 1-5 triage", "routine", "triage", "0 9 * * 1-5", {}),
    ("budget=2 every 2 hours poll", "routine", "poll", "every 2 hours", {"budget_usd": 2.0}),
    ("every weekday at 9:00", "routine", "", "every weekday at 9:00", {}),  # the hub asks for the task
    ("routines", "routines", "", "", {}),
    ("every file needs a header", "start", "every file needs a header", "", {}),
    ("0 9 * * 1-5 triage", "start", "0 9 * * 1-5 triage", "", {}),  # a bare cron is a task here: say `cron`
])
def test_flower_takes_a_schedule_before_the_task_as_a_routine(text: str, kind: str, task: str, schedule: str,
                                                               options: dict[str, float]) -> None:
    cmd = parse_flower(text)
    assert (cmd.kind, cmd.text, cmd.options) == (kind, task, options)
    if kind == "routine":
        assert cmd.words == schedule
