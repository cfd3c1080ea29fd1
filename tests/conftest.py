"""Shared fixtures: the model double on an ephemeral loopback port, and an isolated CLI config."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flower_core.devmodel import ModelDouble, Scenario, parse_scenario
from tests.support.redis_support import RedisServer, redis_server_binary


def scenario_of(*conversations: dict[str, Any], name: str = "test", models: list[str] | None = None) -> Scenario:
    """Build a scenario inline: scenario_of({"name": "main", "turn": [{"say": "hi"}]}); `models`: the only
    model names the double serves (others get the API's 404)."""
    data: dict[str, Any] = {"name": name, "conversation": list(conversations)}
    if models is not None:
        data["models"] = models
    return parse_scenario(data, name=name)


@pytest.fixture(autouse=True)
def own_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own $XDG_CONFIG_HOME (inherited by the processes it starts): the window levels a
    runtime learns from overflows and flower's kept credentials (~/.config/flower/) never come from, nor
    go to, the real home or another test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))


@pytest.fixture
def cli_home(tmp_path: Path) -> Path:
    """A config dir of the CLI's own for this test, so nothing touches the real home."""
    home = tmp_path / "claude-config"
    home.mkdir()
    return home


@pytest.fixture
async def double_factory() -> AsyncIterator[Callable[..., Any]]:
    """Start model doubles on demand; all are stopped at teardown."""
    started: list[ModelDouble] = []

    async def start(scenario: Scenario | str) -> ModelDouble:
        md = await ModelDouble(scenario).start()
        started.append(md)
        return md

    yield start
    for md in started:
        await md.stop()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own on a free loopback port, stopped at teardown."""
    if redis_server_binary() is None:
        pytest.fail("redis-server is not installed; `make test` installs it (Debian package redis-server)")
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.cleanup()
