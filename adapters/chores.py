"""Chores: background coroutines an owner starts and must keep a reference to (asyncio holds tasks
weakly), and may wait for before it goes away."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


class Chores:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()

    def spawn(self, work: Awaitable[Any]) -> asyncio.Future[Any]:
        """Run `work` (a coroutine or a future) on the running loop, kept until it is done."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    async def wait(self) -> None:
        """Until every chore started so far is done (their errors are theirs: not raised here)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
