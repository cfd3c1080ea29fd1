"""Run a callback on its owner's event loop: sinks are called from SDK and UI threads alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


def hop(loop: asyncio.AbstractEventLoop | None, fn: Callable[..., Any], *args: Any) -> bool:
    """True when ``fn(*args)`` was handed to ``loop`` because we are not on it; the caller then returns."""
    if loop is None:
        return False
    try:
        current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    if current is loop:
        return False
    loop.call_soon_threadsafe(fn, *args)
    return True
