"""A plan card over Redis when its holder dies: w1 parks the plan-first run on its plan card (no CLI while it
waits) and is SIGKILLed with its process group; w2 takes the run over, shows the plan again on the old card, a
person approves it over the web API, and the command the plan was about runs exactly once.

Real processes (`flower-bot web --redis`, two `flower-worker`s, redis-server), the real SDK + CLI on one model
double this test runs (it outlives the workers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from flower_core.human.plan_review import APPROVE_GO
from tests.conftest import scenario_of
from tests.support.fleet_support import Api, Fleet

pytestmark = pytest.mark.slow

COMMAND = "echo ran >> effect.txt; echo out=42"
PLAN = "1. Append to effect.txt."


def plans_asked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "ask" and e["payload"].get("kind") == "plan"
            and e["payload"].get("state") == "asked"]


async def test_a_worker_killed_while_the_plan_waits_hands_it_over_and_the_work_runs_once(
        tmp_path: Path, fleet: Fleet, double_factory: Any, cli_home: Path) -> None:
    bash = {"tool": "Bash", "input": {"command": COMMAND}}
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Trying early.", "call": [bash]},
        {"say": "My plan.", "call": [{"tool": "ExitPlanMode", "input": {"plan": PLAN}}]},
        {"say": "Running.", "call": [bash]},
        {"say": "Saw: {last_tool_result}"}]}))
    home = tmp_path / "home"
    home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
    model = {**md.env(cli_home), "HOME": str(home)}
    await fleet.start_front()
    await fleet.start_worker("w1", "--park-after", "0.3", model_env=model)
    async with aiohttp.ClientSession() as session:
        api = Api(session, fleet.base)
        status, body = await api.post("/api/runs", {"task": "append to the file", "plan": True})
        assert status == 201, body
        run_id = str(body["id"])

        async def parked() -> Any:
            events = await api.events(run_id)
            return plans_asked(events) and any(e["kind"] == "system" and e["text"] == "parked" for e in events)
        await api.until("w1 to park the plan", parked)
        await fleet.start_worker("w2", "--park-after", "0.3", model_env=model)
        fleet.workers["w1"].kill()
        await fleet.workers["w1"].proc.wait()

        async def asked_again() -> Any:
            run = await api.run(run_id)
            if run["worker"] != "w2" or len(plans_asked(await api.events(run_id))) < 2:
                return None
            return next((a for a in await api.get(f"/api/runs/{run_id}/asks") if a.get("kind") == "plan"), None)
        try:
            again = await api.until("w2 to show the plan again", asked_again, timeout=60)
        except AssertionError:
            raise AssertionError(f"{[(e['kind'], e['text'][:60]) for e in await api.events(run_id)]}\n"
                                 f"{fleet.logs()}") from None
        assert again["plan"] == PLAN, again
        assert list(fleet.root.rglob("effect.txt")) == []
        status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": again["id"], "text": APPROVE_GO})
        assert status == 200 and body["ok"], body
        done = await api.ended(run_id)
        assert done["status"] == "done", fleet.logs()
        events = await api.events(run_id)
    [effect] = list(fleet.root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", fleet.logs()  # exactly once, on w2, after the approval
    assert any(e["kind"] == "text" and "Saw: out=42" in e["text"] for e in events), fleet.logs()
