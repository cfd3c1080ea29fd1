"""Discord failures -> the outbox's two kinds (try again later, or give up on this call), and the
plain sentence a person is shown when handling their command or click failed.

discord.py already sleeps through short 429s itself (per-route buckets, the body's
`retry_after`); the client is built with `max_ratelimit_timeout`, so a long one surfaces here as
`RateLimited` and the outbox waits instead, coalescing edits meanwhile. 5xx and network failures
are transient; any other HTTP error (400 bad body, 403 missing permission, 404 deleted message or
thread) will not get better by retrying the same call.

A person never sees an exception's text (`CommandNotFound…`, `AttributeError: 'NoneType'…`): `told`
gives them one sentence saying what they can do, and whether the failure is ours (a bug, logged with
its traceback) or their request's (logged in one line).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import NamedTuple

import aiohttp
import discord
from discord import app_commands

from adapters.platform import PermanentSurfaceError, SurfaceError, TransientSurfaceError

__all__ = ["FAILED", "UNKNOWN_COMMAND", "Told", "surface_errors", "told", "translate"]

FAILED = "That did not work; the error was logged."
UNKNOWN_COMMAND = "I don't know that command; try `/flower help`."


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


# ---- what a person is told ------------------------------------------------------------------------
class Told(NamedTuple):
    text: str  # what the person sees
    ours: bool  # a fault of ours (log its traceback), not of their request


def told(exc: BaseException) -> Told:
    if isinstance(exc, app_commands.CommandInvokeError):
        exc = exc.original
    if isinstance(exc, app_commands.CommandNotFound):
        return Told(UNKNOWN_COMMAND, False)
    if isinstance(exc, app_commands.CommandSignatureMismatch):
        return Told("That command has changed since Discord showed it to you; try again in a minute, or see "
                    "`/flower help`.", False)
    if isinstance(exc, app_commands.TransformerError):
        return Told("I could not read one of that command's options; `/flower help` shows what each one takes.",
                    False)
    if isinstance(exc, app_commands.CheckFailure):
        return Told("You can't use that command here.", False)
    if isinstance(exc, discord.Forbidden):
        return Told("Discord did not let me do that here (a permission of mine is missing); the error was logged.",
                    True)
    if isinstance(translate(exc, ""), TransientSurfaceError):
        return Told("Discord did not answer in time; nothing was changed, try again in a moment.", True)
    return Told(FAILED, True)
