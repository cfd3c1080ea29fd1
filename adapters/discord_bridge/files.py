"""Files both ways on Discord: attachments people send into a run's thread, and files the agent shares.

In:

    MESSAGE_CREATE attachments[] (discord.py `Attachment`: filename, size, content_type, url)
        │  one over the run's per-file limit is refused from its announced size, never fetched
        ▼
    Attachment.read() ── the CDN link Discord gave (signed; the bot token is not sent with it)
        ▼
    Incoming(name, data | problem, content_type) ── Hub.attach saves them and mails the run

A download that fails becomes an `Incoming` with its problem, so the hub refuses the whole message with
one clear line and saves nothing.

Out: a message with an attachment (the agent's `share`) goes out as a `discord.File` with the message, if
it fits the server's upload limit (`Guild.filesize_limit`, 10 MiB without boosts); one that does not, or
that is gone from the disk, is posted as the text alone, which names it.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import discord

from adapters.hub import Incoming
from adapters.platform import OutMessage

__all__ = ["UPLOAD_MAX", "fetch_all", "file_for"]

log = logging.getLogger(__name__)

UPLOAD_MAX = 10 * 1024 * 1024  # a server without boosts; a guild says its own (filesize_limit)


async def fetch(att: discord.Attachment, max_bytes: int) -> Incoming:
    kind = att.content_type or ""
    if att.size > max_bytes:  # Discord said how big: no need to fetch it to refuse it
        return Incoming(att.filename, None, kind, size=att.size)
    try:
        data = await att.read()
    except discord.HTTPException as exc:
        return Incoming(att.filename, None, kind, f"the download failed (HTTP {exc.status})")
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("discord attachment %s: %r", att.id, exc)
        return Incoming(att.filename, None, kind, f"the download failed ({type(exc).__name__})")
    if len(data) > max_bytes:  # the announced size was wrong
        return Incoming(att.filename, None, kind, size=len(data))
    return Incoming(att.filename, data, kind)


async def fetch_all(attachments: Sequence[discord.Attachment], max_bytes: int) -> list[Incoming]:
    return [await fetch(a, max_bytes) for a in attachments]


async def file_for(msg: OutMessage, channel: Any) -> discord.File | None:
    """The message's attachment as a `discord.File`, when it fits the channel's server (None: text only)."""
    att = msg.attachment
    if att is None:
        return None
    guild = getattr(channel, "guild", None)
    limit = int(getattr(guild, "filesize_limit", 0) or UPLOAD_MAX)
    if att.size > limit:
        log.info("discord: %s (%d bytes) is over this server's %d byte upload limit; posting its name", att.name,
                 att.size, limit)
        return None
    try:
        data = att.content if att.content is not None else await asyncio.to_thread(Path(att.path).read_bytes)
    except OSError as exc:
        log.warning("discord: cannot read the shared file %s: %s", att.rel or att.name, exc)
        return None
    return discord.File(io.BytesIO(data), filename=att.name)
