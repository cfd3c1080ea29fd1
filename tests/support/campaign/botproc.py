"""The bot under test as a real process: `python -m bots.bot web --flow single` on one root and one port.

Each life runs in a session of its own, so a kill of its process group takes the CLIs it started
along, as a machine crash does. Its output goes to one log file over all its lives (a pipe nobody
reads could stall it). Ready means the HTTP API answers, which is all a client can see. A kill does
not wait for anything: SIGKILL (the group, at once) or SIGTERM (the group, as a service manager stops
a unit), then SIGKILL for whatever is left after `stop_wait_s`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp

from tests.support.fleet_support import ROOT, fleet_env, free_port

READY_POLL_S = 0.1  # the API has no "I am up" push: poll it, under a deadline


class BotProcess:
    def __init__(self, root: Path, log_path: Path, env: dict[str, str], *, max_runs: int,
                 stop_wait_s: float = 12.0) -> None:  # issue 18: SIGTERM ends it within 10 s; a margin
        self.root, self.log_path, self.stop_wait_s = root, log_path, stop_wait_s
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = fleet_env(env)
        self.args = ["web", "--flow", "single", "--root", str(root), "--port", str(self.port),
                     "--max-runs", str(max_runs)]
        self.proc: asyncio.subprocess.Process | None = None
        self.lives = 0
        self.ready_s: list[float] = []  # start -> API answering, per life
        self.term_hung = 0  # SIGTERMs the process did not end within stop_wait_s
        self.term_left = 0  # SIGTERMs after which processes of its group were still there
        self.exit_codes: list[int] = []

    async def start(self, timeout: float = 90.0) -> None:
        self.lives += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n==== life {self.lives} ====\n".encode())
            log.flush()
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bots.bot", *self.args, cwd=ROOT, env=self.env, stdin=asyncio.subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True)
        t0 = time.perf_counter()
        await self._until_ready(timeout)
        self.ready_s.append(time.perf_counter() - t0)

    async def _until_ready(self, timeout: float) -> None:
        assert self.proc is not None
        deadline = time.perf_counter() + timeout
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while time.perf_counter() < deadline:
                if self.proc.returncode is not None:
                    raise AssertionError(f"the bot exited with {self.proc.returncode} before it was ready:\n"
                                         + self.tail())
                try:
                    async with session.get(f"{self.base}/api/runs") as resp:
                        if resp.status == 200:
                            return
                except (aiohttp.ClientError, TimeoutError):
                    pass
                await asyncio.sleep(READY_POLL_S)
        raise AssertionError(f"the bot was not ready within {timeout:g} s:\n" + self.tail())

    def _killpg(self, sig: int) -> bool:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return False
        return True

    async def kill(self, sig: signal.Signals) -> None:
        """End this life with `sig` (to the whole group); returns once every process of it is gone."""
        assert self.proc is not None
        self._killpg(sig)
        if sig == signal.SIGTERM:
            try:
                await asyncio.wait_for(self.proc.wait(), self.stop_wait_s)
            except TimeoutError:
                self.term_hung += 1
            if self.proc.returncode is not None and self._killpg(0):
                self.term_left += 1  # the bot is gone but a CLI of its group outlived it
        self._killpg(signal.SIGKILL)
        self.exit_codes.append(await self.proc.wait())

    async def stop(self) -> None:
        """The end of the campaign: a planned shutdown (not counted as a kill)."""
        if self.proc is not None and self.proc.returncode is None:
            await self.kill(signal.SIGTERM)

    def tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])
