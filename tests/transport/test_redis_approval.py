"""A tool approval over Redis when its holder dies: w1 parks the run on a Bash approval (no CLI while it
waits), or still waits on it with its CLI up, and is SIGKILLed with its process group; w2 takes the run
over, asks the approval again on the old card, a person allows it over the web API, and the command runs
exactly once (one line in the workspace).

Real processes (`flower-bot web --redis`, two `flower-worker`s, redis-server), the real SDK + CLI on one
model double this test runs (it outlives the workers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import scenario_of
from tests.support.fleet_support import Api, Fleet

pytestmark = pytest.mark.slow

COMMAND = "echo ran >> effect.txt; echo out=42"


def approvals_asked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "ask" and e["payload"].get("kind") == "approval"
            and e["payload"].get("state") == "asked"]


@pytest.mark.parametrize("park_after", ["0.3", "600"], ids=["parked", "live"])
async def test_a_worker_killed_while_an_approval_waits_hands_it_over_and_the_command_runs_once(
        tmp_path: Path, fleet: Fleet, double_factory: Any, cli_home: Path, park_after: str) -> None:
    """``parked``: w1 has closed its CLI (the approval is parked); ``live``: w1's CLI still waits on it."""
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": COMMAND}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    home = tmp_path / "home"
    home.mkdir()  # the Bash tool sources the user's shell config: give it an empty HOME
    model = {**md.env(cli_home), "HOME": str(home)}
    await fleet.start_front()
    await fleet.start_worker("w1", "--park-after", park_after, model_env=model)
    async with aiohttp.ClientSession() as session:
        api = Api(session, fleet.base)
        status, body = await api.post("/api/runs", {"task": "run the command", "approve": ["Bash"]})
        assert status == 201, body
        run_id = str(body["id"])

        async def waiting() -> Any:  # parked, or (live) its record written for whoever comes next
            events = await api.events(run_id)
            if park_after == "600":
                return approvals_asked(events) and list(fleet.root.rglob("parked/*.json"))
            return approvals_asked(events) and any(e["kind"] == "system" and e["text"] == "parked" for e in events)
        await api.until("w1's approval to wait, recorded", waiting)
        assert (await api.run(run_id))["worker"] == "w1"
        await fleet.start_worker("w2", "--park-after", park_after, model_env=model)
        fleet.workers["w1"].kill()
        await fleet.workers["w1"].proc.wait()

        async def asked_again() -> Any:  # w2's own ask of the same approval (on the same card)
            run = await api.run(run_id)
            if run["worker"] != "w2" or len(approvals_asked(await api.events(run_id))) < 2:
                return None
            asks = await api.get(f"/api/runs/{run_id}/asks")
            return next((a for a in asks if a.get("kind") == "approval"), None)
        try:
            again = await api.until("w2 to ask the approval again", asked_again, timeout=60)
        except AssertionError:
            raise AssertionError(f"{[(e['kind'], e['text'][:60]) for e in await api.events(run_id)]}\n"
                                 f"{fleet.logs()}") from None
        assert again["tool"] == "Bash" and again["input"]["command"] == COMMAND, again
        assert list(fleet.root.rglob("effect.txt")) == []
        status, body = await api.post(f"/api/runs/{run_id}/approve", {"ask_id": again["id"], "decision": "once"})
        assert status == 200 and body["ok"], body
        done = await api.ended(run_id)
        assert done["status"] == "done", fleet.logs()
        events = await api.events(run_id)
    [effect] = list(fleet.root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", fleet.logs()  # exactly once, on w2
    assert any(e["kind"] == "text" and "Saw: out=42" in e["text"] for e in events), fleet.logs()
    sessions = {e["payload"]["session_id"] for e in events if e["payload"].get("session_id")}
    assert len(sessions) == 1, sessions  # one session from the approval to the end


async def test_a_decision_given_while_nobody_holds_the_run_is_applied_by_the_next_holder_without_a_second_click(
        tmp_path: Path, fleet: Fleet, double_factory: Any, cli_home: Path) -> None:
    """w1 parks the approval and is SIGKILLed; a person allows it before any worker holds the run (the API
    says the decision is kept); w2 takes the run over, asks the approval again from the park record and the
    kept decision settles it there: the command runs once and nobody clicks twice."""
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": COMMAND}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    home = tmp_path / "home"
    home.mkdir()
    model = {**md.env(cli_home), "HOME": str(home)}
    await fleet.start_front()
    await fleet.start_worker("w1", "--park-after", "0.3", model_env=model)
    async with aiohttp.ClientSession() as session:
        api = Api(session, fleet.base)
        status, body = await api.post("/api/runs", {"task": "run the command", "approve": ["Bash"]})
        assert status == 201, body
        run_id = str(body["id"])

        async def parked() -> Any:
            events = await api.events(run_id)
            return approvals_asked(events) and any(e["kind"] == "system" and e["text"] == "parked" for e in events)
        await api.until("w1 to park the approval", parked)
        [card] = [a for a in await api.get(f"/api/runs/{run_id}/asks") if a.get("kind") == "approval"]
        fleet.workers["w1"].kill()
        await fleet.workers["w1"].proc.wait()
        status, body = await api.post(f"/api/runs/{run_id}/approve", {"ask_id": card["id"], "decision": "once"})
        assert status == 200 and body["ok"], body
        assert "moving to another worker" in body["message"] or "kept" in body["message"], body
        await fleet.start_worker("w2", "--park-after", "0.3", model_env=model)
        done = await api.ended(run_id)
        assert done["status"] == "done", fleet.logs()
        events = await api.events(run_id)
    [effect] = list(fleet.root.rglob("effect.txt"))
    assert effect.read_text() == "ran\n", fleet.logs()
    assert any(e["kind"] == "text" and "Saw: out=42" in e["text"] for e in events), fleet.logs()
    settled = [e for e in events if e["kind"] == "ask" and e["payload"].get("kind") == "approval"
               and e["payload"].get("state") == "answered"]
    assert settled, [(e["kind"], e["text"][:60], e["payload"].get("state")) for e in events]
