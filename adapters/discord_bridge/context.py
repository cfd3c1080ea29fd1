"""What every inbound handler shares: the hub, who people are, where a run's thread is, dedupe.

The hub arrives after the client is built (`attach`); handlers that run before it answer with a
polite "not ready". Deduplication is by Discord's own ids (interaction ids, message ids) in the
hub's state store, so a dispatch replayed after a gateway resume, or delivered twice, acts once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord

from adapters.hub import IntentResult
from adapters.platform import Surface, SurfaceError, ThreadRef

if TYPE_CHECKING:
    from adapters.discord_bridge.reply import Reply
    from adapters.hub import Hub

__all__ = ["PLATFORM", "DiscordContext"]

PLATFORM = "discord"

log = logging.getLogger(__name__)


class DiscordContext:
    def __init__(self) -> None:
        self._hub: Hub | None = None
        self.surface: Surface | None = None  # set by the front end: how one person is told something alone

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            raise RuntimeError("the Discord bridge has no hub yet (attach() it first)")
        return self._hub

    def attach(self, hub: Hub) -> None:
        self._hub = hub

    @property
    def ready(self) -> bool:
        return self._hub is not None

    # ---- people ----------------------------------------------------------------------------------
    def note(self, who: discord.User | discord.Member) -> str:
        """The hub's user id for this person (the snowflake as text), with their name and roles noted."""
        user = str(who.id)
        roles = [f"role:{r.id}" for r in who.roles] if isinstance(who, discord.Member) else None
        self.hub.hooks.note(user, who.display_name, roles)
        return user

    # ---- places ----------------------------------------------------------------------------------
    def thread_of(self, channel: Any) -> ThreadRef | None:
        """The ThreadRef of a thread channel (None for anything else)."""
        if isinstance(channel, discord.Thread) and channel.parent_id:
            return ThreadRef(PLATFORM, str(channel.parent_id), str(channel.id))
        if isinstance(channel, discord.PartialMessageable) and channel.id:  # not cached: known runs only
            return self.hub.query.thread_by_id(PLATFORM, str(channel.id))
        return None

    def where(self, channel: Any) -> ThreadRef | None:
        """The place an intent comes from, for cards that say where they were answered: the thread,
        else the channel itself (a direct message)."""
        thread = self.thread_of(channel)
        if thread is None and getattr(channel, "id", None):
            return ThreadRef(PLATFORM, str(channel.id), "")
        return thread

    def run_here(self, channel: Any) -> tuple[ThreadRef | None, str | None]:
        """The thread this channel is and the run it shows, its own or one it follows (either may be None)."""
        thread = self.thread_of(channel)
        return thread, (self.hub.query.run_in(thread) if thread is not None else None)

    def card_kind(self, run_id: str, card_id: str) -> str:
        """The kind of an open card ("" a question, "approval", "plan"…; "" when it is not open)."""
        return next((c.kind for c in self.hub.query.open_cards(run_id) if c.card_id == card_id), "")

    # ---- delivery --------------------------------------------------------------------------------
    def fresh(self, interaction: discord.Interaction[Any]) -> bool:
        """False for a second delivery of the same interaction (and before the hub exists), and for
        one that names nobody (discord.py parses it without `member.user`, and no one may act)."""
        if not isinstance(interaction.user, discord.User | discord.Member):
            log.warning("discord: skipped a malformed INTERACTION_CREATE dispatch: no 'member.user' or 'user'")
            return False
        return self.ready and not self.hub.hooks.seen(f"discord:interaction:{interaction.id}")

    @staticmethod
    async def show(reply: Reply, result: IntentResult, *, quiet_when_ok: bool = False, suffix: str = "") -> None:
        """Show the outcome of an intent to the person who asked for it.

        A replayed delivery (ok + duplicate) shows nothing; a late click on a settled card (duplicate,
        not ok) is told who settled it; a success shows nothing when the thread itself shows it."""
        text = result.to_show(quiet_when_ok=quiet_when_ok)
        if text is not None:
            await reply.say(text + (suffix if result.ok else ""))

    async def tell(self, thread: ThreadRef, user: str, text: str) -> None:
        """One line to one person alone, with no interaction to answer (the surface's notify: a DM, else a
        line in the thread); never raises."""
        if self.surface is None:
            log.warning("nowhere to tell %s: %s", user, text)
            return
        try:
            await self.surface.notify(thread, user, text)
        except SurfaceError as exc:
            log.warning("could not tell %s in %s: %r", user, thread, exc)
