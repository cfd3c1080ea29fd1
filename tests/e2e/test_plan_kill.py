"""A plan card across a kill of a real `flower-bot web` process (its whole process group, CLIs too).

The run plans first: its command is refused while it plans, then it presents its plan. Killed while the plan
waits (parked, or with its CLI still up), the next life shows the plan again on its old card; approved there,
the command runs exactly once. Approved and killed at once, before the CLI heard it: the next life applies the
kept decision, asks nobody again, and the command runs exactly once.
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from flower_core.human.plan_review import APPROVE_GO, APPROVED
from tests.conftest import scenario_of
from tests.support.campaign.botproc import BotProcess
from tests.support.fleet_support import Api

pytestmark = pytest.mark.slow

COMMAND = "echo ran >> effect.txt; echo out=42"
PLAN = "1. Append to effect.txt.\n2. Report what it printed."


def scenario() -> Any:
    bash = {"tool": "Bash", "input": {"command": COMMAND}}
    return scenario_of({"name": "main", "turn": [
        {"say": "Trying early.", "call": [bash]},
        {"say": "My plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
        {"say": "Running.", "call": [bash]},
        {"say": "Saw: {last_tool_result}"}]})


@pytest.fixture
async def make_bot(tmp_path: Path, double_factory: Callable[..., Any],
                   cli_home: Path) -> AsyncIterator[Callable[..., Awaitable[tuple[BotProcess, Any]]]]:
    made: list[BotProcess] = []

    async def make(park_after_s: float) -> tuple[BotProcess, Any]:
        md = await double_factory(scenario())
        home = tmp_path / "home"
        home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
        config = tmp_path / "bot.toml"
        config.write_text(f"[bot]\npark_after_s = {park_after_s}\nwarm_pool = 0\n", encoding="utf-8")
        proc = BotProcess(tmp_path / "root", tmp_path / "bot.log", {**md.env(cli_home), "HOME": str(home)},
                          max_runs=2)
        proc.args += ["--config", str(config)]
        made.append(proc)
        return proc, md
    try:
        yield make
    finally:
        for proc in made:
            await proc.stop()


async def start_planning(api: Api) -> str:
    status, body = await api.post("/api/runs", {"task": "append to the file", "plan": True})
    assert status == 201, body
    return str(body["id"])


async def plan_card(api: Api, run_id: str) -> dict[str, Any]:
    async def probe() -> Any:
        return next((a for a in await api.get(f"/api/runs/{run_id}/asks") if a.get("kind") == "plan"), None)
    found: dict[str, Any] = await api.until("the plan card", probe, timeout=90)
    return found


async def records(root: Path, api: Api) -> list[dict[str, Any]]:
    async def probe() -> Any:
        return [json.loads(p.read_text()) for p in root.rglob("parked/*.json")]
    found: list[dict[str, Any]] = await api.until("the plan's record", probe, timeout=30)
    return found


async def approve_and_finish(api: Api, run_id: str, card: dict[str, Any], bot: BotProcess) -> list[dict[str, Any]]:
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": card["id"], "text": APPROVE_GO})
    assert status == 200 and body["ok"], body
    done = await api.ended(run_id)
    assert done["status"] == "done", (done, bot.tail())
    events: list[dict[str, Any]] = await api.events(run_id)
    return events


@pytest.mark.parametrize("parked", [True, False], ids=["parked", "cli-up"])
async def test_a_plan_killed_while_it_waits_comes_back_on_its_card_and_its_work_runs_once(
        make_bot: Callable[..., Awaitable[tuple[BotProcess, Any]]], tmp_path: Path, parked: bool) -> None:
    root = tmp_path / "root"
    bot, md = await make_bot(0 if parked else 600)
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await start_planning(api)
        first = await plan_card(api, run_id)
        assert first["plan"] == PLAN, first
        [record] = await records(root, api)
        assert record["kind"] == "plan" and record["decision"] == "" and record["input"]["plan"] == PLAN
    await bot.kill(signal.SIGKILL)
    assert list(root.rglob("effect.txt")) == []  # refused while planning, and not approved yet

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        again = await plan_card(api, run_id)
        assert again["id"] == first["id"] and again["plan"] == PLAN, (first, again, bot.tail())
        events = await approve_and_finish(api, run_id, again, bot)
        status, late = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": again["id"], "text": APPROVE_GO})
        assert status == 409, late  # decided already: a second click is told
    [effect] = list(root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", bot.tail()  # exactly once, after the approval
    assert any(e["kind"] == "text" and "Saw: out=42" in e["text"] for e in events), bot.tail()
    assert APPROVED in [r.last_tool_result for r in md.model_requests()]
    assert list(root.rglob("parked/*.json")) == []


async def test_an_approval_killed_before_the_cli_heard_it_is_applied_in_the_next_life_and_asked_nowhere(
        make_bot: Callable[..., Awaitable[tuple[BotProcess, Any]]], tmp_path: Path) -> None:
    root = tmp_path / "root"
    bot, md = await make_bot(0)
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await start_planning(api)
        card = await plan_card(api, run_id)

        async def parked() -> Any:
            return any(e["kind"] == "system" and e["text"] == "parked" for e in await api.events(run_id))
        await api.until("the run to park", parked, timeout=90)
        status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": card["id"], "text": APPROVE_GO})
        assert status == 200 and body["ok"], body
    await bot.kill(signal.SIGKILL)  # told "ok": from here on nothing may be lost
    assert json.loads(next(root.rglob("plan.json")).read_text())["state"] == "go"

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        done = await api.ended(run_id)
        assert done["status"] == "done", (done, bot.tail())
        assert not [a for a in await api.get(f"/api/runs/{run_id}/asks") if a.get("kind") == "plan"]
    [effect] = list(root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", bot.tail()
    asks = [r for r in md.model_requests() if r.last_tool_result == APPROVED]
    assert asks, bot.tail()
