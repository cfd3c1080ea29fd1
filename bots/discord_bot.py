"""`flower-bot discord`: build the Discord front end from the bot's configuration.

Environment (wins over the TOML file's `[discord]` table, which may hold every key but the token):

    DISCORD_TOKEN        the bot token (Developer Portal → Bot); never read from a file, never logged
    DISCORD_GUILD_IDS    comma list of server ids: /flower is synced to these at start (instant);
                         unset: synced globally (Discord may take up to an hour to show it)
    DISCORD_API_BASE     REST base URL (default https://discord.com/api/v10): a proxy or a local double
    DISCORD_GATEWAY_URL  gateway WebSocket URL (default: what DISCORD_API_BASE's /gateway/bot says)

    [discord]
    guild_ids = ["123456789012345678"]
    api_base = "https://discord.com/api/v10"
    gateway_url = "wss://gateway.discord.gg/"
    ready_timeout = 2.0          # seconds discord.py waits for the guilds at login

Anything missing or malformed is a `ConfigError` naming the variable or key; a token Discord
refuses, or the message-content intent switched off, is one too (raised by `start()`), so the bot
exits with one line and code 2.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from adapters.discord_bridge import DiscordFrontend, DiscordSettings
from bots.config import BotConfig, ConfigError, refuse_unknown

__all__ = ["DiscordBot", "build", "settings_from"]

_KEYS = {"guild_ids", "api_base", "gateway_url", "ready_timeout"}
_SNOWFLAKE = re.compile(r"[0-9]{1,20}")


class DiscordBot(DiscordFrontend):
    """The Discord front end as the bot runs it: plus its health, from discord.py's own gateway state."""

    async def health(self) -> str:
        client = self.client
        if client.is_closed():
            return "closed"
        if self.lifeline.watching and not self.lifeline.up.is_set():
            return "reconnecting"  # the gateway task ended and the lifeline is making the connection again
        ws = client.ws
        if ws is None or not ws.open or not client.is_ready():
            return "connecting"  # discord.py reconnects by itself; READY comes again after a resume
        return "connected"


def build(cfg: BotConfig) -> DiscordBot:
    return DiscordBot(settings_from(cfg.env, cfg.section("discord")))


def settings_from(env: dict[str, str], table: dict[str, Any]) -> DiscordSettings:
    refuse_unknown(table, _KEYS, "[discord]", "; the token comes from DISCORD_TOKEN only")
    token = env.get("DISCORD_TOKEN", "").strip()
    if not token:
        raise ConfigError("DISCORD_TOKEN is not set: put the bot's token (Developer Portal → Bot → Reset Token) in "
                          "the environment")
    if any(c.isspace() for c in token) or token.lower().startswith("bot "):
        raise ConfigError("DISCORD_TOKEN is malformed: give the bare token, without spaces or a 'Bot ' prefix")
    guilds = _guild_ids(env, table)
    api_base = _url("DISCORD_API_BASE", env.get("DISCORD_API_BASE") or _str(table, "api_base"), ("http", "https"))
    gateway = _url("DISCORD_GATEWAY_URL", env.get("DISCORD_GATEWAY_URL") or _str(table, "gateway_url"),
                   ("ws", "wss"))
    ready = table.get("ready_timeout", 2.0)
    if isinstance(ready, bool) or not isinstance(ready, int | float) or not 0 <= ready <= 60:
        raise ConfigError(f"config: [discord].ready_timeout must be a number of seconds from 0 to 60, got {ready!r}")
    return DiscordSettings(token=token, guild_ids=guilds, api_base=api_base, gateway_url=gateway,
                           ready_timeout=float(ready))


def _guild_ids(env: dict[str, str], table: dict[str, Any]) -> list[int]:
    raw = env.get("DISCORD_GUILD_IDS")
    if raw is not None:
        items, where = [p.strip() for p in raw.split(",") if p.strip()], "DISCORD_GUILD_IDS"
    else:
        value = table.get("guild_ids", [])
        if not isinstance(value, list):
            raise ConfigError("config: [discord].guild_ids must be a list of server ids")
        items, where = [str(v).strip() for v in value], "[discord].guild_ids"
    bad = next((i for i in items if not _SNOWFLAKE.fullmatch(i)), None)
    if bad is not None:
        raise ConfigError(f"{where} must be a comma list of numeric server ids, got {bad[:30]!r}")
    return [int(i) for i in items]


def _str(table: dict[str, Any], key: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"config: [discord].{key} must be a string URL")
    return value


def _url(name: str, value: str | None, schemes: tuple[str, ...]) -> str | None:
    if not value:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in schemes or not parts.netloc:
        raise ConfigError(f"{name} must be a {' or '.join(s + '://' for s in schemes)} URL, got {value[:80]!r}")
    return value.strip()
