"""DiscordFrontend: the Discord front end as the bot process sees it (attach a hub, start, stop).

Start: point discord.py at the configured endpoints (REST base; gateway URL, or the one the REST
API's gateway endpoint names), log in (GET /users/@me, the application, command sync), open the
gateway and return once the guilds are in the cache. Failures that a person must fix become one
`DiscordStartError` line: a refused token, the message-content intent switched off in the
developer portal, commands that could not be registered. The token is never logged.

Once up, the connection is the `Lifeline`'s (connection.py): if it dies, that is logged as an error
and the connection is made again after a bounded backoff, while the process and its runs go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import discord
import yarl

from adapters.discord_bridge.client import FlowerClient, invite_url
from adapters.discord_bridge.connection import Backoff, Lifeline
from adapters.discord_bridge.context import PLATFORM, DiscordContext
from adapters.discord_bridge.routines import open_thread
from adapters.discord_bridge.surface import DiscordSurface
from adapters.hub import Hub
from adapters.platform import OutMessage, StartRefused, ThreadRef

__all__ = ["INTENT_HINT", "DiscordFrontend", "DiscordSettings", "DiscordStartError"]

log = logging.getLogger(__name__)

INTENT_HINT = ("Discord refused the message-content intent: turn on Developer Portal → your application → Bot → "
               "Privileged Gateway Intents → MESSAGE CONTENT INTENT, save, and start the bot again")


class DiscordStartError(StartRefused):
    """The bot cannot come up on Discord for a reason a person must fix; the message says which."""


@dataclass(frozen=True)
class DiscordSettings:
    token: str = field(repr=False)
    guild_ids: Sequence[int] = ()
    api_base: str | None = None  # e.g. http://127.0.0.1:PORT/api/v10; None = discord.py's default
    gateway_url: str | None = None  # None = what the REST API says (when api_base is set), else the default
    ready_timeout: float = 2.0  # how long discord.py waits for more guilds before "ready"
    start_timeout: float = 60.0
    backoff: Backoff = field(default_factory=Backoff)  # between attempts to connect again after the connection died


class DiscordFrontend:
    name = PLATFORM

    def __init__(self, settings: DiscordSettings) -> None:
        self.settings = settings
        self.ctx = DiscordContext()
        self.client = self._new_client()
        self.surface = DiscordSurface(self.client)
        self._task: asyncio.Task[None] | None = None  # the first connection, until the lifeline has it
        self.lifeline = Lifeline(self.client, self._renew, settings.backoff)

    def _new_client(self) -> FlowerClient:
        return FlowerClient(self.ctx, guild_ids=self.settings.guild_ids, ready_timeout=self.settings.ready_timeout)

    async def _renew(self) -> FlowerClient:
        """A fresh client in place of one discord.py closed, logged in (commands synced again)."""
        client = self._new_client()
        self.client = self.surface.client = client
        try:
            await client.login(self.settings.token)
        except BaseException:
            await client.close()
            raise
        return client

    def attach(self, hub: Hub) -> None:
        self.ctx.attach(hub)
        self.ctx.surface = self.surface
        hub.hooks.open_threads(PLATFORM, self._open_thread)
        self.surface.who = hub.query.display
        self.surface.footer = self._footer

    async def start(self) -> None:
        await self._endpoints_before_login()
        try:
            await self.client.login(self.settings.token)
        except discord.LoginFailure:
            await self.client.close()
            raise DiscordStartError("Discord refused DISCORD_TOKEN (401 Unauthorized): copy the bot's token again "
                                    "from Developer Portal → Bot → Reset Token") from None
        except discord.HTTPException as exc:  # from the command sync in setup_hook
            await self.client.close()
            raise DiscordStartError(f"Discord refused to register the /flower commands ({exc.status}: {exc.text}): "
                                    "invite the bot with the scopes `bot applications.commands` "
                                    "(see manifest/discord.md)") from None
        await self._gateway_after_login()
        self._task = asyncio.create_task(self.client.connect(reconnect=True), name="discord gateway")
        ready = asyncio.create_task(self.client.wait_until_ready())
        done, _ = await asyncio.wait({self._task, ready}, timeout=self.settings.start_timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if ready not in done:
            ready.cancel()
            error = self._task.exception() if self._task in done else None
            await self.stop()
            if isinstance(error, discord.PrivilegedIntentsRequired):
                raise DiscordStartError(INTENT_HINT) from None
            if error is not None:
                raise DiscordStartError(f"Discord gateway: {type(error).__name__}: {error}") from None
            raise DiscordStartError(f"Discord gateway not ready after {self.settings.start_timeout:.0f}s")
        self.lifeline.keep(self._task)
        self._task = None
        user = self.client.user
        log.info("discord: connected as %s (%s), %d guild(s), /flower synced to %s", user, getattr(user, "id", "?"),
                 len(self.client.guilds), ", ".join(map(str, self.settings.guild_ids)) or "all guilds (global)")
        if self.client.application_id is not None:
            log.info("discord: invite the bot to a server with %s", invite_url(self.client.application_id))

    async def stop(self) -> None:
        await self.lifeline.stop(self._close)
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 10)
            self._task = None

    async def _close(self) -> None:
        if not self.client.is_closed():  # (the current client: a renewed one too)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.client.close(), 10)

    # ---- endpoints (process-wide in discord.py: one bot per process) ------------------------------
    async def _endpoints_before_login(self) -> None:
        if self.settings.api_base:
            discord.http.Route.BASE = self.settings.api_base.rstrip("/")
        if self.settings.gateway_url:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.settings.gateway_url)

    async def _gateway_after_login(self) -> None:
        """A custom REST base without a gateway URL: ask that API where its gateway is."""
        if self.settings.api_base and not self.settings.gateway_url:
            try:
                _, url, _ = await self.client.http.get_bot_gateway()
            except discord.GatewayNotFound as exc:
                raise DiscordStartError(f"{self.settings.api_base} did not say where its gateway is ({exc}); set "
                                        "DISCORD_GATEWAY_URL") from None
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)

    async def _open_thread(self, channel: str, card: OutMessage) -> ThreadRef:
        """A routine's run: a starter message and its thread in `channel` (routines.open_thread), through the
        current client (a renewed one too)."""
        return await open_thread(self.client, channel, card)

    def _footer(self, thread: ThreadRef) -> str:
        hub = self.ctx.hub
        run_id = hub.query.run_in(thread)
        record = hub.query.run(run_id) if run_id else None
        if record is None:
            return ""
        return f"run {record.run_id} · started by {hub.query.display(record.owner)}"
