"""A scale-out fleet as real processes: one `flower-bot web --redis` front and `flower-worker`s, each in
a session of its own (a SIGKILL of the group takes a worker's CLI along, as when a machine goes),
plus the web API calls the tests drive it with. Everything listens on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.hub_support import TWO_QUESTIONS_SCENARIO

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = TWO_QUESTIONS_SCENARIO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fleet_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "SLACK_", "FLOWER_"))}
    return {**env, "PYTHONPATH": str(ROOT), **(extra or {})}


class Proc:
    """One process of the fleet; its output is read as it comes, `ready` is set on its ready line."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, marker: str) -> None:
        self.name, self.proc, self.marker = name, proc, marker
        self.lines: list[str] = []
        self.ready = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, name: str, module: str, args: list[str], marker: str, env: dict[str, str]) -> Proc:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", module, *args, cwd=ROOT, env=env,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        return cls(name, proc, marker)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            self.lines.append(line.decode(errors="replace").rstrip())
            if self.marker in self.lines[-1]:
                self.ready.set()

    async def until_ready(self, timeout: float = 60.0) -> None:
        waiter = asyncio.ensure_future(self.ready.wait())
        ended = asyncio.ensure_future(self.proc.wait())
        await asyncio.wait({waiter, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        ended.cancel()
        if not self.ready.is_set():
            raise AssertionError(f"{self.name} did not get ready:\n" + "\n".join(self.lines[-40:]))

    def kill(self) -> None:
        """SIGKILL the whole process group (the worker and the CLI it started)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    async def stop(self) -> int:
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            code = await asyncio.wait_for(self.proc.wait(), 60)
        except TimeoutError:
            self.kill()
            code = await self.proc.wait()
        await self._reader
        return code


class Fleet:
    """The front and its workers on one Redis and one shared run root."""

    def __init__(self, tmp: Path, redis_url: str, scenario: str = SCENARIO) -> None:
        self.tmp, self.redis_url = tmp, redis_url
        self.root = tmp / "root"
        self.scenario = tmp / "scenario.toml"
        self.scenario.write_text(scenario, encoding="utf-8")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.front: Proc | None = None
        self.workers: dict[str, Proc] = {}

    async def start_front(self) -> Proc:
        args = ["web", "--redis", self.redis_url, "--root", str(self.root), "--port", str(self.port),
                "--flow", "single"]
        self.front = await Proc.start("front", "bots.bot", args, "flower-bot ready", fleet_env())
        await self.front.until_ready()
        return self.front

    async def start_worker(self, name: str, *extra: str, model_env: dict[str, str] | None = None) -> Proc:
        """`model_env`: the model to use (ANTHROPIC_BASE_URL of a double this test runs, which outlives the
        worker) instead of the worker's own demo double."""
        model = [] if model_env is not None else ["--demo", "--scenario", str(self.scenario)]
        args = ["--redis", self.redis_url, "--name", name, "--root", str(self.root / f".{name}"), "--flow", "single",
                *model, "--heartbeat", "0.3", "--dead-after", "2", *extra]
        proc = await Proc.start(name, "bots.worker", args, "flower-worker", fleet_env(model_env))
        self.workers[name] = proc
        await proc.until_ready()
        return proc

    async def stop(self) -> None:
        for proc in [*self.workers.values(), *([self.front] if self.front else [])]:
            await proc.stop()

    def logs(self) -> str:
        parts = []
        for proc in [*([self.front] if self.front else []), *self.workers.values()]:
            parts.append(f"--- {proc.name}\n" + "\n".join(proc.lines[-60:]))
        return "\n".join(parts)


class Api:
    """The front's web API, as the page uses it."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session, self.base = session, base

    async def get(self, path: str) -> Any:
        async with self.session.get(f"{self.base}{path}") as resp:
            return await resp.json()

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        async with self.session.post(f"{self.base}{path}", data=json.dumps(body),
                                     headers={"Content-Type": "application/json", "Origin": self.base}) as resp:
            return resp.status, await resp.json()

    async def start(self, task: str) -> str:
        status, body = await self.post("/api/runs", {"task": task})
        assert status == 201, body
        return str(body["id"])

    async def until(self, what: str, probe: Any, timeout: float = 90.0) -> Any:
        """Poll the API until `probe()` returns something truthy (the API is polled by design: the
        seed's HTTP front end is sequence numbers + polling)."""
        async def loop() -> Any:
            while True:
                got = await probe()
                if got:
                    return got
                await asyncio.sleep(0.1)
        try:
            return await asyncio.wait_for(loop(), timeout)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    async def open_ask(self, run_id: str, question: str, timeout: float = 90.0) -> dict[str, Any]:
        async def probe() -> Any:
            asks = await self.get(f"/api/runs/{run_id}/asks")
            return next((a for a in asks if a["question"] == question), None)
        found: dict[str, Any] = await self.until(f"the question {question!r}", probe, timeout)
        return found

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        body = await self.get(f"/api/runs/{run_id}/events?after=0")
        return list(body["events"])

    async def run(self, run_id: str) -> dict[str, Any]:
        return dict(await self.get(f"/api/runs/{run_id}"))

    async def ended(self, run_id: str, timeout: float = 90.0) -> dict[str, Any]:
        async def probe() -> Any:
            run = await self.run(run_id)
            return run if run["status"] in ("done", "failed", "stopped") else None
        found: dict[str, Any] = await self.until("the run to end", probe, timeout)
        return found
