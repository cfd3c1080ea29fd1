"""One run, many places, through ONE real `flower-bot web slack discord` process (the Slack and
Discord doubles, the web API, the model double as the model).

A run started in Slack (`/flower <task>`) is followed from Discord (`/flower follow run:<id>`) and
listed on the web page, whose thread carries its card. Its question, answered on the web, closes the
Slack, Discord and DM cards — each names who answered and where; a late click on Discord's stale
copy is told it is settled and changes nothing. With `[bot] dm_after_s = 0` every question also
reaches the owner's Slack DM at once, and the DM card's button answers the second question.
"""

from __future__ import annotations

import asyncio
import copy
import json
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_discord_bot_process import Bot, bot_env, no_bot_left_behind
from tests.support.discord_double import TOKEN, DiscordDouble
from tests.support.discord_support import discord_double, open_card, settled_card
from tests.support.hub_support import TWO_QUESTIONS_SCENARIO
from tests.support.slack_double import APP_TOKEN, BOT_TOKEN, Msg, SlackDouble
from tests.support.slack_support import C1, card, root_of

__all__ = ["discord_double", "no_bot_left_behind"]

SCENARIO = TWO_QUESTIONS_SCENARIO
DM = "DALICE"  # the Slack double's DM channel with UALICE (conversations.open)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def slack_text(m: Msg) -> str:
    return " ".join([m.header(), m.body(), *m.fields()])


def dm_card(double: SlackDouble, question: str, *, open_: bool = True) -> Msg | None:
    return next((m for m in double.roots(DM) if question in m.body() and bool(m.buttons()) == open_), None)


async def web_thread_shows(session: aiohttp.ClientSession, base: str, run_id: str, question: str) -> dict[str, Any]:
    """The page's own WebSocket, watching the run: the message of its thread that carries `question`
    with its buttons (frames come as the thread changes, so this waits on them, not on a clock)."""
    async with session.ws_connect(f"{base}/ws") as ws:
        await ws.send_json({"op": "watch", "run": run_id, "after": 0, "events_after": 0})
        messages: dict[str, dict[str, Any]] = {}
        async with asyncio.timeout(60):
            async for frame in ws:
                data = json.loads(frame.data)
                if data.get("type") == "error":
                    raise AssertionError(data)
                if data.get("type") != "thread":
                    continue
                if data.get("reset"):
                    messages.clear()
                messages.update({m["key"]: m for m in data["messages"]})
                found = next((m for m in messages.values() if question in m["text"] and m["buttons"]), None)
                if found is not None:
                    return found
    raise AssertionError("the page's socket closed before the card showed")


@pytest.mark.timeout(300)  # one bot process with three front ends and a CLI session, on a shared machine
async def test_a_slack_run_followed_on_discord_answered_on_the_web_and_from_the_owners_dm(
        tmp_path: Path, discord_double: DiscordDouble) -> None:
    d = discord_double
    (tmp_path / "life.toml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "bot.toml").write_text("[bot]\ndm_after_s = 0\n\n[discord]\nready_timeout = 0.1\n", encoding="utf-8")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args = ["web", "slack", "discord", "--port", str(port), "--root", str(tmp_path / "root"), "--config",
            str(tmp_path / "bot.toml"), "--flow", "single", "--demo", "--scenario", str(tmp_path / "life.toml"),
            "--timeout", "120"]
    dora = d.person("Dora")
    bot: Bot | None = None
    async with SlackDouble(names={"UALICE": "Alice"}) as slack, aiohttp.ClientSession() as http:
        try:
            bot = await Bot.start(args, bot_env({**slack.env(), **d.env()}))
            await d.until(lambda _: any("flower-bot ready" in line for line in bot.lines) or bot.proc.returncode
                          is not None, 90)
            assert bot.proc.returncode is None, "the bot did not come up"

            # Started in Slack; the web page lists it and its thread shows the card.
            assert await slack.slash("/flower", "pick indentation please", user="UALICE", channel=C1) is None
            await slack.wait_for(lambda s: s.roots(C1) and card(s, C1, root_of(s).ts, "Tabs or spaces?"), 60)
            root = root_of(slack).ts
            async with http.get(f"{base}/api/runs") as resp:
                [run] = (await resp.json())["runs"]
            run_id = run["id"]
            assert run["platform"] == "slack" and run["live"] and run["page_thread"] is not None
            web_card = await web_thread_shows(http, base, run_id, "Tabs or spaces?")
            assert {b["label"] for b in web_card["buttons"]} >= {"tabs", "spaces"}

            # Followed from Discord: a starter message and a thread, which gets the open card at once.
            followed = await d.slash(dora, "follow", run=run_id)
            await d.until(lambda _: any("Following run" in t for t in followed.texts()), 60)
            thread = int(next(m for m in d.bot_messages(d.channel_id) if "thread" in m)["id"])
            discord_card = await d.until(lambda _: open_card(d, thread, "Tabs or spaces?"), 60)
            stale = copy.deepcopy(discord_card)  # what Dora's screen still shows later
            # The starter became the run's status card (its footer names the run and who started it).
            await d.until(lambda _: not d.messages[thread]["embeds"][0]["title"].startswith("👀"), 30)
            footer = d.messages[thread]["embeds"][0]["footer"]["text"]
            assert footer.lower() == f"run {run_id} · started by alice"
            await slack.wait_for(lambda s: s.find(C1, root, lambda m: "following this run from Discord" in m.body()),
                                 60)

            # The owner's DM got the card too (dm_after_s = 0).
            await slack.wait_for(lambda s: dm_card(s, "Tabs or spaces?"), 60)
            assert slack.called("conversations.open")

            # Answered on the web: every other place closes its card, saying who and where.
            async with http.get(f"{base}/api/runs/{run_id}/asks") as resp:
                [ask] = await resp.json()
            async with http.post(f"{base}/api/runs/{run_id}/answer", json={"ask_id": ask["id"], "text": "spaces"}
                                 ) as resp:
                assert resp.status == 200, await resp.text()
            settled_slack = await slack.wait_for(lambda s: card(s, C1, root, "Tabs or spaces?", open_=False), 60)
            assert "on the web page" in slack_text(settled_slack) and "spaces" in slack_text(settled_slack)
            settled_discord = await d.until(lambda _: settled_card(d, thread, "Tabs or spaces?"), 60)
            assert "on the web page" in d.text(settled_discord)
            settled_dm = await slack.wait_for(lambda s: dm_card(s, "Tabs or spaces?", open_=False), 60)
            assert "on the web page" in slack_text(settled_dm)
            await slack.wait_for(lambda s: s.find(C1, root, lambda m: "Got spaces. One more." in m.body()), 60)

            # A late click on Discord's stale copy: told it is settled, nothing changes anywhere.
            before_discord, before_slack = copy.deepcopy(settled_discord), slack_text(settled_slack)
            late = await d.click(dora, int(stale["id"]), label="tabs", seen=stale)
            await d.until(lambda _: late.texts(), 30)
            assert "already settled (answered by web)" in late.texts()[0]
            assert d.messages[int(stale["id"])]["components"] == before_discord["components"] == []
            assert d.text(d.messages[int(stale["id"])]) == d.text(before_discord)
            assert slack_text(card(slack, C1, root, "Tabs or spaces?", open_=False) or settled_slack) == before_slack

            # The second question: the DM card's button answers it, and every place shows the outcome.
            dm_q2 = await slack.wait_for(lambda s: dm_card(s, "Dark or light?"), 60)
            await open_on_discord(d, thread, "Dark or light?")
            # ... while Discord sheds load: a 429 storm on its messages holds back that thread only.
            d.fail("POST", rf"/channels/{thread}/messages", times=3, retry_after=2.0)
            d.fail("PATCH", rf"/channels/{thread}/messages/\d+", times=3, retry_after=2.0)
            await slack.click(dm_q2, "dark", user="UALICE")
            await slack.wait_for(lambda s: s.find(C1, root, lambda m: "Going with dark." in m.body()), 90)
            assert open_card(d, thread, "Dark or light?") is not None  # Discord still waits out its 429s
            assert any(c.status == 429 for c in d.calls)
            q2_home = await slack.wait_for(lambda s: card(s, C1, root, "Dark or light?", open_=False), 60)
            assert "Answered by Alice on Slack" in slack_text(q2_home)  # the display name users.info gives
            q2_discord = await d.until(lambda _: settled_card(d, thread, "Dark or light?"), 60)
            assert "Answered by Alice on Slack" in d.text(q2_discord)
            await slack.wait_for(lambda s: s.find(C1, root, lambda m: m.header() == "✅ Finished"), 60)
            await d.until(lambda _: "✅" in d.text(d.messages[thread]), 60)
            assert await bot.stop() == 0
        finally:
            if bot is not None:
                if bot.proc.returncode is None:
                    await bot.stop()
                print(f"---- flower-bot output ----\n{bot.output}")  # shown when the test fails
    assert "Traceback" not in bot.output
    for secret in (BOT_TOKEN, APP_TOKEN, TOKEN):
        assert secret not in bot.output


async def open_on_discord(d: DiscordDouble, thread: int, question: str) -> dict[str, Any]:
    return await d.until(lambda _: open_card(d, thread, question), 60)  # type: ignore[no-any-return]
