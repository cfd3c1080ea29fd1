"""DiscordSurface: the hub's neutral messages, posted and edited through discord.py.

Where things go. A run's thread is `ThreadRef("discord", <text channel id>, <thread id>)`. The
thread was created from the run's starter message in the text channel, so on Discord the thread's
id *is* that message's id: the status card lives on the starter message (a "status" post edits it
and returns the thread id), and a message id equal to the thread id always means "in the parent
channel". Everything else the run says goes into the thread.

Receipts for inbox mail that name the person's own message (`OutMessage.origin`) become reactions
on that message: 📨 when queued, swapped for 📬 once delivered. The synthetic id "react:<origin>"
stands for them, so the outbox can "edit" a receipt after a restart too.

`notify` (a refusal or a note for one person): an ephemeral follow-up when that person's
interaction is being answered right now; otherwise a direct message; if their DMs are closed, one
short line in the thread that names them without pinging anyone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import discord

from adapters.discord_bridge.errors import surface_errors
from adapters.discord_bridge.files import file_for
from adapters.discord_bridge.render import NO_MENTIONS, render
from adapters.discord_bridge.reply import current_reply
from adapters.platform import (
    DISCORD,
    LiveText,
    OutMessage,
    PermanentSurfaceError,
    PlatformLimits,
    PlatformSurface,
    ThreadRef,
)

__all__ = ["DELIVERED", "QUEUED", "REACTION_PREFIX", "DiscordSurface"]

log = logging.getLogger(__name__)

REACTION_PREFIX = "react:"
QUEUED, DELIVERED = "📨", "📬"
CURSOR = " ▍"  # ends a message still being written
TASK_MARKS = {"pending": "☐", "in_progress": "◐", "complete": "☑", "error": "✖"}  # a plan's checklist, tool calls


class DiscordSurface(PlatformSurface):
    name = "discord"
    place = "Discord"  # how cards of a run shown in several places name this one ("answered by … on Discord")
    limits: PlatformLimits = DISCORD

    def __init__(self, client: discord.Client, *, footer: Callable[[ThreadRef], str] | None = None,
                 who: Callable[[str], str] | None = None) -> None:
        self.client = client
        self.footer = footer  # the status card's footer ("run r1 · started by Ana"), filled in by the bridge
        self.who = who or (lambda user: user)

    # ---- the Surface contract (all of it: place and direct too) ----------------------------------
    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        if msg.kind == "status" and thread.thread:
            await self.update(thread, thread.thread, msg)
            return thread.thread
        if msg.kind == "receipt" and msg.origin:
            await self._receipt(thread, msg.origin, msg.state == "delivered")
            return REACTION_PREFIX + msg.origin
        rendered = render(msg, footer=self._footer(thread, msg))
        async with surface_errors(f"post {msg.key}"):
            channel = self._channel(thread.thread or thread.channel)
            kwargs = rendered.send_kwargs()
            shared = await file_for(msg, channel)  # a file the agent shared goes with the message (files.py)
            if shared is not None:
                kwargs["file"] = shared
            sent = await channel.send(**kwargs)
        return str(sent.id)

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        if message_id.startswith(REACTION_PREFIX):
            await self._receipt(thread, message_id.removeprefix(REACTION_PREFIX), msg.state == "delivered")
            return
        where = thread.channel if message_id == thread.thread or not thread.thread else thread.thread
        rendered = render(msg, footer=self._footer(thread, msg))
        async with surface_errors(f"edit {msg.key}"):
            if not message_id.isdigit():
                raise PermanentSurfaceError(f"not a Discord message id: {message_id!r}")
            await self._channel(where).get_partial_message(int(message_id)).edit(**rendered.edit_kwargs())

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        """A message being written: posted, then edited as it grows (the outbox paces the edits within the
        channel's limits and coalesces the words between them); the last edit is the complete text."""
        if live.earlier and message_id is not None:  # an earlier process left it streaming: keep its words
            return await self._close_earlier(thread, message_id, live.note)
        text = live.text
        if live.done and live.note:
            text = f"{text}\n\n*{live.note}*"
        elif not live.done and not live.plan:
            text += CURSOR
        lines = [f"{TASK_MARKS.get(t.status, '•')} {t.title}" + (f" — {t.output}" if t.output else "")
                 for t in live.tasks]
        if lines:  # the plan as a checklist; a turn's tool calls under its words (when they fit: words first)
            head = [f"**{live.title or 'Plan'}**"] if live.plan else []
            with_tasks = "\n".join([*head, *lines]) if live.plan else f"{text}\n" + "\n".join(f"-# {x}" for x in lines)
            text = with_tasks if live.plan or len(with_tasks) <= self.limits.text_max else text
        if len(text) > self.limits.text_max:
            text = text[: self.limits.text_max - 1] + "…"
        msg = OutMessage(live.key, "live", text.strip() or "…", live="done" if live.done else "open")
        if message_id is None:
            return await self.post(thread, msg)
        await self.update(thread, message_id, msg)
        return message_id

    async def _close_earlier(self, thread: ThreadRef, message_id: str, note: str) -> str:
        if not message_id.isdigit():
            raise PermanentSurfaceError(f"not a Discord message id: {message_id!r}")
        async with surface_errors(f"close stream {message_id}"):
            found = await self._channel(thread.thread or thread.channel).fetch_message(int(message_id))
            text = found.content.removesuffix(CURSOR) + (f"\n\n*{note}*" if note else "")
            await found.edit(content=text[: self.limits.text_max], allowed_mentions=NO_MENTIONS)
        return message_id

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        reply = current_reply()
        if reply is not None and reply.user_id == user:
            await reply.say(text)
            return
        try:
            async with surface_errors(f"DM to {user}"):
                dm = await self.client.create_dm(discord.Object(int(user)))
                await dm.send(text[:DISCORD.text_max], allowed_mentions=NO_MENTIONS)
            return
        except PermanentSurfaceError as exc:  # DMs closed (50007) or an unknown user: say it in the thread
            log.info("could not DM %s (%s); telling them in the thread", user, exc)
        line = f"↪ {self.who(user)}: {text}"[:DISCORD.text_max]
        async with surface_errors("thread line"):
            await self._channel(thread.thread or thread.channel).send(line, allowed_mentions=NO_MENTIONS)

    async def direct(self, user: str) -> ThreadRef:
        """The user's direct message channel with the bot (the hub sends a run's owner a question that
        waited there); messages go straight into it (no thread part)."""
        if not user.isdigit():
            raise PermanentSurfaceError(f"not a Discord user id: {user!r}")
        async with surface_errors(f"DM channel of {user}"):
            dm = await self.client.create_dm(discord.Object(int(user)))
        return ThreadRef("discord", str(dm.id), "")

    # ---- pieces ---------------------------------------------------------------------------------
    def _channel(self, channel_id: str) -> discord.PartialMessageable:
        if not channel_id.isdigit():
            raise PermanentSurfaceError(f"not a Discord channel id: {channel_id!r}")
        return self.client.get_partial_messageable(int(channel_id))

    def _footer(self, thread: ThreadRef, msg: OutMessage) -> str:
        if msg.kind != "status" or self.footer is None:
            return ""
        try:
            return self.footer(thread)
        except Exception as exc:  # a footer is decoration: never fail a post for it
            log.debug("status footer for %s failed: %r", thread, exc)
            return ""

    async def _receipt(self, thread: ThreadRef, origin: str, delivered: bool) -> None:
        async with surface_errors(f"reaction on {origin}"):
            if not origin.isdigit():
                raise PermanentSurfaceError(f"not a Discord message id: {origin!r}")
            target: Any = self._channel(thread.thread or thread.channel).get_partial_message(int(origin))
            await target.add_reaction(DELIVERED if delivered else QUEUED)
            if delivered and self.client.user is not None:
                await target.remove_reaction(QUEUED, self.client.user)
