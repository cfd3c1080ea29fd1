"""Waiting on a condition without a clock: re-check it each time whatever it reads has changed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


async def until(changed: asyncio.Event, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Return `probe()` once it is truthy; `changed` is set by whoever changes what it reads."""
    async def loop() -> Any:
        while True:
            changed.clear()
            got = probe()
            if got:
                return got
            await changed.wait()
    return await asyncio.wait_for(loop(), timeout)
