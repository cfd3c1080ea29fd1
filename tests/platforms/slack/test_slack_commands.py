"""The real AsyncApp over Socket Mode against the Slack double, without runs: commands, malformed and
foreign payloads, start refusals, dedupe, HTTP mode with request signing."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
from pathlib import Path

import aiohttp
import pytest

from adapters.platform import ThreadRef
from adapters.slack import SlackStartError
from adapters.state import ChannelPolicy, RunRecord
from tests.support.slack_double import BOT_USER, SlackDouble
from tests.support.slack_support import C1, settings_for, slack_bot


async def test_help_usage_status_and_runs_answer_in_the_ack(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double):
        assert double.connections == 1 and double.called("apps.connections.open") and double.called("auth.test")
        helped = await double.slash("/flower", "help", user="UALICE", channel=C1)
        assert helped is not None and "/flower &lt;task&gt;" in helped["text"]
        for text, want in (("", "Usage:"), ("stauts", "I don't know `stauts`"), ("start", "Usage:"),
                           ("status", "No run going in this channel."), ("runs", "No live runs you can see.")):
            ack = await double.slash("/flower", text, user="UALICE", channel=C1)
            assert ack is not None and want in ack["text"], (text, ack)
        stop = await double.slash("/stop", "", user="UALICE", channel=C1)
        assert stop is not None and "No live run of yours" in stop["text"]
        assert not double.roots(C1)  # nothing was posted in the channel


async def test_malformed_and_foreign_payloads_are_acked_logged_and_explained(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double) as bot:
        payload = double.slash_payload("/flower", "build it", user="UALICE", channel=C1)
        del payload["user_id"]
        ack = await double.send("slash_commands", payload)
        assert ack is not None and "incomplete" in ack["text"]
        # A button that is not ours, and one of ours with a broken id: acked, explained.
        foreign = {"type": "block_actions", "user": {"id": "UALICE"}, "trigger_id": "x", "response_url":
                   double._response_url(), "channel": {"id": C1},
                   "actions": [{"action_id": "someone-elses-button", "type": "button", "action_ts": "1"}]}
        assert await double.send("interactive", foreign) is None
        broken = {**foreign, "trigger_id": "y", "actions": [{"action_id": "fl1:ans:r1:", "action_ts": "2"}]}
        assert await double.send("interactive", broken) is None
        await double.wait_for(lambda d: len(d.responses) >= 1 and d.ephemerals_for("UALICE"))
        assert "not one of mine" in double.responses[0]["text"]
        assert "not one of mine" in double.ephemerals_for("UALICE")[0]
        # An event of a kind we do not use, and a message event with no user: acked, ignored.
        assert await double.event({"type": "reaction_added", "user": "UALICE"}) is None
        assert await double.event({"type": "message", "channel": C1, "ts": "1.1", "thread_ts": "1.0"}) is None
        # A submission so broken that Bolt's own parsing fails (a view without a type): acked, dropped.
        sub = {"type": "view_submission", "user": {"id": "UALICE"}, "trigger_id": "z",
               "view": {"id": "V9", "callback_id": "flower_input", "private_metadata": "{not json", "state": {}}}
        assert await double.send("interactive", sub) is None
        # A submission of our form with its metadata mangled: the form says so.
        sub = {**sub, "trigger_id": "z2", "view": {**sub["view"], "type": "modal"}}
        ack = await double.send("interactive", sub)
        assert ack is not None and ack["response_action"] == "errors"
        assert not bot.store.list_runs()
    assert "Traceback" not in "".join(double.ephemerals_for("UALICE") + [r["text"] for r in double.responses])
    assert any("not understood" in r.message for r in caplog.records)


async def test_a_refused_start_leaves_no_card_and_tells_only_the_person(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double) as bot:
        bot.store.set_channel_policy(f"slack:{C1}", ChannelPolicy(starters={"UBOB"}))
        assert await double.slash("/flower", "build me a thing", user="UMALLORY", channel=C1) is None
        await double.wait_for(lambda d: d.ephemerals_for("UMALLORY"))
        assert "not allowed to start" in double.ephemerals_for("UMALLORY")[0]
        assert not double.roots(C1) and not bot.store.list_runs()
        # Where the bot is not a member, the start says so through the command's response_url.
        double.not_in.add("C0000002")
        await double.slash("/flower", "build me a thing", user="UBOB", channel="C0000002")
        await double.wait_for(lambda d: d.responses)
        assert "invite me" in double.responses[0]["text"] and not bot.store.list_runs()


async def test_wake_names_a_run_and_answers_only_the_person(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double):
        assert await double.slash("/flower", "wake rnothere", user="UBOB", channel=C1) is None
        await double.wait_for(lambda d: d.ephemerals_for("UBOB") or d.responses)
        said = double.ephemerals_for("UBOB") or [r["text"] for r in double.responses]
        assert said == ["No run rnothere."] and not double.roots(C1)


async def test_a_budget_over_the_channel_ceiling_is_refused_before_anything_starts(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double,
                                                  budget_ceilings={f"slack:{C1}": 20.0}) as bot:
        assert await double.slash("/flower", "budget=50 build me a thing", user="UALICE", channel=C1) is None
        await double.wait_for(lambda d: d.ephemerals_for("UALICE"))
        assert "caps a run's budget at $20.00" in double.ephemerals_for("UALICE")[0]
        assert not bot.store.list_runs()
        usage = await double.slash("/flower", "budget=lots build me a thing", user="UALICE", channel=C1)
        assert usage is not None and "Usage" in usage["text"] and not bot.store.list_runs()


async def test_the_same_envelope_or_delivery_twice_has_one_effect(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double):
        payload = double.slash_payload("/flower", "stauts", user="UALICE", channel=C1)
        first = await double.send("slash_commands", payload, envelope_id="env-same")
        again = await double.send("slash_commands", payload, envelope_id="env-same")  # a socket re-send
        retry = await double.send("slash_commands", payload)  # same command, new envelope
        assert first is not None and "stauts" in first["text"]
        assert again is None and retry is None  # acked, not answered twice


async def test_bad_tokens_stop_the_start_with_one_clear_line(tmp_path: Path) -> None:
    from adapters.slack import SlackFrontend
    async with SlackDouble() as double:
        bad_bot = SlackFrontend(settings_for(double, bot_token="xoxb-wrong"))
        with pytest.raises(SlackStartError, match=r"SLACK_BOT_TOKEN.*invalid_auth") as err:
            await bad_bot.start()
        await bad_bot.stop()
        assert "xoxb-wrong" not in str(err.value)
        bad_app = SlackFrontend(settings_for(double, app_token="xapp-wrong"))
        with pytest.raises(SlackStartError, match=r"SLACK_APP_TOKEN.*invalid_auth") as err:
            await bad_app.start()
        await bad_app.stop()
        assert "xapp-wrong" not in str(err.value) and double.connections == 0


def _signed(secret: str, body: str, ts: int | None = None) -> dict[str, str]:
    stamp = str(ts if ts is not None else int(time.time()))
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": sig,
            "Content-Type": "application/x-www-form-urlencoded"}


async def test_http_mode_serves_signed_requests_and_refuses_unsigned_ones(tmp_path: Path) -> None:
    secret = "shh-test-secret"
    async with SlackDouble() as double:
        settings = settings_for(double, mode="http", signing_secret=secret, app_token="", port=0)
        async with slack_bot(tmp_path, None, tmp_path, double, settings=settings) as bot:
            url = f"http://127.0.0.1:{bot.frontend.port}/slack/events"
            body = urllib.parse.urlencode(double.slash_payload("/flower", "help", user="UALICE", channel=C1))
            async with aiohttp.ClientSession() as http:
                async with http.post(url, data=body, headers=_signed(secret, body)) as resp:
                    assert resp.status == 200 and "/flower &lt;task&gt;" in await resp.text()  # Slack shows plain text
                async with http.post(url, data=body, headers=_signed("wrong-secret", body)) as resp:
                    assert resp.status == 401
                event = json.dumps(double.event_payload({"type": "app_mention", "user": "UALICE", "channel": C1,
                                                         "ts": "5.5", "text": f"<@{BOT_USER}> help"}))
                headers = {**_signed(secret, event), "Content-Type": "application/json"}
                async with http.post(url, data=event, headers=headers) as resp:
                    assert resp.status == 200
            await double.wait_for(lambda d: d.ephemerals_for("UALICE"))
            assert "/flower &lt;task&gt;" in double.ephemerals_for("UALICE")[0]
        assert double.connections == 0  # HTTP mode opens no socket


async def test_agent_sessions_where_unsupported_are_logged_once_and_left_alone(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with SlackDouble(sessions_error="not_allowed_token_type") as double, \
            slack_bot(tmp_path, None, tmp_path, double) as bot:
        sessions = bot.frontend.sessions
        sessions.want(bot.frontend.ctx.thread(C1, "1.0"), "processing")
        await sessions.settle()
        sessions.want(bot.frontend.ctx.thread(C1, "1.0"), "active")
        sessions.want(bot.frontend.ctx.thread(C1, "2.0"), "processing")
        await sessions.settle()
        assert len(double.called("agents.sessions.setStatus", ok_only=False)) == 1 and not sessions.enabled
    warned = [r for r in caplog.records if "agent sessions are off" in r.getMessage()]
    assert len(warned) == 1 and "not_allowed_token_type" in warned[0].getMessage()


async def test_runs_all_lists_the_callers_ended_runs_with_their_round(tmp_path: Path) -> None:
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double) as bot:
        def ended(run_id: str, owner: str, task: str, status: str, round_: int, at: float) -> None:
            thread = ThreadRef("slack", C1, f"{at:.6f}")
            bot.store.save_run(RunRecord(run_id, thread, owner, task, status, str(tmp_path), str(tmp_path / run_id),
                                         created_at=at, round=round_))
            bot.store.bind_thread(thread, run_id)

        ended("r00000001", "UALICE", "write a CLI", "done", 3, 1.0)
        ended("r00000002", "UALICE", "fix the tests", "failed", 1, 2.0)
        ended("r00000003", "UBOB", "bob's own run", "done", 1, 3.0)
        plain = await double.slash("/flower", "runs", user="UALICE", channel=C1)
        assert plain is not None and plain["text"] == "No live runs you can see."
        listed = await double.slash("/flower", "runs all", user="UALICE", channel=C1)
        assert listed is not None
        text = listed["text"]
        assert "r00000001" in text and "done, round 3" in text and "r00000002" in text and "failed" in text
        assert text.index("r00000002") < text.index("r00000001")  # newest first
        assert f"<https://double.slack.test/archives/{C1}/p1000000|thread>" in text  # a link to each run's thread
        assert "r00000003" not in text  # someone else's
        nothing = await double.slash("/flower", "runs all", user="UCAROL", channel=C1)
        assert nothing is not None and "No ended runs of yours." in nothing["text"]
        assert not double.roots(C1) and len(bot.store.list_runs()) == 3  # `runs all` started no run
