"""Fixtures the scale-out tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fleet_support import Fleet
from tests.support.redis_support import RedisServer


@pytest.fixture
async def fleet(tmp_path: Path, redis_server: RedisServer) -> AsyncIterator[Fleet]:
    """A fleet (front + workers, started by the test) on the test's own redis-server; stopped at teardown."""
    f = Fleet(tmp_path, redis_server.url)
    try:
        yield f
    finally:
        await f.stop()
