"""A malformed gateway dispatch is logged and skipped; a dead gateway task is noticed and restarted.

Real discord.py against the Discord double: the double's gateway delivers dispatches with a required
field missing (as a buggy proxy, or a Discord change, would), then ordinary commands, which must still
be answered; the client's connection task dies (a fatal close code, a crash inside it) and comes back.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands

from adapters.discord_bridge import DiscordFrontend
from adapters.discord_bridge.connection import Backoff
from adapters.discord_bridge.errors import FAILED, UNKNOWN_COMMAND, Told, told
from adapters.hub import Hub
from adapters.platform import Button, OutMessage, ThreadRef
from adapters.state import MemoryStateStore, RunRecord
from tests.e2e.test_discord_bot_process import Bot, bot_env, no_bot_left_behind
from tests.support.discord_double import TOKEN, DiscordDouble
from tests.support.discord_interactions import Ix
from tests.support.discord_payloads import snowflake
from tests.support.discord_support import discord_double, settings
from tests.support.hub_support import hub_of

__all__ = ["discord_double", "no_bot_left_behind"]


@pytest.fixture
async def bot(discord_double: DiscordDouble, tmp_path: Path) -> AsyncIterator[tuple[DiscordFrontend, Hub]]:
    bridge = DiscordFrontend(settings(discord_double))
    hub = hub_of(bridge.surface, MemoryStateStore(), root=tmp_path / "runs")
    bridge.attach(hub)
    await bridge.start()
    yield bridge, hub
    await asyncio.wait_for(bridge.stop(), 30)


async def helped(d: DiscordDouble, person: Any) -> Ix:
    """`/flower help` answered (the front end is alive and its commands get their callback)."""
    ix = await d.slash(person, "help")
    await d.until(lambda _: ix.original is not None and "/flower run" in ix.original["content"], timeout=30)
    return ix


def without(payload: dict[str, Any], *path: str) -> dict[str, Any]:
    """A copy of a dispatch with a fresh id and the field at `path` removed."""
    bad = copy.deepcopy(payload)
    if "id" in bad:
        bad["id"] = str(snowflake())
    inner = bad
    for key in path[:-1]:
        inner = inner[key]
    del inner[path[-1]]
    return bad


INTERACTION_HOLES = [("data",), ("token",), ("id",), ("member", "user"), ("member",), ("type",)]
MESSAGE_HOLES = [("content",), ("id",), ("channel_id",), ("author",)]


async def a_card(bridge: DiscordFrontend, d: DiscordDouble) -> int:
    """A question card of this bot, for a run it does not know (a click is answered with a refusal)."""
    channel = bridge.client.get_channel(d.channel_id)
    assert isinstance(channel, discord.TextChannel)
    thread = await (await channel.send("a starter")).create_thread(name="a run")
    ref = ThreadRef("discord", str(d.channel_id), str(thread.id))
    card = OutMessage("ask:1-q1", "ask", "Which?", title="❓ Question", buttons=[Button("A", "fl1:ans:r1:1-q1:0")])
    return int(await bridge.surface.post(ref, card))


async def clicked(d: DiscordDouble, person: Any, card: int) -> Ix:
    ix = await d.click(person, card, label="A")
    await d.until(lambda _: ix.acked and ix.texts(), timeout=30)
    return ix


@pytest.mark.parametrize("hole", [("member",), ("member", "user"), ("data",), ("data", "custom_id"), ("token",)],
                         ids="-".join)
async def test_a_malformed_click_is_logged_once_and_later_clicks_still_work(
        discord_double: DiscordDouble, bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        hole: tuple[str, ...]) -> None:
    d, (bridge, _) = discord_double, bot
    alice = d.person("Alice")
    card = await a_card(bridge, d)
    good = await clicked(d, alice, card)
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    await d.gateway.dispatch("INTERACTION_CREATE", without(good.payload, *hole))
    await clicked(d, alice, card)
    warned = [r for r in caplog.records if "malformed INTERACTION_CREATE" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING, [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("event", "hole"), [("INTERACTION_CREATE", h) for h in INTERACTION_HOLES]
                         + [("MESSAGE_CREATE", h) for h in MESSAGE_HOLES], ids=lambda v: "-".join(v)
                         if isinstance(v, tuple) else v)
async def test_a_malformed_dispatch_is_logged_once_and_later_commands_still_work(
        discord_double: DiscordDouble, bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        event: str, hole: tuple[str, ...]) -> None:
    d = discord_double
    alice = d.person("Alice")
    good = await helped(d, alice)
    if event == "INTERACTION_CREATE":
        template = good.payload
    else:
        mid = await d.say(alice, d.channel_id, "hello there")
        template = d.messages[mid]
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    bad = without(template, *hole)
    await d.gateway.dispatch(event, bad)
    after = await helped(d, alice)  # answered: the front end lived through it
    assert after.acked and not after.late
    warned = [r for r in caplog.records if "malformed" in r.getMessage() and event in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING, [r.getMessage() for r in caplog.records]
    assert warned[0].exc_info is None
    secret = str(template.get("token", "")) or "no-token-here"
    ours = [r.getMessage() for r in caplog.records if not r.name.startswith("discord.")]  # (discord.py's debug
    assert not any(secret in m or "hello there" in m for m in ours)                     # lines echo frames)
    assert d.gateway.identifies == 1 and d.gateway.resumes == 0  # skipped in place, no reconnect needed


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("broken", [("author", "member"), ("content", None), ("content", 5), ("content", ["x"]),
                                    ("guild_id", "5")], ids=lambda b: f"{b[0]}-{b[1]!r}")
async def test_a_message_discord_py_parses_but_no_one_wrote_is_one_line_in_a_runs_thread(
        discord_double: DiscordDouble, bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        tmp_path: Path, broken: tuple[str, Any]) -> None:
    """Parts discord.py treats as optional (an author with no member, the content) or cannot place (a guild it
    does not know): the message is parsed, and used to trip the listener (a traceback per message)."""
    d, (bridge, hub) = discord_double, bot
    alice = d.person("Alice")
    channel = bridge.client.get_channel(d.channel_id)
    assert isinstance(channel, discord.TextChannel)
    thread = await (await channel.send("a starter")).create_thread(name="a run")
    ref = ThreadRef("discord", str(d.channel_id), str(thread.id))
    hub.store.save_run(RunRecord("r0000001", ref, str(alice.id), "a task", "waiting", str(tmp_path),
                                 str(tmp_path / "r0000001")))
    hub.store.bind_thread(ref, "r0000001")
    template = d.messages[await d.say(alice, thread.id, "hello there")]
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    key, value = broken
    bad = copy.deepcopy(template)
    bad["id"] = str(snowflake())
    if key == "author":
        del bad["author"], bad["member"]  # (without `member`, discord.py skips a missing author silently)
    else:
        bad[key] = value
    await d.gateway.dispatch("MESSAGE_CREATE", bad)
    await helped(d, alice)  # the front end lived through it
    warned = [r.getMessage() for r in caplog.records if "malformed MESSAGE_CREATE" in r.getMessage()]
    assert len(warned) == 1 and "hello there" not in warned[0], warned
    assert tracebacks(caplog) == [], tracebacks(caplog)


@pytest.mark.parametrize(("options", "said"), [
    ({"task": "x", "asks": "many"}, "`asks` must be a whole number"),
    ({"task": "x", "asks": 2.5}, "`asks` must be a whole number"),
    ({"task": "x", "asks": True}, "`asks` must be a whole number"),
    ({"task": "x", "timeout": "soon"}, "`timeout` must be a number"),
    ({"task": "x", "budget": [1]}, "`budget` must be a number"),
    ({"task": 42}, "`task` must be text"),
], ids=["word-for-int", "float-for-int", "bool-for-int", "word-for-number", "list-for-number", "number-for-text"])
async def test_a_value_of_the_wrong_kind_in_a_slash_option_is_told_plainly_and_starts_nothing(
        discord_double: DiscordDouble, bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        options: dict[str, Any], said: str) -> None:
    d, (_, hub) = discord_double, bot
    alice = d.person("Alice")
    await helped(d, alice)
    caplog.set_level(logging.DEBUG)
    ix = await d.slash(alice, "run", **options)
    await d.until(lambda _: ix.texts(), timeout=30)
    assert ix.texts() == [f"{said}; see `/flower help`."] and ix.acked and not ix.late
    assert tracebacks(caplog) == [], tracebacks(caplog)
    assert len([r for r in caplog.records if "refused" in r.getMessage() and said in r.getMessage()]) == 1
    assert hub.query.runs(live_only=False) == []  # nothing started
    await helped(d, alice)


# ---- what a person is told when their command fails -------------------------------------------------
def renamed(payload: dict[str, Any], *, top: str = "flower", sub: str = "help") -> dict[str, Any]:
    """The same slash command under another name (one Discord still shows but this bot no longer has)."""
    bad = copy.deepcopy(payload)
    bad["id"], bad["token"] = str(snowflake()), secrets.token_urlsafe(24)
    bad["data"]["name"] = top
    bad["data"]["options"][0]["name"] = sub
    return bad


async def shown(d: DiscordDouble, payload: dict[str, Any]) -> str:
    await d.gateway.dispatch("INTERACTION_CREATE", payload)
    await d.until(lambda _: d.interactions.get(int(payload["id"])) is not None
                  and d.interactions[int(payload["id"])].texts(), timeout=30)
    return "\n".join(d.interactions[int(payload["id"])].texts())


@pytest.mark.parametrize(("top", "sub"), [("flower", "nope"), ("flowr", "help")], ids=["sub", "top"])
async def test_an_unknown_command_is_told_plainly_and_logged_in_one_line(
        discord_double: DiscordDouble, bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        top: str, sub: str) -> None:
    d = discord_double
    alice = d.person("Alice")
    good = await helped(d, alice)
    caplog.set_level(logging.INFO)
    bad = renamed(good.payload, top=top, sub=sub)
    d.interactions[int(bad["id"])] = Ix(int(bad["id"]), bad["token"], alice, bad)
    text = await shown(d, bad)
    assert text == "I don't know that command; try `/flower help`."
    [line] = [r for r in caplog.records if "CommandNotFound" in r.getMessage()]
    assert line.levelno == logging.WARNING and line.exc_info is None


async def test_a_failing_command_tells_a_plain_sentence_and_logs_the_detail(
        discord_double: DiscordDouble, bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    d, (_, hub) = discord_double, bot
    alice = d.person("Alice")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'thread'")

    monkeypatch.setattr(hub.query, "status", broken)  # a bug somewhere under /flower status
    caplog.set_level(logging.INFO)
    ix = await d.slash(alice, "status")
    await d.until(lambda _: ix.texts(), timeout=30)
    assert ix.texts() == ["That did not work; the error was logged."]
    assert not any("NoneType" in t or "Error" in t for t in ix.texts())
    logged = [r for r in caplog.records if r.exc_info and "NoneType" in str(r.exc_info[1])]
    assert logged and logged[0].levelno == logging.ERROR  # the detail, with its traceback, for whoever runs it
    monkeypatch.undo()
    await helped(d, alice)  # and the next command works


@pytest.mark.parametrize(("exc", "text", "ours"), [
    (app_commands.CommandNotFound("nope", ["flower"]), UNKNOWN_COMMAND, False),
    (app_commands.CheckFailure("no"), "You can't use that command here.", False),
    (aiohttp.ClientConnectionError("reset by peer"), "Discord did not answer in time; nothing was changed, try again "
                                                     "in a moment.", True),
    (TimeoutError(), "Discord did not answer in time; nothing was changed, try again in a moment.", True),
    (KeyError("thread"), FAILED, True),
])
def test_what_a_person_is_told_never_carries_the_exception(exc: BaseException, text: str, ours: bool) -> None:
    assert told(exc) == Told(text, ours)
    assert type(exc).__name__ not in told(exc).text


# ---- a dead connection task ---------------------------------------------------------------------
QUICK = Backoff(first_s=0.05, max_s=1.0, fatal_s=0.3)


@pytest.fixture
async def quick_bot(discord_double: DiscordDouble, tmp_path: Path) -> AsyncIterator[tuple[DiscordFrontend, Hub]]:
    bridge = DiscordFrontend(settings(discord_double, backoff=QUICK))
    hub = hub_of(bridge.surface, MemoryStateStore(), root=tmp_path / "runs")
    bridge.attach(hub)
    await bridge.start()
    yield bridge, hub
    await asyncio.wait_for(bridge.stop(), 30)


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("adapters.")]


@pytest.mark.parametrize("code", [4004, 4013, 4014])
async def test_a_fatal_close_code_is_logged_and_the_connection_made_again(
        discord_double: DiscordDouble, quick_bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        code: int) -> None:
    d, (bridge, _) = discord_double, quick_bot
    alice = d.person("Alice")
    await helped(d, alice)
    caplog.set_level(logging.INFO)
    await d.gateway.close_with(code)  # discord.py closes the client on these and stops reconnecting
    await d.until(lambda _: d.gateway.identifies == 2 and d.gateway.connected, timeout=30)
    await helped(d, alice)
    await asyncio.wait_for(bridge.lifeline.up.wait(), 30)
    assert bridge.lifeline.restarts == 1
    [down] = errors(caplog)
    assert f"close code {code}" in down.getMessage() and down.exc_info is None
    assert any("connected again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("frame", [{"op": 10, "d": {}, "s": None, "t": None},  # a HELLO without its interval
                                   {"op": 0, "t": "READY", "s": 99, "d": {}}],  # a READY without a session
                         ids=["hello", "ready"])
async def test_a_crash_of_the_connection_task_is_logged_and_the_connection_made_again(
        discord_double: DiscordDouble, quick_bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
        frame: dict[str, Any]) -> None:
    """Frames discord.py handles in its gateway loop itself (not in a parser): they end its task."""
    d, (bridge, _) = discord_double, quick_bot
    alice = d.person("Alice")
    await helped(d, alice)
    caplog.set_level(logging.INFO)
    await d.gateway.send_raw(frame)
    await d.until(lambda _: d.gateway.identifies == 2 and d.gateway.connected, timeout=30)
    await helped(d, alice)
    assert bridge.lifeline.restarts == 1
    [died] = errors(caplog)
    assert "connection died" in died.getMessage() and died.exc_info is not None  # loud: a traceback
    assert d.gateway.connections == 2  # the dead task's socket was closed, not left heartbeating


async def test_stop_during_the_wait_before_connecting_again_is_prompt(discord_double: DiscordDouble,
                                                                     tmp_path: Path) -> None:
    """SIGTERM while the connection is down and the next attempt is minutes away: the bridge stops now."""
    d = discord_double
    bridge = DiscordFrontend(settings(d, backoff=Backoff(first_s=600, max_s=600, fatal_s=600)))
    bridge.attach(hub_of(bridge.surface, MemoryStateStore(), root=tmp_path / "runs"))
    await bridge.start()
    try:
        await d.gateway.close_with(4004)
        await d.until(lambda _: bridge.client.is_closed(), timeout=30)
    finally:
        await asyncio.wait_for(bridge.stop(), 5)
    assert bridge.lifeline.restarts == 0 and d.gateway.identifies == 1


def test_the_wait_after_a_crash_doubles_up_to_a_bound_and_starts_over_after_a_good_while() -> None:
    b = Backoff(first_s=1.0, max_s=60.0)
    waits, previous = [], None
    for _ in range(8):
        previous = b.after_crash(previous, lived_s=0.5)
        waits.append(previous)
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    assert b.after_crash(60.0, lived_s=61.0) == 1.0  # the last connection held: a fresh start


async def test_a_login_refused_while_connecting_again_is_retried_after_the_long_wait(
        discord_double: DiscordDouble, quick_bot: tuple[DiscordFrontend, Hub], caplog: pytest.LogCaptureFixture,
) -> None:
    d, (bridge, _) = discord_double, quick_bot
    alice = d.person("Alice")
    first = bridge.client
    caplog.set_level(logging.INFO)
    d.fail("GET", "/users/@me", status=401, times=1)  # the token is refused once, then taken again
    await d.gateway.close_with(4004)
    await d.until(lambda _: d.gateway.identifies == 2 and d.gateway.connected, timeout=30)
    await helped(d, alice)
    assert bridge.lifeline.restarts == 2 and bridge.client is not first and bridge.surface.client is bridge.client
    assert [r.getMessage().split(";")[0] for r in errors(caplog)] == [
        "discord: the gateway connection is down: close code 4004 (authentication failed: DISCORD_TOKEN was refused)",
        "discord: the gateway connection is down: Discord refused DISCORD_TOKEN (401 Unauthorized)"]


async def test_the_bot_process_lives_through_both_and_sigterm_still_ends_it(tmp_path: Path,
                                                                           discord_double: DiscordDouble) -> None:
    d = discord_double
    (tmp_path / "bot.toml").write_text("[discord]\nready_timeout = 0.1\n", encoding="utf-8")
    bot = await Bot.start(["discord", "--root", str(tmp_path / "root"), "--config", str(tmp_path / "bot.toml"),
                           "--demo"], bot_env(d.env()))
    try:
        await d.until(lambda _: any("flower-bot ready" in line for line in bot.lines), 60)
        alice = d.person("Alice")
        good = await helped(d, alice)
        await d.gateway.dispatch("INTERACTION_CREATE", without(good.payload, "token"))
        await d.gateway.dispatch("MESSAGE_CREATE", without(d.messages[await d.say(alice, d.channel_id, "hi")],
                                                           "content"))
        await helped(d, alice)
        await d.gateway.send_raw({"op": 10, "d": {}, "s": None, "t": None})  # the connection task dies
        await d.until(lambda _: d.gateway.identifies == 2 and d.gateway.connected, timeout=60)
        await helped(d, alice)
    finally:
        code = await bot.stop()  # SIGTERM, 30 s deadline (then SIGABRT dumps the stacks)
        print(f"---- flower-bot output ----\n{bot.output}")
    assert code == 0
    assert bot.output.count("skipped a malformed") == 2
    assert bot.output.count("the gateway connection died (no 'heartbeat_interval' field") == 1
    assert TOKEN not in bot.output and good.token not in bot.output
