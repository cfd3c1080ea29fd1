"""POST /api/runs/{id}/continue: an ended run's next round through the HTTP API (aiohttp's test client,
a real Hub, the real SDK + CLI on the model double)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from tests.conftest import scenario_of
from tests.platforms.web.test_web_api import client_for, frames_until, seqs
from tests.support.campaign.tally import session_id
from tests.support.hub_support import ask_call, make_hub

MORE = "also add a --json flag"


def question_asked(frame: dict[str, Any]) -> bool:
    return any(e["kind"] == "ask" and e["payload"].get("state") == "asked" for e in frame["events"])


async def test_continue_over_http_goes_on_with_the_same_session_and_the_same_seq(double_factory: Any, cli_home: Path,
                                                                                 tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Finished with {last_tool_result}.", "turn": [
        {"say": "First, a question.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Round one."},
        {"say": "Round two: one question.", "call": [ask_call("JSON or YAML?", ["json", "yaml"])]},
    ]}))
    front = WebFrontend(say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore())  # type: ignore[arg-type]
    front.attach(hub)
    client = await client_for(front)
    try:
        started = await client.post("/api/runs", json={"task": "write a tool"})
        run = (await started.json())["id"]
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0")
        await frames_until(ws, question_asked, [])
        await ws.close()
        live = await client.post(f"/api/runs/{run}/continue", json={"text": MORE})  # it waits on its question
        assert live.status == 409 and "/send" in (await live.json())["error"]
        assert (await client.post(f"/api/runs/{run}/answer", json={"ask_id": "q1", "text": "tabs"})).status == 200
        await hub.query.wait(run)
        one = await (await client.get(f"/api/runs/{run}")).json()
        assert one["status"] == "done" and one["round"] == 1 and not one["live"]
        seen = (await (await client.get(f"/api/runs/{run}/events?after=0")).json())["events"]
        asked = len(md.model_requests())

        bad = [await client.post(f"/api/runs/{run}/continue", json={"text": "  "}),
               await client.post(f"/api/runs/{run}/continue", json={}),
               await client.post("/api/runs/rnope/continue", json={"text": MORE})]
        assert [r.status for r in bad] == [400, 400, 404]
        assert (await (await client.get(f"/api/runs/{run}")).json())["round"] == 1  # nothing changed
        assert len(md.model_requests()) == asked

        went = await client.post(f"/api/runs/{run}/continue", json={"text": MORE})
        assert went.status == 200, await went.text()
        body = await went.json()
        assert body["ok"] and body["id"] == run and body["round"] == 2
        frames: list[dict[str, Any]] = []
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after={seen[-1]['seq']}")
        await frames_until(ws, question_asked, frames)
        await ws.close()
        assert seqs(frames)[0] == seen[-1]["seq"] + 1  # the round's events go on from round 1's last seq
        waiting = await (await client.get(f"/api/runs/{run}/asks")).json()
        assert [(a["id"], a["question"]) for a in waiting] == [("2-q1", "JSON or YAML?")]
        yes = await client.post(f"/api/runs/{run}/answer", json={"ask_id": waiting[0]["id"], "text": "json"})
        assert yes.status == 200, await yes.text()
        await hub.query.wait(run)

        listed = {r["id"]: r for r in (await (await client.get("/api/runs")).json())["runs"]}
        assert listed[run]["round"] == 2 and listed[run]["status"] == "done"  # ended runs stay listed
        whole = (await (await client.get(f"/api/runs/{run}/events?after=0")).json())["events"]
        numbers = [e["seq"] for e in whole]
        assert numbers[: len(seen)] == [e["seq"] for e in seen]  # round 1's events kept their numbers
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # no reset, no gap
        opening = [e for e in whole[len(seen):] if e["kind"] == "step"]
        assert opening and opening[0]["payload"]["round"] == 2
        later = md.model_requests()[asked:]
        assert later[0].last_user_text == MORE and "Round one." in str(later[0].body.get("messages"))
        assert {session_id(r) for r in md.model_requests()} == {session_id(later[0])}
    finally:
        await hub.close()
        await client.close()
        await front.stop()
