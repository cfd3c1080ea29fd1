"""Answering one interaction: acknowledged within Discord's 3 seconds, then ephemeral words.

`ack()` starts the acknowledgement (a defer) at once, in the background, so the hub call runs
beside it; `say()` waits for it, then edits the "thinking…" placeholder the first time (slash
commands) or sends an ephemeral follow-up. While a handler runs inside `async with active()`, the
surface's `notify` for that same user lands here too, so a hub refusal reaches the person who
acted, only them, exactly once; and a handler that fails says so to that person instead of
leaving them with a spinner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import discord
from discord import ui

from adapters.discord_bridge.errors import told
from adapters.discord_bridge.render import NO_MENTIONS
from adapters.platform.limits import DISCORD

__all__ = ["Reply", "current_reply", "names_as_mentions"]

log = logging.getLogger(__name__)
_current: ContextVar[Reply | None] = ContextVar("flower_discord_reply", default=None)
_SNOWFLAKE = re.compile(r"(?<![<@#&\d])(\d{17,20})(?!\d)")


def current_reply() -> Reply | None:
    return _current.get()


def names_as_mentions(text: str) -> str:
    """Bare user ids in hub wording ("answered by 81234…") -> <@id>, which Discord shows as the name
    (no ping: every reply is ephemeral and sent with mentions disabled)."""
    return _SNOWFLAKE.sub(r"<@\1>", text)


class Reply:
    def __init__(self, interaction: discord.Interaction[Any]) -> None:
        self.interaction = interaction
        self.user_id = str(interaction.user.id)
        self._ack: asyncio.Task[Any] | None = None
        self._thinking = False
        self._placeholder_used = False
        self._said: set[str] = set()

    def ack(self, *, thinking: bool) -> None:
        """Acknowledge now: a "thinking…" placeholder (thinking=True) or a silent deferred update."""
        if self._ack is None and not self.interaction.response.is_done():
            self._thinking = thinking
            self._ack = asyncio.create_task(self.interaction.response.defer(ephemeral=True, thinking=thinking))

    async def acked(self) -> None:
        if self._ack is not None:
            try:
                await self._ack
            except discord.HTTPException as exc:  # late or already answered: nothing more to say here
                log.warning("interaction %s not acknowledged: %s", self.interaction.id, exc)

    async def say(self, text: str, *, view: ui.View | None = None) -> None:
        """Show `text` to the acting user only (each distinct text once)."""
        text = names_as_mentions(text.strip())[:DISCORD.text_max] or "…"
        if text in self._said and view is None:
            return
        self._said.add(text)
        await self.acked()
        extra: dict[str, Any] = {"view": view} if view is not None else {}
        try:
            if not self.interaction.response.is_done():
                await self.interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS,
                                                              **extra)
            elif self._thinking and not self._placeholder_used:
                self._placeholder_used = True
                await self.interaction.edit_original_response(content=text, allowed_mentions=NO_MENTIONS, **extra)
            else:
                await self.interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS, **extra)
        except discord.HTTPException as exc:  # the token expired, Discord is down: the action itself stands
            log.warning("could not answer interaction %s: %s", self.interaction.id, exc)

    async def finish(self) -> None:
        """Never leave a "thinking…" placeholder behind, nor an acknowledgement in flight."""
        await self.acked()
        if self._thinking and not self._placeholder_used:
            await self.say("Done.")

    @contextlib.asynccontextmanager
    async def active(self) -> AsyncIterator[Reply]:
        """Handle the interaction: notices for this user come here; a failure is logged and told to
        them (never raised into discord.py); the answer is complete when the block ends."""
        token = _current.set(self)
        try:
            yield self
        except Exception as exc:
            log.exception("interaction %s failed", self.interaction.id)
            await self.say(told(exc).text)  # a plain sentence; the detail is the log's
        finally:
            _current.reset(token)
            await self.finish()
