"""Attachments of a person's message in a run's thread: fetched with discord.py, handed to the hub.

    MESSAGE_CREATE attachments[] (discord.py `Attachment`: filename, size, content_type, url)
        │  one over the run's per-file limit is refused from its announced size, never fetched
        ▼
    Attachment.read() ── the CDN link Discord gave (signed; the bot token is not sent with it)
        ▼
    Incoming(name, data | problem, content_type) ── Hub.attach saves them and mails the run

A download that fails becomes an `Incoming` with its problem, so the hub refuses the whole message with
one clear line and saves nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import aiohttp
import discord

from adapters.hub import Incoming

__all__ = ["fetch_all"]

log = logging.getLogger(__name__)


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
