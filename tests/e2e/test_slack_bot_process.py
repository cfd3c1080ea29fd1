"""`flower-bot slack` as a real process against the Slack double: configuration errors are one line
and exit 2; and a life across a crash — a run asks, the process is killed (SIGKILL, its CLI with
it), a new process reports the run in its thread and the old card's button wakes it with the answer."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.support.hub_support import BACK_NOTE, RESTART_SCENARIO
from tests.support.slack_double import APP_TOKEN, BOT_TOKEN, SlackDouble
from tests.support.slack_support import C1, card, root_of

ROOT = Path(__file__).resolve().parents[2]


def bot_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "SLACK_", "FLOWER_BOT_"))}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


class Bot:
    """One `flower-bot` process in a session of its own (so a kill takes its CLI along); its output
    is read as it comes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc, self.lines = proc, []
        self.ready = asyncio.Event()  # the "flower-bot ready" line was printed
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, args: list[str], env: dict[str, str]) -> Bot:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bots.bot", *args, cwd=ROOT, env=env,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            self.lines.append(line.decode(errors="replace").rstrip())
            if "flower-bot ready" in self.lines[-1]:
                self.ready.set()

    async def exit_code(self) -> int:
        code = await asyncio.wait_for(self.proc.wait(), 60)
        await self._reader
        return code

    async def kill(self) -> None:
        """SIGKILL this process's group: the bot and the CLI it started, as in a crash."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        await self.exit_code()

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await self.exit_code()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


async def transcript_holds(root: Path, needle: str, timeout: float = 60.0) -> None:
    """Wait until a run's session store on disk holds `needle`: the CLI mirrors its transcript there
    asynchronously, and a woken run resumes from what it holds, so a test that kills the bot waits for it."""
    async def poll() -> None:
        while True:
            for db in root.glob("*/runs/sessions.db"):
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                    try:
                        if con.execute("SELECT 1 FROM entries WHERE data LIKE ?", (f"%{needle}%",)).fetchone():
                            return
                    except sqlite3.OperationalError:  # the file exists, its tables not yet
                        pass
            await asyncio.sleep(0.05)  # polling a file: there is no event to wait on
    await asyncio.wait_for(poll(), timeout)


def test_a_missing_token_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    from bots.bot import main
    assert main(["slack", "--root", str(tmp_path), "--demo"]) == 2  # the same main() the process runs
    err = capsys.readouterr().err
    assert err.startswith("flower-bot: SLACK_APP_TOKEN is not set") and err.count("\n") == 1
    assert BOT_TOKEN not in err


async def test_a_refused_token_stops_the_process_with_one_line_and_exit_2(tmp_path: Path) -> None:
    async with SlackDouble() as double:
        env = {**double.env(), "SLACK_BOT_TOKEN": "xoxb-not-the-right-one"}
        refused = await Bot.start(["slack", "--root", str(tmp_path), "--demo"], bot_env(env))
        assert await refused.exit_code() == 2
        assert refused.lines[-1].startswith("flower-bot: Slack refused SLACK_BOT_TOKEN")
        assert "xoxb-not-the-right-one" not in refused.output and "Traceback" not in refused.output
        assert double.connections == 0


@pytest.mark.timeout(300)  # two bot processes and two CLI sessions on a shared machine
async def test_a_killed_bot_restarts_and_the_old_card_still_answers(tmp_path: Path) -> None:
    (tmp_path / "life.toml").write_text(RESTART_SCENARIO, encoding="utf-8")
    args = ["slack", "--root", str(tmp_path / "root"), "--flow", "single", "--demo", "--scenario",
            str(tmp_path / "life.toml"), "--timeout", "120"]
    bots: list[Bot] = []
    async with SlackDouble(names={"UALICE": "Alice"}) as double:

        async def up() -> Bot:
            bots.append(await Bot.start(args, bot_env(double.env())))
            await asyncio.wait_for(bots[-1].ready.wait(), 90)  # connected, and old runs reported
            return bots[-1]

        try:
            first = await up()
            assert await double.slash("/flower", "pick indentation please", user="UALICE", channel=C1) is None
            ask = await double.wait_for(lambda d: d.roots(C1) and card(d, C1, root_of(d).ts, "Tabs or spaces?"), 60)
            root = root_of(double).ts
            await double.wait_for(lambda d: "Waiting" in root_of(d).header(), 60)
            old_click = double.click_payload(ask, "spaces", user="UALICE")
            await transcript_holds(tmp_path / "root", "Tabs or spaces?")
            await first.kill()

            second = await up()
            await double.wait_for(lambda d: root_of(d).header().startswith("🅿️"), 60)  # back by itself, parked
            assert card(double, C1, root, "Tabs or spaces?") is not None  # still open, buttons and all
            await double.send("interactive", old_click)
            await double.wait_for(lambda d: d.find(C1, root, lambda m: "Going with spaces." in m.body()), 90)
            await double.wait_for(lambda d: d.find(C1, root, lambda m: m.header() == "✅ Finished"), 60)
            assert await second.stop() == 0
        finally:
            for n, bot in enumerate(bots):
                if bot.proc.returncode is None:
                    await bot.stop()
                print(f"---- bot process {n + 1} ----\n{bot.output}")  # shown when the test fails
            for m in double.thread(C1, double.roots(C1)[0].ts) if double.roots(C1) else []:
                print(f"---- {m.header()!r}: {m.body()[:300]!r}")
    settled = card(double, C1, root, "Tabs or spaces?", open_=False)
    assert settled is not None and "Answer: spaces" in settled.body()
    assert len(double.roots(C1)) == 1 and double.connections == 2
    assert double.find(C1, root, lambda m: BACK_NOTE in m.body())
    for bot in bots:
        assert BOT_TOKEN not in bot.output and APP_TOKEN not in bot.output and "Traceback" not in bot.output
