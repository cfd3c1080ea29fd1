"""Health, readiness and metrics through the real libraries: the bot served in this process on the demo
model (real SDK + CLI) with its web page and a health port, over real HTTP; Slack's and Discord's
readiness read from slack-sdk's and discord.py's own connection state against the doubles while the
connection drops and comes back; and 429s counted through the real slack-sdk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.ops.metrics import Metrics
from adapters.outbox import Outbox
from adapters.platform import OutMessage, ThreadRef
from bots import bot as bot_module
from bots.bot import build_parser, serve
from bots.discord_bot import DiscordBot
from bots.frontend import Frontend
from bots.slack_bot import SlackBot, settings_from
from tests.support.discord_double import DiscordDouble
from tests.support.discord_support import discord_double, settings
from tests.support.fleet_support import free_port
from tests.support.hub_support import FIRST_QUESTION
from tests.support.slack_double import SlackDouble

__all__ = ["discord_double"]

TOKEN = "a-token-of-sixteen-chars-or-more"
ONE_QUESTION = 'name = "one-question"' + FIRST_QUESTION


async def eventually(what: str, probe: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
    """Re-read a state until it holds (a connection's state changes with no event to wait on)."""
    async def loop() -> Any:
        while True:
            got = await probe()
            if got:
                return got
            await asyncio.sleep(0.05)
    try:
        return await asyncio.wait_for(loop(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def sample(text: str, name: str) -> float | None:
    """The value of one sample line (`name` includes its labels) in Prometheus's text format."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


@pytest.mark.timeout(240)
async def test_the_bot_serves_health_readiness_and_metrics_on_its_page_and_its_health_port(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = tmp_path / "one.toml"
    scenario.write_text(ONE_QUESTION, encoding="utf-8")
    web_port, health_port = free_port(), free_port()
    built: list[Frontend] = []
    real_build = bot_module.build_frontends

    def build(cfg: Any) -> list[Frontend]:
        built.extend(real_build(cfg))
        return built

    monkeypatch.setattr(bot_module, "build_frontends", build)
    argv = ["web", "--port", str(web_port), "--health-port", str(health_port), "--root", str(tmp_path / "root"),
            "--flow", "single", "--demo", "--scenario", str(scenario), "--timeout", "120"]
    cfg = bot_module.load_config(build_parser().parse_args(argv), {"FLOWER_WEB_TOKEN": TOKEN})
    ready, stop = asyncio.Event(), asyncio.Event()
    served = asyncio.create_task(serve(cfg, ready=ready, stop=stop))
    page, side = f"http://127.0.0.1:{web_port}", f"http://127.0.0.1:{health_port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        await asyncio.wait_for(ready.wait(), 90)
        async with aiohttp.ClientSession() as http:
            async def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
                async with http.get(url, headers=headers or {}) as resp:
                    return resp.status, await resp.text()

            # The page: health and readiness need no token and pass any Origin; metrics need the token.
            foreign = {"Origin": "https://elsewhere.example"}
            assert await get(f"{page}/healthz", foreign) == (200, '{"ok": true}')
            status, body = await get(f"{page}/readyz", foreign)
            assert status == 200 and json.loads(body) == {"ready": True, "parts": {"web": "listening"}}
            assert (await get(f"{page}/metrics"))[0] == 401
            assert (await get(f"{page}/api/runs"))[0] == 401  # the guard still guards everything else
            status, text = await get(f"{page}/metrics", auth)
            assert status == 200 and sample(text, "flower_open_asks") == 0.0
            # The health port: all three open, to loopback names only.
            assert await get(f"{side}/healthz") == (200, '{"ok": true}')
            assert (await get(f"{side}/readyz"))[0] == 200
            assert (await get(f"{side}/metrics"))[0] == 200
            assert (await get(f"{side}/metrics", {"Host": "rebound.example"}))[0] == 403

            # A run that asks: the metrics show it waiting, its question, its CLI and the page's calls.
            async with http.post(f"{page}/api/runs", json={"task": "pick indentation"}, headers=auth) as resp:
                assert resp.status == 201
                run_id = (await resp.json())["id"]

            async def asking() -> Any:
                text = (await get(f"{side}/metrics"))[1]
                return text if sample(text, "flower_open_asks") == 1.0 else None
            text = await eventually("the question in the metrics", asking, 90)
            assert sample(text, 'flower_runs{state="waiting"}') == 1.0
            assert sample(text, "flower_cli_processes") == 1.0
            assert sample(text, "flower_oldest_ask_age_seconds") is not None
            assert (sample(text, 'flower_platform_calls_total{call="post",platform="web"}') or 0) >= 2
            assert (sample(text, "flower_events_total") or 0) >= 3
            assert sample(text, 'flower_outbox_depth{platform="web"}') is not None
            assert sample(text, 'flower_platform_rate_limited_total{platform="web"}') == 0.0
            assert sample(text, "flower_parked_runs") == 0.0 and sample(text, "flower_intents_pending") == 0.0
            for body_text in (text, (await get(f"{page}/readyz"))[1], (await get(f"{side}/readyz"))[1]):
                assert "pick indentation" not in body_text  # no run data on the open endpoints
            assert run_id not in (await get(f"{page}/readyz"))[1]

            async with http.get(f"{page}/api/runs/{run_id}/asks", headers=auth) as resp:
                ask_id = (await resp.json())[0]["id"]
            async with http.post(f"{page}/api/runs/{run_id}/answer", json={"ask_id": ask_id, "text": "tabs"},
                                 headers=auth) as resp:
                assert resp.status == 200

            async def done() -> Any:
                text = (await get(f"{side}/metrics"))[1]
                ok = sample(text, 'flower_runs{state="done"}') == 1.0 and sample(text, "flower_cli_processes") == 0
                return text if ok else None
            text = await eventually("the run done and its CLI gone", done, 90)
            assert sample(text, "flower_open_asks") == 0.0
    finally:
        stop.set()
        assert await asyncio.wait_for(served, 60) == 0
    async with aiohttp.ClientSession() as http:  # both ports are closed with the bot
        for url in (f"{page}/healthz", f"{side}/healthz"):
            with pytest.raises(aiohttp.ClientConnectionError):
                async with http.get(url):
                    pass


async def test_slack_readiness_is_slack_sdks_connection_state(tmp_path: Path) -> None:
    async with SlackDouble() as double:
        slack = SlackBot(settings_from(double.env(), {}))
        assert await slack.health() == "disconnected"
        await slack.start()
        try:
            assert await slack.health() == "connected"
            for ws in list(double._sockets):  # Slack drops the socket (as it does to refresh it)
                await ws.close()
            await eventually("slack to notice the drop", lambda: _is(slack.health(), "connecting"), 30)
            await eventually("slack-sdk to reconnect by itself", lambda: _is(slack.health(), "connected"), 60)
            assert double.connections == 2
        finally:
            await slack.stop()
        assert await slack.health() == "disconnected"


async def test_discord_readiness_is_the_gateways_state(discord_double: DiscordDouble) -> None:
    discord = DiscordBot(settings(discord_double))
    await discord.start()
    try:
        assert await discord.health() == "connected"
        await discord_double.gateway.drop(hold=True)  # an outage: new connections wait
        await eventually("discord.py to notice the drop", lambda: _is(discord.health(), "connecting"), 30)
        discord_double.gateway.reopen()
        await eventually("discord.py to resume by itself", lambda: _is(discord.health(), "connected"), 60)
        gateway = discord.lifeline.gateway
        assert gateway is not None
        gateway.cancel()  # the gateway task ends (as after a crash in discord.py's loop)
        await eventually("the ended gateway task to show", lambda: _is(discord.health(), "reconnecting"), 30)
        await eventually("the lifeline to connect again", lambda: _is(discord.health(), "connected"), 60)
    finally:
        await discord.stop()
    assert await discord.health() == "closed"


async def _is(state: Awaitable[str], want: str) -> bool:
    return await state == want


async def test_429s_and_calls_are_counted_per_platform_through_slack_sdk() -> None:
    async with SlackDouble() as double:
        slack = SlackBot(settings_from(double.env(), {}))
        metrics = Metrics(cli_processes=lambda: 0)
        surfaces = metrics.count_surfaces({"slack": slack.surface})
        double.fail("chat.postMessage", 1, status=429, retry_after=1)
        outbox = Outbox(surfaces["slack"], ThreadRef("slack", "C1", ""))
        outbox.put(OutMessage("status", "status", "Working…", important=True))
        assert outbox.depth == 1
        await asyncio.wait_for(outbox.flush(), 30)
        await outbox.close()
        text = metrics.render().decode()
        assert sample(text, 'flower_platform_calls_total{call="post",platform="slack"}') == 2.0  # refused, then sent
        assert sample(text, 'flower_platform_rate_limited_total{platform="slack"}') == 1.0
        assert [c.status for c in double.called("chat.postMessage", ok_only=False)] == [429, 200]
        assert outbox.depth == 0
        await slack.stop()
