"""The discord.py client of the bridge: intents, the `/flower` tree, persistent buttons, listeners.

Intents: guilds (channels and threads in the cache), guild messages and message content (people's
messages in run threads). Message content is privileged: it must be switched on in the developer
portal, or Discord closes the gateway at login (see frontend.py). At setup the `ActionButton`
template is registered, so buttons on every earlier message route to this process, and the
command tree is synced: to the listed guilds (instant) or globally.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import discord
from discord import app_commands

from adapters.discord_bridge.actions import Actions
from adapters.discord_bridge.commands import FlowerCommands
from adapters.discord_bridge.connection import guard_parsers
from adapters.discord_bridge.context import DiscordContext
from adapters.discord_bridge.errors import told
from adapters.discord_bridge.inbound import option_problem
from adapters.discord_bridge.render import NO_MENTIONS, ActionButton
from adapters.discord_bridge.reply import Reply
from adapters.ids import ID_PATTERN

__all__ = ["SCOPES", "FlowerClient", "FlowerTree", "intents", "invite_url", "permissions"]

SCOPES = ("bot", "applications.commands")

log = logging.getLogger(__name__)


def intents() -> discord.Intents:
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.message_content = True
    return wanted


def permissions() -> discord.Permissions:
    """What the bot does in a channel: see it, post the status card, open the run's thread and speak
    there, put receipts on people's messages, read the message a reply points at, show embeds."""
    return discord.Permissions(view_channel=True, send_messages=True, create_public_threads=True,
                               send_messages_in_threads=True, add_reactions=True, read_message_history=True,
                               embed_links=True)


def invite_url(application_id: int) -> str:
    return discord.utils.oauth_url(application_id, permissions=permissions(), scopes=SCOPES)


class FlowerTree(app_commands.CommandTree[Any]):
    def __init__(self, client: FlowerClient) -> None:
        super().__init__(client)
        self.ctx = client.ctx

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        data = interaction.data
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            # discord.py parses a command without `data` fine, then fails on it in a task nobody awaits.
            log.warning("discord: skipped a malformed INTERACTION_CREATE dispatch: an application command "
                        "without %s", "'data'" if data is None else "a name")
            return False
        if not self.ctx.fresh(interaction):  # a replayed slash command runs once
            return False
        problem = option_problem(interaction.command, data)
        if problem is not None:  # discord.py would pass a word on as `asks`: the command would trip over it
            log.warning("discord: /%s refused: %s", data.get("name"), problem)
            await Reply(interaction).say(f"{problem}; see `/flower help`.")
            return False
        return True

    async def on_error(self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError,
                       /) -> None:
        original = getattr(error, "original", error)
        answer = told(original)
        if answer.ours:
            log.error("/flower failed: %r", original, exc_info=original)
        else:  # the request's fault (a stale or unknown command...): one line
            log.warning("/flower refused: %s: %s", type(original).__name__, original)
        await Reply(interaction).say(answer.text)


class FlowerClient(discord.Client):
    def __init__(self, ctx: DiscordContext, *, guild_ids: Sequence[int] = (), ready_timeout: float = 2.0) -> None:
        # Long 429s are left to the outbox (it waits and coalesces edits); short ones discord.py sleeps through.
        super().__init__(intents=intents(), allowed_mentions=NO_MENTIONS, max_ratelimit_timeout=30.0,
                         guild_ready_timeout=ready_timeout)
        self.ctx = ctx
        self.actions = Actions(ctx)
        self.guild_ids = list(guild_ids)
        self.tree = FlowerTree(self)
        self.tree.add_command(FlowerCommands(ctx))
        self.synced: list[app_commands.AppCommand] = []
        guard_parsers(self._connection.parsers)  # a malformed dispatch is skipped, not the end of the gateway

    async def setup_hook(self) -> None:
        self.add_dynamic_items(ActionButton)
        if self.guild_ids:
            for gid in self.guild_ids:
                guild = discord.Object(gid)
                self.tree.copy_global_to(guild=guild)
                self.synced = await self.tree.sync(guild=guild)
        else:
            self.synced = await self.tree.sync()

    async def on_message(self, message: discord.Message) -> None:
        await self.actions.on_message(message)

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """A button no `ActionButton` takes (another app's, an older or newer version's id) reaches no
        listener in discord.py, and the person would see "This interaction failed": it goes to the door like
        any click, which says it is not one of ours."""
        if interaction.type is not discord.InteractionType.component:
            return
        data: dict[str, Any] = dict(interaction.data) if isinstance(interaction.data, dict) else {}
        custom_id = data.get("custom_id")
        if not isinstance(custom_id, str) or re.fullmatch(ID_PATTERN, custom_id):
            return  # ours: ActionButton handles it (or a payload too broken for anyone)
        if self.actions.fresh(interaction):
            await self.actions.on_button(interaction, custom_id)
