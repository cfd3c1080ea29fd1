"""Slack streaming end to end: real slack-bolt/slack-sdk against a double that enforces the stream methods'
arguments, the real SDK + CLI against a model double that writes slowly."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

import pytest

from adapters import outbox_streams
from adapters.platform import LiveText, PermanentSurfaceError, StreamRefused, ThreadRef
from adapters.slack import SlackFrontend
from tests.conftest import scenario_of
from tests.support.hub_support import FAST
from tests.support.slack_double import TEAM, SlackDouble
from tests.support.slack_support import C1, root_of, settings_for, slack_bot

WORDS = " ".join(f"word{i}" for i in range(80)) + "."
STREAMING = {"resilience": FAST, "partial_text": True}


def scenario() -> Any:
    return scenario_of({"name": "main", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
        {"say": WORDS, "stream": {"words": 2, "pause_s": 0.05}},
    ]})


async def test_a_reply_streams_into_the_thread_and_ends_as_the_complete_text(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario())
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double, runtime_options=STREAMING):
        await double.slash("/flower", "read the notes", user="UALICE", channel=C1)
        root = await double.wait_for(lambda d: d.roots(C1) and root_of(d))
        growing = await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: m.streaming and "word" in m.text))
        assert WORDS.startswith(growing.text) and growing.text != WORDS  # visible before the model finished
        done = await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: not m.streaming and m.display
                                                      and "word" in m.text))
        assert done.text == WORDS
        starts = double.called("chat.startStream")
        assert len(starts) == 2  # one per agent message ("Reading." and the long one)
        for call in starts:  # in a channel: the run's owner and the workspace as recipients
            assert (call.args["recipient_user_id"], call.args["recipient_team_id"]) == ("UALICE", TEAM)
            assert call.args["thread_ts"] == root.ts
        # Shown as written: the words are not posted again as an ordinary message.
        assert not [m for m in double.thread(C1, root.ts) if "word1 " in m.body()]
        appends = [c for c in double.called("chat.appendStream") if c.args["ts"] == done.ts]
        gaps = [b.at - a.at for a, b in itertools.pairwise(appends)]
        assert appends and all(g > 0.9 for g in gaps)  # grown at most once a second, the words gathered
        assert len(appends) < 40  # the model wrote 40 deltas


async def test_where_slack_refuses_to_stream_the_thread_gets_todays_messages_and_one_log_line(
        double_factory: Any, cli_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    outbox_streams._REFUSALS_LOGGED.discard("slack")
    md = await double_factory(scenario())
    with caplog.at_level(logging.WARNING, logger="adapters.outbox"):
        async with SlackDouble(streams=False) as double, \
                slack_bot(tmp_path, md, cli_home, double, runtime_options=STREAMING):
            await double.slash("/flower", "read the notes", user="UALICE", channel=C1)
            root = await double.wait_for(lambda d: d.roots(C1) and root_of(d))
            said = await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: WORDS in m.body()))
            assert said is not None and double.called("chat.startStream", ok_only=False)
            assert len(double.called("chat.startStream", ok_only=False)) == 1  # tried once, then never again
    assert len([r for r in caplog.records if "refused to stream" in r.message]) == 1


async def test_the_double_enforces_the_stream_methods_arguments() -> None:
    async with SlackDouble() as double:
        surface = SlackFrontend(settings_for(double)).surface
        thread = ThreadRef("slack", C1, double.person_says(C1, "go", user="UALICE").ts)
        # A channel needs a recipient: a run whose owner is no Slack user cannot stream there.
        with pytest.raises(StreamRefused):
            await surface.stream(thread, None, LiveText("k", "hi", "hi", owner="discord:42"))
        for args in ({"channel": C1}, {"channel": C1, "thread_ts": thread.thread},
                     {"channel": C1, "thread_ts": thread.thread, "recipient_user_id": "UALICE"},
                     {"channel": C1, "thread_ts": thread.thread, "recipient_user_id": "UALICE",
                      "recipient_team_id": TEAM, "task_display_mode": "grid"},
                     {"channel": C1, "thread_ts": thread.thread, "recipient_user_id": "UALICE",
                      "recipient_team_id": TEAM, "markdown_text": "x" * 12_001}):
            got = await _raw(double, "chat.startStream", args)
            assert got["ok"] is False, args
        ok = await _raw(double, "chat.startStream", {"channel": C1, "thread_ts": thread.thread,
                                                     "recipient_user_id": "UALICE", "recipient_team_id": TEAM,
                                                     "chunks": [{"type": "markdown_text", "text": "a"}]})
        assert ok["ok"]
        bad_task = {"channel": C1, "ts": ok["ts"], "chunks": [{"type": "task_update", "id": "t1", "title": "x",
                                                               "status": "done"}]}
        assert (await _raw(double, "chat.appendStream", bad_task))["error"] == "invalid_chunks"
        assert (await _raw(double, "chat.stopStream", {"channel": C1, "ts": ok["ts"]}))["ok"]
        late = await _raw(double, "chat.appendStream", {"channel": C1, "ts": ok["ts"], "markdown_text": "b"})
        assert late["error"] == "message_not_in_streaming_state"


async def _raw(double: SlackDouble, method: str, args: dict[str, Any]) -> dict[str, Any]:
    import aiohttp

    from tests.support.slack_double import BOT_TOKEN

    async with aiohttp.ClientSession() as s, s.post(f"{double.api_url}{method}", json=args,
                                                    headers={"Authorization": f"Bearer {BOT_TOKEN}"}) as r:
        got: dict[str, Any] = await r.json()
        return got


def plan_scenario() -> Any:
    todos = [{"content": "Read the notes", "status": "in_progress", "activeForm": "Reading the notes"},
             {"content": "Sum them up", "status": "pending", "activeForm": "Summing up"}]
    done = [dict(todos[0], status="completed"), dict(todos[1], status="completed")]
    return scenario_of({"name": "main", "turn": [
        {"say": "Planning first.", "stream": True, "call": [{"tool": "TodoWrite", "input": {"todos": todos}}]},
        {"say": "Reading.", "stream": True, "call": [{"tool": "Read", "input": {"file_path": "missing.md"}}]},
        {"say": "Done reading.", "stream": True, "call": [{"tool": "TodoWrite", "input": {"todos": done}}]},
        {"say": "All done.", "stream": True},
    ]})


async def test_tool_calls_are_task_updates_and_the_todo_list_is_the_plan(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(plan_scenario())
    async with SlackDouble() as double, slack_bot(tmp_path, md, cli_home, double, runtime_options=STREAMING):
        await double.slash("/flower", "plan and read", user="UALICE", channel=C1)
        root = await double.wait_for(lambda d: d.roots(C1) and root_of(d))
        plan = await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: m.display == "plan" and m.tasks))
        await double.wait_for(lambda d: d.find(C1, root.ts, lambda m: "All done." in m.text and not m.streaming))
        await double.wait_for(lambda d: not plan.streaming, timeout=30)  # closed when the run ended
        assert plan.plan == "Plan" and [(t["title"], t["status"]) for t in plan.tasks.values()] == [
            ("Read the notes", "complete"), ("Sum them up", "complete")]  # moved in place
        reading = double.find(C1, root.ts, lambda m: m.text.startswith("Reading."))
        assert reading is not None and reading.display == "timeline"
        (task,) = reading.tasks.values()
        assert task["title"].startswith("Read missing.md") and task["status"] == "error" and task["output"]
        starts = double.called("chat.startStream")
        assert [c.args.get("task_display_mode") for c in starts].count("plan") == 1  # one plan, edited in place


async def test_a_message_an_earlier_process_left_streaming_is_stopped_with_a_note() -> None:
    async with SlackDouble() as double:
        thread = ThreadRef("slack", C1, double.person_says(C1, "go", user="UALICE").ts)
        before = SlackFrontend(settings_for(double)).surface
        ts = await before.stream(thread, None, LiveText("live:a:1", "Half a sen", "Half a sen", owner="slack:UALICE"))
        assert double.messages[(C1, ts)].streaming
        after = SlackFrontend(settings_for(double)).surface  # a new process: it never saw that stream
        live = LiveText("live:open:x", "", "", done=True, note="cut off by a restart", earlier=True)
        assert await after.stream(thread, ts, live) == ts
        msg = double.messages[(C1, ts)]
        assert not msg.streaming and msg.text == "Half a sen\n\n_cut off by a restart_"
        with pytest.raises(PermanentSurfaceError):  # it can be closed, never grown
            await after.stream(thread, ts, LiveText("live:a:1", "Half a sentence", "tence"))
