"""Plan first over the web API: aiohttp's test client against a real Hub, the real SDK + CLI on the double.

POST /api/runs takes `"plan": true` (a non-boolean is a 400 and starts nothing); GET .../asks lists the plan
card as kind "plan" with its text; POST .../plan decides it: "go" lets the edit through (the file is written
only after the approval), "revise" with words makes the agent read them and present a new plan, "go_ask"
turns the next edit into a tool approval. Bad input changes nothing: an unknown run (404), a bad decision or
malformed JSON (400), words with an approval or words that would read as one (400), a card that is not a
plan card (400, as /approve says for a question), a decided card (409, /approve's own answer).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from adapters.hub import Hub
from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from adapters.web.errors import ApiError
from adapters.web.inbound import read_plan
from bots.flows import single_flow
from flower_core.human.plan_review import APPROVED
from tests.conftest import scenario_of
from tests.platforms.web.test_web_api import client_for
from tests.support.hub_support import QUICK, hub_of
from tests.support.plan_support import PLAN, PLAN2, WORDS, turns
from tests.support.runtime_support import FAST
from tests.support.waiting import until

LONG_PLAN = PLAN + "".join(f"\n{n}. Check step {n} once more." for n in range(3, 150))  # past the card's 2500


@dataclass
class Rig:
    front: WebFrontend
    hub: Hub
    client: TestClient
    md: Any
    notes: Path
    changed: asyncio.Event  # set on every message the page's surface stores: the cards' changes

    async def start(self) -> str:
        started = await self.client.post("/api/runs", json={"task": "plan it", "plan": True})
        assert started.status == 201, await started.text()
        return str((await started.json())["id"])

    async def open_card(self, run: str, card_id: str, kind: str = "plan") -> None:
        """Until the run shows this open card (its message reached the page)."""
        await until(self.changed, lambda: any(c.card_id == card_id and c.kind == kind
                                              for c in self.hub.query.open_cards(run)))

    async def asks(self, run: str) -> list[dict[str, Any]]:
        return list(await (await self.client.get(f"/api/runs/{run}/asks")).json())

    async def plan(self, run: str, body: Any, *, raw: bool = False) -> tuple[int, dict[str, Any]]:
        if raw:
            r = await self.client.post(f"/api/runs/{run}/plan", data=body, headers={"Content-Type": "application/json"})
        else:
            r = await self.client.post(f"/api/runs/{run}/plan", json=body)
        return r.status, await r.json()

    async def finished(self, run: str) -> None:
        live = await self.hub.query.wait(run)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"

    def results(self) -> list[str]:
        return [r.last_tool_result for r in self.md.model_requests()][1:]


async def rig_of(md: Any, cli_home: Path, tmp_path: Path) -> Rig:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    front = WebFrontend(say=lambda s: None)
    hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs",
                 env={**md.env(cli_home), "HOME": str(home)}, factory=single_flow, view=QUICK,
                 runtime_options={"resilience": FAST}, workspaces={"web:page": ws})
    front.attach(hub)
    changed = asyncio.Event()
    front.surface.listeners.append(lambda thread, body: changed.set())
    return Rig(front, hub, await client_for(front), md, ws / "notes.txt", changed)


@pytest.fixture
async def rig_factory(cli_home: Path, tmp_path: Path, double_factory: Any) -> AsyncIterator[Any]:
    made: list[Rig] = []

    async def make(*plans: str) -> Rig:
        md = await double_factory(scenario_of({"name": "main", "turn": turns(tmp_path / "ws" / "notes.txt",
                                                                             plans=plans)}))
        made.append(await rig_of(md, cli_home, tmp_path))
        return made[-1]
    yield make
    for rig in made:
        await rig.client.close()
        await rig.hub.close()
        await rig.front.stop()


async def test_start_with_plan_list_it_and_approve_and_go(rig_factory: Any) -> None:
    rig: Rig = await rig_factory(PLAN)
    for bad, says in ((1, "must be a boolean"), ("yes", "must be a boolean"), ([True], "must be a boolean")):
        refused = await rig.client.post("/api/runs", json={"task": "plan it", "plan": bad})
        assert refused.status == 400 and says in (await refused.json())["error"] and "'plan'" in (
            await refused.json())["error"], bad
    assert rig.hub.query.runs(live_only=False) == []
    run = await rig.start()
    await rig.open_card(run, "1-q1")
    [ask] = await rig.asks(run)
    assert (ask["id"], ask["kind"], ask["plan"], ask["plan_chars"]) == ("1-q1", "plan", PLAN, len(PLAN))
    assert ask["options"] == ["Approve and go", "Approve, ask before edits", "Keep planning…"]
    assert not rig.notes.exists()  # the early Write was refused while planning
    assert "nothing may change before a person has approved your plan" in rig.results()[0]

    refused = [await rig.plan("rnope", {"ask_id": "1-q1", "decision": "go"}),
               await rig.plan(run, {"ask_id": "1-q1", "decision": "maybe"}),
               await rig.plan(run, {"ask_id": "1-q1", "decision": "go", "text": "and hurry"}),
               await rig.plan(run, {"ask_id": "1-q1", "decision": "revise", "text": "1"}),
               await rig.plan(run, {"ask_id": "1-q1", "decision": "revise", "text": "Approve and go"}),
               await rig.plan(run, {"ask_id": "1-q9", "decision": "go"}),
               await rig.plan(run, {"ask_id": "1-q1"}),
               await rig.plan(run, b'{"ask_id": "1-q1", "decision": ', raw=True)]
    assert [status for status, _ in refused] == [404, 400, 400, 400, 400, 404, 400, 400]
    errors = [body["error"] for _, body in refused]
    assert "go, go_ask, revise" in errors[1] and "revise" in errors[2] and "approval" in errors[3]
    assert "missing field 'decision'" in errors[6] and "malformed JSON" in errors[7]
    assert [a["id"] for a in await rig.asks(run)] == ["1-q1"] and not rig.notes.exists()  # nothing changed

    status, body = await rig.plan(run, {"ask_id": "1-q1", "decision": "go"})
    assert status == 200 and body["ok"] is True and body["ask_id"] == "1-q1"
    again = await rig.plan(run, {"ask_id": "1-q1", "decision": "revise", "text": "wait"})
    approve = await rig.client.post(f"/api/runs/{run}/approve", json={"ask_id": "1-q1", "decision": "once"})
    assert again[0] == approve.status == 409
    assert again[1]["error"] == (await approve.json())["error"] and "already settled" in again[1]["error"]
    await rig.finished(run)
    assert rig.notes.read_text() == "yo" and APPROVED in rig.results()


async def test_revise_with_words_reaches_the_agent_and_a_new_plan_card_follows(rig_factory: Any) -> None:
    rig: Rig = await rig_factory(PLAN, PLAN2)
    run = await rig.start()
    await rig.open_card(run, "1-q1")
    status, body = await rig.plan(run, {"ask_id": "1-q1", "decision": "revise", "text": WORDS})
    assert status == 200 and body["ok"] is True and body["message"] == f"Sent back to planning: {WORDS}"
    await rig.open_card(run, "1-q2")
    [ask] = await rig.asks(run)
    assert (ask["id"], ask["kind"], ask["plan"]) == ("1-q2", "plan", PLAN2)
    feedback = rig.md.model_requests()[-1].last_tool_result
    assert "keep planning" in feedback and WORDS in feedback
    assert not rig.notes.exists()
    late = await rig.plan(run, {"ask_id": "1-q1", "decision": "go"})  # the old card is decided: the new one stays
    assert late[0] == 409 and [a["id"] for a in await rig.asks(run)] == ["1-q2"]
    assert (await rig.plan(run, {"ask_id": "1-q2", "decision": "go"}))[0] == 200
    await rig.finished(run)
    assert rig.notes.read_text() == "yo"


async def test_go_ask_makes_the_edit_an_approval_which_is_not_a_plan_card(rig_factory: Any) -> None:
    """With a plan longer than the card shows: the whole plan is a download link beside the card."""
    rig: Rig = await rig_factory(LONG_PLAN)
    files: list[dict[str, Any]] = []
    rig.front.surface.listeners.append(lambda thread, body: files.append(body["file"]) if body.get("file") else None)
    run = await rig.start()
    await rig.open_card(run, "1-q1")
    await until(rig.changed, lambda: files)
    [whole] = files
    assert whole["url"] == f"/api/runs/{run}/beside/{whole['path']}" and whole["path"].startswith("plans/plan-")
    got = await rig.client.get(whole["url"])
    assert got.status == 200 and (await got.read()).decode() == LONG_PLAN
    assert got.headers["Content-Type"] == "application/octet-stream"
    for bad in ("plans/nope.md", "plans/..%2Fplan.json", "approvals/..", "workspace/notes.txt", "plans"):
        assert (await rig.client.get(f"/api/runs/{run}/beside/{bad}")).status == 404, bad
    assert (await rig.client.get(f"/api/runs/rnope/beside/{whole['path']}")).status == 404
    assert (await rig.plan(run, {"ask_id": "1-q1", "decision": "go_ask", "text": ""}))[0] == 200
    await rig.open_card(run, "1-q2", kind="approval")
    [ask] = await rig.asks(run)
    assert (ask["kind"], ask["tool"]) == ("approval", "Write") and "plan" not in ask
    status, body = await rig.plan(run, {"ask_id": "1-q2", "decision": "go"})
    assert status == 400 and "not a plan card" in body["error"]
    assert [a["id"] for a in await rig.asks(run)] == ["1-q2"] and not rig.notes.exists()
    ok = await rig.client.post(f"/api/runs/{run}/approve", json={"ask_id": "1-q2", "decision": "once"})
    assert ok.status == 200
    await rig.finished(run)
    assert rig.notes.read_text() == "yo"


def test_a_decision_is_read_into_the_answer_the_plan_card_takes() -> None:
    read = read_plan
    assert read({"ask_id": "q1", "decision": "go"}) == ("q1", "Approve and go")
    assert read({"ask_id": "q1", "decision": " go_ask ", "text": ""}) == ("q1", "Approve, ask before edits")
    assert read({"ask_id": "q1", "decision": "revise"}) == ("q1", "Keep planning…")
    assert read({"ask_id": "q1", "decision": "revise", "text": f"  {WORDS}\n"}) == ("q1", WORDS)
    for body in ({"ask_id": "q1", "decision": "Go"}, {"ask_id": "q1", "decision": "go", "text": "now"},
                 {"ask_id": "q1", "decision": "revise", "text": "2"}, {"ask_id": "q1", "decision": "revise",
                                                                      "text": "Approve and go"}, {"decision": "go"}):
        with pytest.raises(ApiError) as refused:
            read(body)
        assert refused.value.status == 400, body
