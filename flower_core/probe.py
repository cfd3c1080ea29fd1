"""Is the model's endpoint reachable? A free probe: name lookup plus a TCP handshake, nothing more.

    endpoint()            ANTHROPIC_BASE_URL's host and port (https://api.anthropic.com by default)
    reachable(host, port) getaddrinfo + connect within ``timeout``; any failure is "not reachable"

No HTTP request, no credentials, no cost: it only tells "the network is back" apart from "still
down". Probe the configured gateway, not the public API: one being up says nothing of the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.anthropic.com"


def endpoint(env: Mapping[str, str] | None = None) -> tuple[str, int]:
    """(host, port) the CLI will talk to; the port defaults to 80 for http and 443 otherwise."""
    source = os.environ if env is None else env
    url = urlsplit(source.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL)
    if not url.hostname:
        url = urlsplit(DEFAULT_BASE_URL)
    try:
        port = url.port
    except ValueError:  # a malformed port: fall back to the scheme's
        port = None
    return url.hostname or "api.anthropic.com", port or (80 if url.scheme == "http" else 443)


async def reachable(host: str, port: int, timeout: float = 5.0) -> bool:
    """True when ``host`` resolves and accepts a TCP connection on ``port`` within ``timeout`` seconds."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (TimeoutError, OSError, ValueError):
        return False
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), timeout)
    return True
