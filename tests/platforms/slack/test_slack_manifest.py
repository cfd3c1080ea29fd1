"""manifest/slack-app.json against the bot that uses it: every command, shortcut and event it declares
reaches a real listener of the running bot, and every Web API method the bot calls is covered by a
declared scope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.platform import OutMessage
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, slack_bot

MANIFEST = Path(__file__).resolve().parents[3] / "manifest" / "slack-app.json"
# What each Web API method the bot calls needs (https://docs.slack.dev/reference/methods).
METHOD_SCOPES: dict[str, set[str]] = {
    "auth.test": set(), "apps.connections.open": set(),  # the app-level token carries connections:write
    "chat.postMessage": {"chat:write"}, "chat.update": {"chat:write"}, "chat.delete": {"chat:write"},
    "chat.postEphemeral": {"chat:write"}, "reactions.add": {"reactions:write"},
    "reactions.remove": {"reactions:write"}, "users.info": {"users:read"}, "views.open": set(),
    "conversations.open": {"im:write"}, "agents.sessions.setStatus": {"chat:write", "assistant:write"},
    "files.getUploadURLExternal": {"files:write"}, "files.completeUploadExternal": {"files:write"},
}
EVENT_OF_SUBSCRIPTION = {"message.channels": "message", "message.groups": "message"}


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def test_the_manifest_declares_what_the_bridge_needs() -> None:
    m = manifest()
    scopes = set(m["oauth_config"]["scopes"]["bot"])
    assert {"chat:write", "commands", "app_mentions:read", "channels:history", "groups:history", "reactions:write",
            "im:write", "users:read", "assistant:write", "files:read", "files:write"} <= scopes
    assert {c["command"] for c in m["features"]["slash_commands"]} == {"/flower", "/stop"}
    assert all(not c["should_escape"] and len(c["description"]) <= 100 for c in m["features"]["slash_commands"])
    shortcuts = m["features"]["shortcuts"]
    assert all(s["type"] == "message" and len(s["name"]) <= 24 for s in shortcuts)
    assert [s["callback_id"] for s in shortcuts] == ["flower_interrupt", "flower_unfollow"]
    settings = m["settings"]
    assert settings["socket_mode_enabled"] is True and settings["interactivity"]["is_enabled"] is True
    assert {"app_mention", "message.channels", "message.groups", "agent_session_stopped"} <= set(
        settings["event_subscriptions"]["bot_events"])
    assert 175 <= len(m["display_information"]["long_description"]) <= 4000  # Slack's bounds, or the paste fails
    assert "request_url" not in json.dumps(m)  # Socket Mode: nothing for Slack to call


async def test_every_declared_entry_point_reaches_the_bot_and_its_calls_are_in_scope(tmp_path: Path) -> None:
    m = manifest()
    async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double) as bot:
        for command in m["features"]["slash_commands"]:
            ack = await double.slash(command["command"], "help", user="UALICE", channel=C1)
            assert ack is not None and ack.get("text"), command["command"]  # a listener answered
        someone = double.person_says(C1, "hello", user="UALICE")
        await double.shortcut(someone, user="UALICE", callback_id=m["features"]["shortcuts"][0]["callback_id"])
        await double.wait_for(lambda d: d.ephemerals_for("UALICE"))
        assert "not in the thread of a live run" in double.ephemerals_for("UALICE")[-1]
        for sub in m["settings"]["event_subscriptions"]["bot_events"]:
            event = {"type": EVENT_OF_SUBSCRIPTION.get(sub, sub), "user": "UALICE", "channel": C1, "ts": "9.1",
                     "thread_ts": "9.0", "text": "<@UBOT> help", "event_ts": "9.1"}
            assert await double.event(event) is None  # acked by a listener (unhandled ones are logged)
        # What the surface does in a run: post, edit, receipts as reactions, the owner's DM.
        surface = bot.frontend.surface
        thread = bot.frontend.ctx.thread(C1, someone.ts)
        ts = await surface.post(thread, OutMessage("k", "prose", "hi"))
        await surface.update(thread, ts, OutMessage("k", "prose", "hi again"))
        receipt = await surface.post(thread, OutMessage("m", "receipt", "📨 Queued", origin=someone.ts, state="queued"))
        delivered = OutMessage("m", "receipt", "📬 Delivered", origin=someone.ts, state="delivered")
        await surface.update(thread, receipt, delivered)
        await surface.direct("UALICE")
        bot.frontend.sessions.want(thread, "processing")
        await double.wait_for(lambda d: d.sessions)
    scopes = set(m["oauth_config"]["scopes"]["bot"])
    called = {c.method for c in double.calls}
    assert called - set(METHOD_SCOPES) == set(), "a method without a known scope"
    for method in called:
        assert METHOD_SCOPES[method] <= scopes, method
    assert {"chat.postMessage", "chat.update", "reactions.add", "reactions.remove", "conversations.open",
            "agents.sessions.setStatus", "chat.postEphemeral"} <= called
