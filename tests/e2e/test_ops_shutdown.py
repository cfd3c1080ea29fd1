"""Shutdown and logs of the real processes: a planned SIGTERM of the whole process group (as systemd and
a terminal's Ctrl-C send it) while a run waits on its question ends in time with no ERROR line, every
line JSON and the run's own lines carrying its id; and whatever hangs — a CLI that ignores the
interrupt, a Slack that never closes its socket, a Redis that stops answering a worker — the process
is gone within `--stop-after` seconds, naming what was stuck, its CLI children killed. A second
signal exits at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from adapters.ops.procs import cli_children
from tests.support.fleet_support import Api, Proc, fleet_env, free_port
from tests.support.hub_support import FIRST_QUESTION
from tests.support.redis_support import RedisServer, redis_server_binary
from tests.support.slack_double import SlackDouble

ONE_QUESTION = 'name = "one-question"' + FIRST_QUESTION
MARGIN_S = 4.0  # a loaded 2-core machine: the process's own exit and the test's clock


class Bot:
    """One `flower-bot web` on the demo model, a run of it waiting on its question."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        self.tmp, self.extra = tmp, extra
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: Proc | None = None
        self.run_id = ""

    async def start_asking(self) -> Proc:
        scenario = self.tmp / "one.toml"
        scenario.write_text(ONE_QUESTION, encoding="utf-8")
        args = ["web", "--port", str(self.port), "--root", str(self.tmp / "root"), "--flow", "single", "--demo",
                "--scenario", str(scenario), "--timeout", "300", *self.extra]
        self.proc = await Proc.start("bot", "bots.bot", args, "flower-bot ready", fleet_env())
        await self.proc.until_ready(90)
        async with aiohttp.ClientSession() as http:
            api = Api(http, self.base)
            self.run_id = await api.start("pick indentation")
            await api.open_ask(self.run_id, "Tabs or spaces?")
        return self.proc

    def cli(self) -> list[int]:
        assert self.proc is not None
        return cli_children(self.proc.proc.pid)


async def exited(proc: Proc, timeout: float, since: float | None = None) -> tuple[int, float]:
    """The exit code and how long it took from `since` (default: now)."""
    t0 = time.monotonic() if since is None else since
    code = await asyncio.wait_for(proc.proc.wait(), timeout)
    await proc._reader
    return code, time.monotonic() - t0


async def gone(pid: int, timeout: float = 10.0) -> bool:
    """The process no longer exists (a killed child of a dead parent is reaped by init, not at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


def errors(lines: list[str]) -> list[str]:
    return [ln for ln in lines if " ERROR " in ln or '"level": "ERROR"' in ln or "Traceback" in ln]


@pytest.mark.timeout(240)
async def test_a_planned_sigterm_of_the_group_is_quick_quiet_and_json_with_run_ids(tmp_path: Path) -> None:
    bot = Bot(tmp_path, "--log-format", "json", "-v")
    proc = await bot.start_asking()
    try:
        assert bot.cli(), "the run's CLI should be up while it waits"
        os.killpg(proc.proc.pid, signal.SIGTERM)  # the bot and its CLI together
        code, took = await exited(proc, 60)
    finally:
        proc.kill()
    assert code == 0 and took <= 10 + MARGIN_S, (code, took)
    assert not errors(proc.lines), "\n".join(errors(proc.lines))
    logged = [json.loads(ln) for ln in proc.lines if ln.startswith("{")]
    others = [ln for ln in proc.lines if not ln.startswith("{")]
    assert all(ln.startswith("flower web page") for ln in others), others  # printed for a person, not logged
    assert all({"time", "level", "logger", "message"} <= set(rec) for rec in logged)
    mine = [rec for rec in logged if rec.get("run_id") == bot.run_id]
    assert mine, "the run's own lines (its MCP server, the SDK) carry its id"
    assert all(rec.get("run_id") in (None, bot.run_id) for rec in logged)
    ready = next(rec for rec in logged if rec["message"].startswith("flower-bot ready"))
    assert "run_id" not in ready  # a line of the process, not of a run


@pytest.mark.timeout(240)
@pytest.mark.parametrize("how", ["deadline", "second signal"])
async def test_a_cli_that_ignores_the_interrupt_cannot_hold_the_process(tmp_path: Path, how: str) -> None:
    stop_after = 3.0 if how == "deadline" else 120.0
    bot = Bot(tmp_path, "--stop-after", str(stop_after))
    proc = await bot.start_asking()
    try:
        cli = bot.cli()
        assert len(cli) == 1
        os.kill(cli[0], signal.SIGSTOP)  # a stopped process takes no signal but SIGKILL: it ignores every stop
        proc.proc.send_signal(signal.SIGTERM)
        if how == "second signal":
            await asyncio.wait_for(_line(proc, "shutting down"), 30)
            proc.proc.send_signal(signal.SIGTERM)
        code, took = await exited(proc, 60)
        assert await gone(cli[0]), "the CLI child was killed"
    finally:
        proc.kill()
    if how == "deadline":
        assert code == 1 and took <= stop_after + MARGIN_S, (code, took)
        stuck = [ln for ln in proc.lines if "shutdown still stuck after 3s" in ln]
        assert len(stuck) == 1 and f"stopping runs {bot.run_id}" in stuck[0] and "killing 1 CLI" in stuck[0]
    else:
        assert code == 128 + signal.SIGTERM and took <= MARGIN_S, (code, took)
        assert any("second signal: exiting now (killing 1 CLI" in ln for ln in proc.lines)
    assert not errors(proc.lines), "\n".join(errors(proc.lines))


async def _line(proc: Proc, needle: str) -> None:
    while not any(needle in ln for ln in proc.lines):
        await asyncio.sleep(0.05)  # another process's output: no event to wait on


class StuckSlack(SlackDouble):
    """A Slack whose Socket Mode server never reads again after `hello`: the client's close is never
    answered (slack-sdk then waits for aiohttp's 10 s close timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=False)
        await ws.prepare(request)
        self.connections += 1
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        self._sockets.append(ws)
        self._touch()
        await self.release.wait()
        self._sockets.remove(ws)
        return ws

    async def stop(self) -> None:
        self.release.set()
        await super().stop()


@pytest.mark.timeout(180)
async def test_a_slack_that_never_closes_cannot_hold_the_bot(tmp_path: Path) -> None:
    health = free_port()
    async with StuckSlack() as double:
        env = fleet_env({**double.env(), "FLOWER_HEALTH_PORT": str(health)})
        proc = await Proc.start("bot", "bots.bot", ["slack", "--root", str(tmp_path / "root"), "--demo",
                                                    "--stop-after", "2"], "flower-bot ready", env)
        try:
            await proc.until_ready(90)
            async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{health}/readyz") as resp:
                assert resp.status == 200 and await resp.json() == {"ready": True, "parts": {"slack": "connected"}}
            proc.proc.send_signal(signal.SIGTERM)
            code, took = await exited(proc, 60)
        finally:
            proc.kill()
    assert code == 1 and took <= 2 + MARGIN_S, (code, took)
    assert any("shutdown still stuck after 2s in: stopping front end slack" in ln for ln in proc.lines), proc.lines
    assert not errors(proc.lines), "\n".join(errors(proc.lines))


@pytest.fixture
async def redis_server(tmp_path: Path) -> AsyncIterator[RedisServer]:
    if redis_server_binary() is None:
        pytest.skip("redis-server is not installed (make test installs Debian's)")
    server = RedisServer(tmp_path / "redis").start()
    yield server
    assert server.proc is not None
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.proc.pid, signal.SIGCONT)
    server.stop()


@pytest.mark.timeout(240)
async def test_redis_readiness_of_worker_and_front_and_a_silent_redis_cannot_hold_either(
        tmp_path: Path, redis_server: RedisServer) -> None:
    health, web_port = free_port(), free_port()
    args = ["--redis", redis_server.url, "--name", "w1", "--root", str(tmp_path / "w1"), "--demo",
            "--health-port", str(health), "--stop-after", "3", "--log-format", "json"]
    worker = await Proc.start("w1", "bots.worker", args, "flower-worker w1 ready", fleet_env())
    front = await Proc.start("front", "bots.bot", ["web", "--redis", redis_server.url, "--port", str(web_port),
                                                   "--root", str(tmp_path / "root"), "--stop-after", "3"],
                             "flower-bot ready", fleet_env())
    try:
        await worker.until_ready(90)
        await front.until_ready(90)
        async with aiohttp.ClientSession() as http:
            async def get(url: str) -> tuple[int, Any]:
                async with http.get(url) as resp:
                    return resp.status, (await resp.text() if url.endswith("/metrics") else await resp.json())

            side, page = f"http://127.0.0.1:{health}", f"http://127.0.0.1:{web_port}"
            assert await get(f"{side}/healthz") == (200, {"ok": True})
            assert await get(f"{side}/readyz") == (200, {"ready": True, "parts": {"redis": "up", "loops": "up"}})
            assert await get(f"{page}/readyz") == (200, {"ready": True, "parts": {"web": "listening", "redis": "up"}})
            status, text = await get(f"{side}/metrics")
            assert status == 200 and 'flower_runs{state="running"} 0.0' in text and "flower_cli_processes 0.0" in text
            assert redis_server.proc is not None
            os.kill(redis_server.proc.pid, signal.SIGSTOP)  # Redis stops answering (not refusing: silent)
            for url in (f"{side}/readyz", f"{page}/readyz"):
                status, body = await get(url)
                assert status == 503 and body["parts"]["redis"] in ("timeout", "down"), body
            assert (await get(f"{side}/readyz"))[1]["parts"]["loops"] == "up"
        t0 = time.monotonic()
        for proc in (worker, front):
            proc.proc.send_signal(signal.SIGTERM)
        ends = await asyncio.gather(exited(worker, 60, t0), exited(front, 60, t0))
        took = dict(zip(("w1", "front"), ends, strict=True))
    finally:
        worker.kill()
        front.kill()
    for name, (code, seconds) in took.items():
        assert code in (0, 1) and seconds <= 3 + MARGIN_S, (name, code, seconds)
    assert took["w1"][0] == 1  # leaving Redis hangs: the deadline ends it
    stuck = [json.loads(ln) for ln in worker.lines if "shutdown still stuck" in ln]
    assert len(stuck) == 1 and "leaving Redis" in stuck[0]["message"] and stuck[0]["level"] == "WARNING"
    for proc in (worker, front):
        assert not errors(proc.lines), "\n".join(errors(proc.lines))
