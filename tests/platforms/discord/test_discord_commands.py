"""The Discord bridge without a model: commands that explain, the surface's calls and errors, start-up
refusals. Real discord.py against the Discord double; no run is started, so no CLI is spawned."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import discord
import pytest

from adapters.discord_bridge import INTENT_HINT, DiscordFrontend, DiscordStartError
from adapters.hub import Hub
from adapters.platform import Button, OutMessage, PermanentSurfaceError, ThreadRef, TransientSurfaceError
from adapters.state import ChannelPolicy, MemoryStateStore
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, settings
from tests.support.hub_support import hub_of

__all__ = ["discord_double"]


@pytest.fixture
async def bot(discord_double: DiscordDouble, tmp_path: Path) -> AsyncIterator[tuple[DiscordFrontend, Hub]]:
    bridge = DiscordFrontend(settings(discord_double))
    hub = hub_of(bridge.surface, MemoryStateStore(), root=tmp_path / "runs")  # type: ignore[arg-type]
    bridge.attach(hub)
    await bridge.start()
    yield bridge, hub
    await bridge.stop()


async def a_thread(bridge: DiscordFrontend, channel_id: int, name: str = "side talk") -> discord.Thread:
    channel = bridge.client.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    starter = await channel.send("a starter")
    return await starter.create_thread(name=name)


async def test_commands_explain_bad_input_to_the_caller_alone(discord_double: DiscordDouble,
                                                              bot: tuple[DiscordFrontend, Hub]) -> None:
    d, (bridge, hub) = discord_double, bot
    alice = d.person("Alice")
    side = await a_thread(bridge, d.channel_id)
    before = len(d.bot_messages(d.channel_id))

    async def answer(sub: str, channel_id: int | None = None, **options: object) -> str:
        ix = await d.slash(alice, sub, channel_id=channel_id, **options)
        await d.until(lambda _: ix.original is not None and ix.original["content"])
        assert ix.callbacks[0]["type"] == 5 and ix.callbacks[0]["data"]["flags"] == 64  # ephemeral, in time
        assert ix.original is not None
        return str(ix.original["content"])

    assert "/flower run task:" in await answer("help")
    assert "Say what the run should do" in await answer("run", task="   ")
    assert "Start runs from a text channel" in await answer("run", side.id, task="fix it")
    assert "inside a run's thread" in await answer("end")
    assert "inside a run's thread, or name the run" in await answer("wake")
    assert "No run rnothere." in await answer("wake", run="rnothere")
    assert "You have no runs going" in await answer("stop")
    assert "No runs going" in await answer("status")
    assert "No runs in this channel yet" in await answer("runs")
    hub.store.set_channel_policy(f"discord:{d.channel_id}", ChannelPolicy(starters={"someone-else"}))
    assert "Not started: you are not allowed to start runs" in await answer("run", task="fix it")
    hub.store.set_channel_policy(f"discord:{d.channel_id}", ChannelPolicy())
    assert len(d.bot_messages(d.channel_id)) == before and hub.store.list_runs() == []  # nothing was started
    hub.max_runs = 0  # refused by the hub itself, once the thread exists: the starter says so, the thread is closed
    assert "the limit is 0" in await answer("run", task="fix it")
    starter = d.bot_messages(d.channel_id)[-1]
    await d.until(lambda _: d.channels[int(starter["id"])]["thread_metadata"]["archived"])
    assert starter["embeds"][0]["title"] == "✖️ Not started" and "the limit is 0" in d.text(starter)
    assert hub.store.list_runs() == []
    assert all(ix.acked and not ix.late and not ix.followups for ix in d.interactions.values())


async def test_the_surface_posts_edits_reacts_and_maps_errors(discord_double: DiscordDouble,
                                                             bot: tuple[DiscordFrontend, Hub]) -> None:
    d, (bridge, hub) = discord_double, bot
    surface = bridge.surface
    thread = await a_thread(bridge, d.channel_id, "a run")
    ref = ThreadRef("discord", str(d.channel_id), str(thread.id))

    # The status card is the starter message, in the parent channel.
    assert await surface.post(ref, OutMessage("status", "status", "Task: x", title="▶️ Running")) == str(thread.id)
    assert d.messages[thread.id]["embeds"][0]["title"] == "▶️ Running" and d.messages[thread.id]["content"] == ""
    card = OutMessage("ask:1-q1", "ask", "Which?", title="❓ Question", buttons=[Button("A", "fl1:ans:r1:1-q1:0")])
    mid = await surface.post(ref, card)
    assert d.messages[int(mid)]["channel_id"] == str(thread.id) and d.custom_ids(d.messages[int(mid)]) == [
        "fl1:ans:r1:1-q1:0"]
    await surface.update(ref, mid, OutMessage("ask:1-q1", "ask", "Which?\n\nAnswer: A", title="✅ Answered"))
    assert d.messages[int(mid)]["components"] == [] and "Answer: A" in d.text(d.messages[int(mid)])

    # Receipts on the person's own message: reactions, swapped when delivered.
    alice = d.person("Alice")
    own = await d.say(alice, thread.id, "also this")
    rid = await surface.post(ref, OutMessage("mail:e:m1", "receipt", "📨 Queued for the agent", origin=str(own),
                                          state="queued"))
    assert d.reactions_on(own) == ["📨"]
    await surface.update(ref, rid, OutMessage("mail:e:m1", "receipt", "📬 Delivered to the agent", origin=str(own),
                                               state="delivered"))
    assert d.reactions_on(own) == ["📬"]

    # Errors: a long 429 comes back to the outbox with its retry_after; refusals are permanent.
    d.fail("POST", rf"/channels/{thread.id}/messages", retry_after=31.0)
    with pytest.raises(TransientSurfaceError) as limited:
        await surface.post(ref, OutMessage("prose:1", "prose", "hello"))
    assert limited.value.retry_after == 31.0
    d.fail("POST", rf"/channels/{thread.id}/messages", status=403)
    with pytest.raises(PermanentSurfaceError):
        await surface.post(ref, OutMessage("prose:2", "prose", "hello"))
    with pytest.raises(PermanentSurfaceError, match="10008"):
        await surface.update(ref, "123456789012345678", OutMessage("prose:3", "prose", "gone"))

    # notify outside an interaction: a direct message; with DMs closed, a line in the thread, no pings.
    hub.people.note(str(alice.id), "Alice")
    await surface.notify(ref, str(alice.id), "only you may see this")
    dm = next(m for m in d.messages.values() if d.channels[int(m["channel_id"])]["type"] == 1)
    assert dm["content"] == "only you may see this"
    d.dms_closed.add(alice.id)
    await surface.notify(ref, str(alice.id), "your message was not sent")
    line = d.bot_messages(thread.id)[-1]
    assert line["content"] == "↪ Alice: your message was not sent"
    writes = [c for c in d.calls
              if c.method in ("POST", "PATCH") and re.fullmatch(r"/channels/\d+/messages(/\d+)?", c.path)]
    assert all(c.body["allowed_mentions"] == {"parse": []} for c in writes)


async def test_start_refusals_are_one_clear_line(discord_double: DiscordDouble) -> None:
    d = discord_double
    bad = DiscordFrontend(settings(d, token="not-the-token"))
    with pytest.raises(DiscordStartError, match="refused DISCORD_TOKEN") as err:
        await bad.start()
    assert "not-the-token" not in str(err.value)

    d.gateway.refuse_privileged = True
    no_intent = DiscordFrontend(settings(d))
    with pytest.raises(DiscordStartError) as err:
        await no_intent.start()
    assert str(err.value) == INTENT_HINT and "MESSAGE CONTENT INTENT" in INTENT_HINT

    # With only the REST base configured, the gateway URL is the one that API names.
    d.gateway.refuse_privileged = False
    found = DiscordFrontend(settings(d, gateway_url=None))
    await found.start()
    try:
        assert d.rest("GET", "/gateway/bot") and d.gateway.connected
    finally:
        await found.stop()
