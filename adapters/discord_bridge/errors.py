"""Discord failures -> the outbox's two kinds: try again later, or give up on this call.

discord.py already sleeps through short 429s itself (per-route buckets, the body's
`retry_after`); the client is built with `max_ratelimit_timeout`, so a long one surfaces here as
`RateLimited` and the outbox waits instead, coalescing edits meanwhile. 5xx and network failures
are transient; any other HTTP error (400 bad body, 403 missing permission, 404 deleted message or
thread) will not get better by retrying the same call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import discord

from adapters.surface import PermanentSurfaceError, SurfaceError, TransientSurfaceError

__all__ = ["surface_errors", "translate"]


def translate(exc: BaseException, what: str) -> SurfaceError:
    if isinstance(exc, SurfaceError):
        return exc
    if isinstance(exc, discord.RateLimited):
        return TransientSurfaceError(f"{what}: rate limited for {exc.retry_after:.1f}s", retry_after=exc.retry_after)
    if isinstance(exc, discord.HTTPException):
        detail = f"{what}: HTTP {exc.status} (code {exc.code}) {exc.text}".rstrip()
        if exc.status == 429:
            return TransientSurfaceError(detail, retry_after=_retry_after(exc))
        if exc.status >= 500:
            return TransientSurfaceError(detail)
        return PermanentSurfaceError(detail)
    if isinstance(exc, aiohttp.ClientError | OSError | asyncio.TimeoutError | discord.GatewayNotFound):
        return TransientSurfaceError(f"{what}: connection problem: {exc!r}")
    return PermanentSurfaceError(f"{what}: {type(exc).__name__}: {exc}")


def _retry_after(exc: discord.HTTPException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        return float(str(headers.get("Retry-After")))
    except ValueError:
        return None


@contextlib.asynccontextmanager
async def surface_errors(what: str) -> AsyncIterator[None]:
    """Run Discord calls; anything they raise leaves as a SurfaceError (cancellation passes through)."""
    try:
        yield
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise translate(exc, what) from exc
