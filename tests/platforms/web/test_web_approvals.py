"""Tool approvals over the web API: aiohttp's test client against a real Hub, the real SDK + CLI on the double.

A run started with `"approve": ["Bash"]` lists its Bash call at GET .../asks as an approval (kind, tool,
input); POST .../approve takes "once" (the command runs once), refuses a bad decision (400), an unknown
ask (404), a decided one (409) and a question that is not an approval (400), and changes nothing then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from bots.flows import single_flow
from tests.conftest import scenario_of
from tests.platforms.web.test_web_api import client_for, frames_until
from tests.support.hub_support import QUICK, hub_of
from tests.support.runtime_support import FAST

EFFECT = "echo ran >> effect.txt; echo out=42"


async def test_a_bash_call_is_listed_and_approved_once_through_the_api(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Running.", "call": [{"tool": "Bash", "input": {"command": EFFECT}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    home = tmp_path / "home"  # the Bash tool sources the user's shell config: give it an empty HOME
    home.mkdir()
    front = WebFrontend(say=lambda s: None)
    store = MemoryStateStore()
    hub = hub_of({"web": front.surface}, store, root=tmp_path / "runs", env={**md.env(cli_home), "HOME": str(home)},
                 factory=single_flow, view=QUICK, runtime_options={"resilience": FAST})
    front.attach(hub)
    client = await client_for(front)
    try:
        bad_start = await client.post("/api/runs", json={"task": "run it", "approve": ["Bash("]})
        assert bad_start.status == 400 and "approve" in (await bad_start.json())["error"]
        assert (await client.post("/api/runs", json={"task": "run it", "approve": [3]})).status == 400
        assert hub.query.runs(live_only=False) == []
        started = await client.post("/api/runs", json={"task": "run it", "approve": ["Bash"]})
        assert started.status == 201, await started.text()
        run = (await started.json())["id"]

        async def listed() -> list[dict[str, Any]]:
            return list(await (await client.get(f"/api/runs/{run}/asks")).json())
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0")
        await frames_until(ws, lambda f: any(e["kind"] == "ask" and e["payload"].get("state") == "asked"
                                             for e in f["events"]), [])
        await ws.close()
        asks = await listed()
        [ask] = asks
        assert (ask["id"], ask["kind"], ask["tool"], ask["input"]) == ("1-q1", "approval", "Bash", {"command": EFFECT})
        assert ask["options"] == ["Allow once", "Allow Bash for this run", "Deny"]

        refused = [await client.post(f"/api/runs/{run}/approve", json={"ask_id": "1-q1", "decision": "maybe"}),
                   await client.post(f"/api/runs/{run}/approve", json={"ask_id": "1-q9", "decision": "once"}),
                   await client.post("/api/runs/rnope/approve", json={"ask_id": "1-q1", "decision": "once"})]
        assert [r.status for r in refused] == [400, 404, 404]
        assert [a["id"] for a in await listed()] == ["1-q1"]  # still open
        record = store.get_run(run)
        assert record is not None and not (Path(record.workspace) / "effect.txt").exists()
        ok = await client.post(f"/api/runs/{run}/approve", json={"ask_id": "1-q1", "decision": "once"})
        assert ok.status == 200 and (await ok.json())["ok"] is True
        again = await client.post(f"/api/runs/{run}/approve", json={"ask_id": "1-q1", "decision": "deny"})
        assert again.status == 409
        live = await hub.query.wait(run)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (Path(record.workspace) / "effect.txt").read_text() == "ran\n"
        assert md.model_requests()[-1].last_tool_result == "out=42"
    finally:
        await client.close()
        await hub.close()
        await front.stop()
