"""`flower-bot discord` as a real process against the Discord double: configuration errors, and a life
across a restart — a run asks, the process is stopped, a new process reports it and the old card's
button (posted by the first process) wakes it with the answer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.support.discord_double import TOKEN, DiscordDouble
from tests.support.discord_support import discord_double, message_with, open_card, settled_card
from tests.support.hub_support import BACK_NOTE, RESTART_SCENARIO

__all__ = ["discord_double"]

ROOT = Path(__file__).resolve().parents[2]


async def transcript_on_disk(db: Path, needle: str, timeout: float = 30.0) -> None:
    """Wait until the run's session store (written by the bot process) holds `needle`, so the resumed
    history the next process sees is the same every time (cf. hub_support.transcript_has)."""
    async def poll() -> None:
        while True:
            if db.exists():
                with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
                    try:
                        if conn.execute("SELECT 1 FROM entries WHERE data LIKE ?", (f"%{needle}%",)).fetchone():
                            return
                    except sqlite3.OperationalError:
                        pass  # the schema is not there yet
            await asyncio.sleep(0.05)  # another process writes it: there is no event to wait on
    await asyncio.wait_for(poll(), timeout)


def bot_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "DISCORD_", "FLOWER_BOT_"))}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1", **extra}


class Bot:
    """One `flower-bot` process; its output is read as it comes (never left to fill a pipe)."""

    started: ClassVar[list[Bot]] = []

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc, self.lines = proc, []
        self._reader = asyncio.create_task(self._read())
        Bot.started.append(self)

    @classmethod
    async def start(cls, args: list[str], env: dict[str, str]) -> Bot:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bots.bot", *args, cwd=ROOT, env=env,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT)
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            self.lines.append(line.decode(errors="replace").rstrip())

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:  # a hung shutdown: make it dump every thread's stack into the output
            self.proc.send_signal(signal.SIGABRT)
            try:
                code = await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                code = await self.proc.wait()
        await self._reader
        return code

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture(autouse=True)
def no_bot_left_behind() -> Iterator[None]:
    """Whatever happens to a test (a timeout included), none of its bot processes outlives it."""
    yield
    for bot in Bot.started:
        if bot.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                bot.proc.kill()
    Bot.started.clear()


async def test_a_token_discord_refuses_is_one_line_and_exit_2(tmp_path: Path, discord_double: DiscordDouble) -> None:
    d = discord_double
    refused = await Bot.start(["discord", "--root", str(tmp_path), "--demo"],
                              bot_env({**d.env(), "DISCORD_TOKEN": "wrong-token-value"}))
    assert await asyncio.wait_for(refused.proc.wait(), 60) == 2
    await refused._reader
    last = refused.lines[-1]
    assert last.startswith("flower-bot: Discord refused DISCORD_TOKEN") and "Traceback" not in refused.output
    assert "wrong-token-value" not in refused.output


async def test_a_run_survives_a_restart_of_the_bot_process(tmp_path: Path, discord_double: DiscordDouble) -> None:
    d = discord_double
    (tmp_path / "life.toml").write_text(RESTART_SCENARIO, encoding="utf-8")
    (tmp_path / "bot.toml").write_text("[discord]\nready_timeout = 0.1\n", encoding="utf-8")
    args = ["discord", "--root", str(tmp_path / "root"), "--config", str(tmp_path / "bot.toml"), "--flow", "single",
            "--demo", "--scenario", str(tmp_path / "life.toml"), "--timeout", "120"]
    alice = d.person("Alice")
    bots: list[Bot] = []

    async def up(env: dict[str, str]) -> Bot:
        bots.append(await Bot.start(args, bot_env(env)))
        sessions = d.gateway.identifies
        await d.until(lambda _: d.gateway.identifies > sessions and d.gateway.connected and d.commands, 60)
        await d.until(lambda _: any("flower-bot ready" in line for line in bots[-1].lines), 60)
        return bots[-1]

    try:
        first = await up(d.env())
        started = await d.slash(alice, "run", task="pick indentation")
        await d.until(lambda _: any("Started run" in t for t in started.texts()), 60)
        thread = int(next(m for m in d.bot_messages(d.channel_id) if "thread" in m)["id"])
        card = await d.until(lambda _: open_card(d, thread, "Tabs or spaces?"), 60)
        await d.until(lambda _: "❓" in d.messages[thread]["embeds"][0]["title"], 60)
        run_id = next(p.name for p in (tmp_path / "root").iterdir() if p.is_dir() and p.name.startswith("r"))
        await transcript_on_disk(tmp_path / "root" / run_id / "runs" / "sessions.db", "Tabs or spaces?")
        assert await first.stop() == 0

        # The second process finds its gateway through the REST API (no DISCORD_GATEWAY_URL).
        no_gateway = {k: v for k, v in d.env().items() if k != "DISCORD_GATEWAY_URL"}
        second = await up(no_gateway)
        await d.until(lambda _: d.messages[thread]["embeds"][0]["title"].startswith("🅿️"), 60)  # back, parked
        assert open_card(d, thread, "Tabs or spaces?") is not None  # still open, buttons and all
        click = await d.click(alice, int(card["id"]), label="spaces")
        await d.until(lambda _: message_with(d, thread, "Going with spaces."), 90)
        await d.until(lambda _: message_with(d, thread, "✅ Finished"), 60)
        assert await second.stop() == 0
    finally:
        for bot in bots:
            if bot.proc.returncode is None:
                await bot.stop()
            print(f"---- flower-bot output ----\n{bot.output}")  # shown when the test fails
        print("---- the thread ----\n" + "\n".join(d.text(m) for m in d.thread_messages(thread)) if bots else "")
    assert click.acked and not click.late and not click.texts()  # answered: the card says so
    settled = settled_card(d, thread, "Tabs or spaces?")
    assert settled is not None and settled["embeds"][0]["title"] == "✅ Answered by Alice"
    assert d.rest("GET", "/gateway/bot") and d.gateway.identifies == 2
    for bot in bots:
        assert TOKEN not in bot.output and "Traceback" not in bot.output
    assert any(BACK_NOTE in d.text(m) for m in d.bot_messages(thread))
