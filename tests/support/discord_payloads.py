"""Discord API objects as the Discord double sends them: users, members, guilds, channels, threads,
messages and interactions, with every field discord.py reads (see PROTOCOL-NOTES.md, Discord)."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1420070400000
ALL_PERMISSIONS = str((1 << 50) - 1)
_counter = itertools.count(1)


def snowflake() -> int:
    """A fresh, increasing Discord id (timestamp in the high bits, a process-wide counter below)."""
    return ((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(_counter) & 0x3FFFFF)


def iso(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).isoformat()


@dataclass
class Person:
    """Someone in the double's guild: a user, their roles, whether they are a bot."""

    id: int
    name: str
    roles: list[int] = field(default_factory=list)
    bot: bool = False

    def user(self) -> dict[str, Any]:
        return {"id": str(self.id), "username": self.name.lower(), "discriminator": "0", "global_name": self.name,
                "avatar": None, "bot": self.bot, "public_flags": 0}

    def member(self, *, with_user: bool = True) -> dict[str, Any]:
        m: dict[str, Any] = {"roles": [str(r) for r in self.roles], "joined_at": iso(), "deaf": False, "mute": False,
                             "flags": 0, "nick": None, "avatar": None, "pending": False,
                             "permissions": ALL_PERMISSIONS}
        if with_user:
            m["user"] = self.user()
        return m


def role(role_id: int, name: str, position: int = 0) -> dict[str, Any]:
    return {"id": str(role_id), "name": name, "permissions": ALL_PERMISSIONS, "position": position, "color": 0,
            "hoist": False, "managed": False, "mentionable": False, "flags": 0, "icon": None,
            "unicode_emoji": None}


def text_channel(channel_id: int, guild_id: int, name: str) -> dict[str, Any]:
    return {"id": str(channel_id), "type": 0, "guild_id": str(guild_id), "name": name, "position": 0,
            "permission_overwrites": [], "nsfw": False, "parent_id": None, "topic": None, "last_message_id": None,
            "rate_limit_per_user": 0, "flags": 0}


def thread_channel(thread_id: int, parent_id: int, guild_id: int, owner_id: int, name: str,
                   auto_archive: int = 1440) -> dict[str, Any]:
    return {"id": str(thread_id), "type": 11, "guild_id": str(guild_id), "parent_id": str(parent_id),
            "owner_id": str(owner_id), "name": name, "last_message_id": None, "message_count": 0,
            "member_count": 1, "total_message_sent": 0, "rate_limit_per_user": 0, "flags": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": auto_archive,
                                "archive_timestamp": iso(), "locked": False}}


def guild(guild_id: int, name: str, owner: Person, bot: Person, roles: list[dict[str, Any]],
          channels: list[dict[str, Any]], threads: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": str(guild_id), "name": name, "icon": None, "owner_id": str(owner.id), "roles": roles,
            "channels": channels, "threads": threads, "members": [bot.member()], "member_count": 2,
            "features": [], "emojis": [], "stickers": [], "unavailable": False, "large": False,
            "joined_at": iso(), "premium_tier": 0, "preferred_locale": "en-US", "verification_level": 0,
            "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0, "nsfw_level": 0,
            "system_channel_id": None, "afk_channel_id": None, "afk_timeout": 300, "voice_states": [],
            "presences": [], "stage_instances": [], "guild_scheduled_events": [], "soundboard_sounds": []}


def message(message_id: int, channel_id: int, guild_id: int | None, author: dict[str, Any], body: dict[str, Any],
            *, member: dict[str, Any] | None = None, reference: dict[str, Any] | None = None,
            referenced: dict[str, Any] | None = None, webhook_id: int | None = None) -> dict[str, Any]:
    """A message object from what a client sent (content, embeds, components, flags)."""
    msg: dict[str, Any] = {
        "id": str(message_id), "channel_id": str(channel_id), "author": author,
        "content": body.get("content") or "", "timestamp": iso(), "edited_timestamp": None, "tts": False,
        "mention_everyone": False, "mentions": [], "mention_roles": [], "attachments": [],
        "embeds": list(body.get("embeds") or []), "pinned": False, "type": 19 if reference else 0,
        "components": list(body.get("components") or []), "flags": int(body.get("flags") or 0), "reactions": [],
    }
    if guild_id is not None:
        msg["guild_id"] = str(guild_id)
    if member is not None:
        msg["member"] = member
    if reference is not None:
        msg["message_reference"] = reference
        msg["referenced_message"] = referenced
    if webhook_id is not None:
        msg["webhook_id"] = str(webhook_id)
    return msg


def interaction(*, interaction_id: int, app_id: int, kind: int, token: str, guild_id: int,
                channel: dict[str, Any], person: Person, data: dict[str, Any],
                message: dict[str, Any] | None = None) -> dict[str, Any]:
    ix: dict[str, Any] = {
        "id": str(interaction_id), "application_id": str(app_id), "type": kind, "token": token, "version": 1,
        "attachment_size_limit": 26214400, "guild_id": str(guild_id), "channel_id": channel["id"],
        "channel": channel, "member": person.member(), "app_permissions": ALL_PERMISSIONS, "locale": "en-US",
        "guild_locale": "en-US", "entitlements": [], "authorizing_integration_owners": {"0": str(guild_id)},
        "context": 0, "data": data,
    }
    if message is not None:
        ix["message"] = message
    return ix


def app_info(app_id: int, bot: Person, owner: Person) -> dict[str, Any]:
    return {"id": str(app_id), "name": bot.name, "description": "", "icon": None, "bot_public": True,
            "bot_require_code_grant": False, "owner": owner.user(), "verify_key": "0" * 64, "flags": 1 << 19,
            "team": None, "summary": "", "rpc_origins": [], "interactions_endpoint_url": None, "bot": bot.user()}
