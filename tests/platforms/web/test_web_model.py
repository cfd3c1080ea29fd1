"""Model and effort over the web API: aiohttp's test client against a real Hub, the real SDK + CLI on the double.

POST /api/runs takes "model" and "effort"; GET /api/runs/{id} shows them; POST /api/runs/{id}/model changes them
while a question waits ({"ok", "model", "effort"}) and the model's next request carries the new model; a bad
effort (400), a model the bot does not allow (409), an empty body (400) and an unknown run (404) change nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from tests.conftest import scenario_of
from tests.platforms.web.test_web_api import client_for, frames_until
from tests.support.hub_support import QUICK, hub_of, one_step_flow
from tests.support.runtime_support import FAST

OPUS, SONNET = "claude-opus-4-6", "claude-sonnet-4-6"


def sent(md: Any) -> list[tuple[str, Any]]:
    return [(r.body["model"], (r.body.get("output_config") or {}).get("effort"))
            for r in md.model_requests() if r.body.get("tools")]


async def test_model_and_effort_through_the_api(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Going with {last_tool_result}.", "turn": [
        {"say": "One question.", "call": [{"tool": "mcp__human__ask",
                                            "input": {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}}]},
    ]}))
    front = WebFrontend(say=lambda s: None)
    hub = hub_of({"web": front.surface}, MemoryStateStore(), root=tmp_path / "runs", env=md.env(cli_home),
                 factory=one_step_flow(), view=QUICK, runtime_options={"resilience": FAST}, models=(OPUS, SONNET))
    front.attach(hub)
    client = await client_for(front)
    try:
        bad = await client.post("/api/runs", json={"task": "pick", "effort": "extreme"})
        assert bad.status == 400 and "Unknown effort" in (await bad.json())["error"]
        assert hub.query.runs(live_only=False) == []
        started = await client.post("/api/runs", json={"task": "pick", "model": OPUS, "effort": "low"})
        assert started.status == 201, await started.text()
        run = (await started.json())["id"]
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0")
        await frames_until(ws, lambda f: any(e["kind"] == "ask" and e["payload"].get("state") == "asked"
                                             for e in f["events"]), [])
        await ws.close()
        shown = await (await client.get(f"/api/runs/{run}")).json()
        assert (shown["model"], shown["effort"]) == (OPUS, "low")
        assert sent(md) == [(OPUS, "low")]

        refused = [await client.post(f"/api/runs/{run}/model", json={"effort": "extreme"}),
                   await client.post(f"/api/runs/{run}/model", json={"model": "claude-nonesuch"}),
                   await client.post(f"/api/runs/{run}/model", json={}),
                   await client.post("/api/runs/rnope/model", json={"model": SONNET})]
        assert [r.status for r in refused] == [409, 409, 400, 404]
        shown = await (await client.get(f"/api/runs/{run}")).json()
        assert (shown["model"], shown["effort"]) == (OPUS, "low")

        changed = await client.post(f"/api/runs/{run}/model", json={"model": SONNET, "effort": "high"})
        assert changed.status == 200, await changed.text()
        body = await changed.json()
        assert (body["ok"], body["model"], body["effort"]) == (True, SONNET, "high")
        shown = await (await client.get(f"/api/runs/{run}")).json()
        assert (shown["model"], shown["effort"]) == (SONNET, "high")

        answered = await client.post(f"/api/runs/{run}/answer", json={"ask_id": "q1", "text": "spaces"})
        assert answered.status == 200, await answered.text()
        await hub.query.wait(run)
        assert sent(md)[1:] and {m for m, _ in sent(md)[1:]} == {SONNET}
    finally:
        await client.close()
        await hub.close()
