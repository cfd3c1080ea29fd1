"""Slack failures as the outbox understands them.

=================================================  ==========================================
what happened                                      becomes
=================================================  ==========================================
HTTP 429 / error ``ratelimited``                   Transient, ``retry_after`` = Retry-After header
HTTP 5xx, ``internal_error``, ``fatal_error``,     Transient (backoff)
``service_unavailable``, ``request_timeout``
network: aiohttp errors, timeouts, OSError         Transient (backoff)
anything else Slack refuses (``channel_not_found``,  Permanent (the outbox drops or re-posts)
``message_not_found``, ``invalid_blocks``…)
a block that slack-sdk refuses to build            Permanent
=================================================  ==========================================

Messages name the method and Slack's error code, never the token (slack-sdk sends it in a header
and its errors carry only the response body).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError, SlackObjectFormationError

from adapters.platform import PermanentSurfaceError, SurfaceError, TransientSurfaceError

__all__ = ["TRANSIENT_CODES", "error_code", "is_code", "retry_after", "slack_call", "to_surface_error"]

TRANSIENT_CODES = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable",
                             "request_timeout"})
T = TypeVar("T")


def error_code(exc: BaseException) -> str:
    """Slack's error string ("channel_not_found"), or "" when the failure was not Slack's answer."""
    if isinstance(exc, SlackApiError):
        data = getattr(exc.response, "data", None)
        if isinstance(data, dict):
            return str(data.get("error") or "")
    return ""


def retry_after(exc: SlackApiError) -> float | None:
    headers = getattr(exc.response, "headers", None) or {}
    for name in ("Retry-After", "retry-after"):
        value = headers.get(name) if hasattr(headers, "get") else None
        if value is not None:
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                return None
    return None


def to_surface_error(exc: BaseException, method: str) -> SurfaceError:
    if isinstance(exc, SurfaceError):
        return exc
    if isinstance(exc, SlackApiError):
        status = int(getattr(exc.response, "status_code", 0) or 0)
        code = error_code(exc) or f"HTTP {status}"
        if status == 429 or code == "ratelimited":
            return TransientSurfaceError(f"slack {method}: rate limited", retry_after=retry_after(exc) or 1.0)
        if status >= 500 or code in TRANSIENT_CODES:
            return TransientSurfaceError(f"slack {method}: {code}")
        return PermanentSurfaceError(f"slack {method}: {code}")
    if isinstance(exc, aiohttp.ClientError | asyncio.TimeoutError | OSError):
        return TransientSurfaceError(f"slack {method}: network: {type(exc).__name__}: {exc}")
    if isinstance(exc, SlackObjectFormationError):
        return PermanentSurfaceError(f"slack {method}: bad block: {exc}")
    if isinstance(exc, SlackClientError):
        return PermanentSurfaceError(f"slack {method}: {type(exc).__name__}: {exc}")
    return PermanentSurfaceError(f"slack {method}: {type(exc).__name__}: {exc}")


async def slack_call(method: str, call: Awaitable[T]) -> T:
    """Await one Web API call; any failure comes out as a SurfaceError."""
    try:
        return await call
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise to_surface_error(exc, method) from exc


def is_code(exc: BaseException, *codes: str) -> bool:
    cause: Any = exc.__cause__ if isinstance(exc, SurfaceError) else exc
    return error_code(cause) in codes if cause is not None else False
