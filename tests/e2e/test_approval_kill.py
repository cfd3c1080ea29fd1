"""A tool approval across a SIGKILL of a real `flower-bot web` process (its whole process group, CLIs too):
the approval parks the run (no CLI while it waits), the bot is killed and started again on the same root,
the approval is still there and answerable over the HTTP API, and allowed, the command runs exactly once
(its effect in the workspace: one line). Durable before shown: a question or approval killed the moment
its card is listed comes back on its old card."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import scenario_of
from tests.support.campaign.botproc import BotProcess
from tests.support.fleet_support import Api

pytestmark = pytest.mark.slow

COMMAND = "echo ran >> effect.txt; echo out=42"


def scenario() -> Any:
    return scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": COMMAND}}]},
        {"say": "Saw: {last_tool_result}"}]})


def question_scenario() -> Any:
    return scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [{"tool": "mcp__human__ask",
                                     "input": {"question": "Which colour?", "options": ["red", "blue"]}}]},
        {"say": "Saw: {last_tool_result}"}]})


@pytest.fixture
async def make_bot(tmp_path: Path, double_factory: Callable[..., Any],
                   cli_home: Path) -> AsyncIterator[Callable[..., Awaitable[BotProcess]]]:
    """A bot on the model double whose approvals park after ``park_after_s`` (started once per test)."""
    made: list[BotProcess] = []

    async def make(park_after_s: float, play: Callable[[], Any] = scenario) -> BotProcess:
        md = await double_factory(play())
        home = tmp_path / "home"
        home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
        config = tmp_path / "bot.toml"
        config.write_text(f'[bot]\npark_after_s = {park_after_s}\nwarm_pool = 0\nask_tools = ["Bash"]\n',
                          encoding="utf-8")
        proc = BotProcess(tmp_path / "root", tmp_path / "bot.log", {**md.env(cli_home), "HOME": str(home)},
                          max_runs=2)
        proc.args += ["--config", str(config)]
        made.append(proc)
        return proc
    try:
        yield make
    finally:
        for proc in made:
            await proc.stop()


async def open_approval(api: Api, run_id: str) -> dict[str, Any]:
    async def probe() -> Any:
        asks = await api.get(f"/api/runs/{run_id}/asks")
        return next((a for a in asks if a.get("kind") == "approval"), None)
    found: dict[str, Any] = await api.until("the approval", probe, timeout=90)
    return found


async def parked(api: Api, run_id: str) -> None:
    async def probe() -> Any:
        return any(e["kind"] == "system" and e["text"] == "parked" for e in await api.events(run_id))
    await api.until("the run to park", probe, timeout=90)


async def test_an_approval_parked_across_a_sigkill_is_answerable_and_runs_its_command_once(
        make_bot: Callable[..., Awaitable[BotProcess]], tmp_path: Path) -> None:
    root, bot = tmp_path / "root", await make_bot(0.3)
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await api.start("run the command")
        first = await open_approval(api, run_id)
        assert first["tool"] == "Bash" and first["input"]["command"] == COMMAND, first
        await parked(api, run_id)
    await bot.kill(signal.SIGKILL)
    [record] = [json.loads(p.read_text()) for p in root.rglob("parked/*.json")]
    assert record["kind"] == "approval" and record["decision"] == "" and record["input"]["command"] == COMMAND
    assert list(root.rglob("effect.txt")) == []

    await bot.start()  # the run is woken, its approval asked again, parked from the start
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        again = await open_approval(api, run_id)
        assert again["tool"] == "Bash" and again["input"]["command"] == COMMAND, again
        status, body = await api.post(f"/api/runs/{run_id}/approve", {"ask_id": again["id"], "decision": "once"})
        assert status == 200 and body["ok"], body
        done = await api.ended(run_id)
        assert done["status"] == "done", (done, bot.tail())
        status, late = await api.post(f"/api/runs/{run_id}/approve", {"ask_id": again["id"], "decision": "once"})
        assert status == 409, late  # decided already: a second click is told
        events = await api.events(run_id)
    [effect] = list(root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", bot.tail()  # exactly once, after the restart
    texts = [e["text"] for e in events if e["kind"] == "text"]
    assert any("Saw: out=42" in t for t in texts), texts
    assert list(root.rglob("parked/*.json")) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
async def test_an_approval_waiting_with_its_cli_up_across_a_kill_is_asked_again_and_runs_once(
        make_bot: Callable[..., Awaitable[BotProcess]], tmp_path: Path, sig: signal.Signals) -> None:
    """Killed before it parks (its CLI still up, waiting on the callback), or stopped as a service manager
    stops it: the record written when the approval was asked says the call waited for a person, not that
    it ran, so the next life asks it again."""
    root, bot = tmp_path / "root", await make_bot(600)
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await api.start("run the command")
        await open_approval(api, run_id)

        async def marked() -> Any:
            return [json.loads(p.read_text()) for p in root.rglob("parked/*.json")]
        [record] = await api.until("the waiting approval's record", marked, timeout=30)
        assert record["kind"] == "approval" and record["decision"] == "", record
        assert not any(e["text"] == "parked" for e in await api.events(run_id))  # it waits live
    await bot.kill(sig)

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        again = await open_approval(api, run_id)
        status, body = await api.post(f"/api/runs/{run_id}/approve", {"ask_id": again["id"], "decision": "once"})
        assert status == 200 and body["ok"], body
        done = await api.ended(run_id)
        assert done["status"] == "done", (done, bot.tail())
        events = await api.events(run_id)
    [effect] = list(root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", bot.tail()
    assert any(e["kind"] == "text" and "Saw: out=42" in e["text"] for e in events), bot.tail()
    assert list(root.rglob("parked/*.json")) == []


@pytest.mark.parametrize("kind", ["approval", "question"])
async def test_a_card_killed_the_moment_it_is_listed_comes_back_on_its_old_card(
        make_bot: Callable[..., Awaitable[BotProcess]], tmp_path: Path, kind: str) -> None:
    """SIGKILL as soon as the card can be seen (GET .../asks lists it), the CLI still up: what brings it back
    was durable before it was shown, so the next life shows it again under the same card id, and one
    decision on it reaches the model once."""
    root, bot = tmp_path / "root", await make_bot(600, scenario if kind == "approval" else question_scenario)
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await api.start("run the command" if kind == "approval" else "pick a colour")

        async def listed() -> Any:
            return next((a for a in await api.get(f"/api/runs/{run_id}/asks") if a.get("kind") == kind), None)
        first = await api.until("the card", listed, timeout=90)
    await bot.kill(signal.SIGKILL)
    if kind == "approval":  # its record was written before the card went out
        [record] = [json.loads(p.read_text()) for p in root.rglob("parked/*.json")]
        assert record["kind"] == "approval" and record["decision"] == "", record

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        again = await api.until("the card again", listed, timeout=90)
        assert again["id"] == first["id"], (first, again, bot.tail())  # the old card, not a new one
        if kind == "approval":
            status, body = await api.post(f"/api/runs/{run_id}/approve", {"ask_id": again["id"], "decision": "once"})
        else:
            status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": again["id"], "text": "blue"})
        assert status == 200 and body["ok"], body
        done = await api.ended(run_id)
        assert done["status"] == "done", (done, bot.tail())
        texts = [e["text"] for e in await api.events(run_id) if e["kind"] == "text"]
    if kind == "approval":
        [effect] = list(root.rglob("effect.txt"))
        assert effect.read_text() == "ran\n", bot.tail()
        assert any("Saw: out=42" in t for t in texts), texts
    else:
        assert any("Saw: blue" in t for t in texts), texts
