"""The web page: a click on a card that no longer takes an answer is always answered, with the hub's line.

aiohttp's test client against a real Hub (the real SDK + CLI on the model double), the page's clicks as
the page sends them (`POST /api/action` with a card button's action id), and a second front end + hub over
the same state (SQLite store, page threads, run directories) standing in for a restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from adapters.hub import Hub
from adapters.state import SQLiteStateStore
from adapters.web import WebFrontend
from tests.conftest import scenario_of
from tests.platforms.web.test_web_api import client_for, frames_until
from tests.support.drive import drive
from tests.support.hub_support import ask_call, make_hub, transcript_has

ANSWERED = "That question is already settled (answered by alice)."
ENDED = "This run has ended (stopped); its questions are closed."


def scenario() -> Any:
    """Two questions in one session; the second one waits across the restart."""
    return scenario_of({"name": "main", "after_end": "Done.", "turn": [
        {"say": "One question first.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
        {"say": "Got {last_tool_result}. One more.", "call": [ask_call("Dark or light?", ["dark", "light"])]},
    ]})


async def up(tmp_path: Path, md: Any, cli_home: Path) -> tuple[WebFrontend, Hub, TestClient]:
    front = WebFrontend(db_path=tmp_path / "web-threads.db", say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, SQLiteStateStore(tmp_path / "state.db"))  # type: ignore[arg-type]
    front.attach(hub)
    return front, hub, await client_for(front)


async def down(front: WebFrontend, hub: Hub, client: TestClient) -> None:
    await hub.close()
    hub.store.close()
    await client.close()
    await front.stop()


def button(front: WebFrontend, hub: Hub, run: str, card_id: str, label: str) -> str:
    """The action id of a card's button as the page drew it (its first version, still open)."""
    record = hub.query.run(run)
    assert record is not None
    drawn = [b for m in front.surface.changes(record.thread) if m["key"] == f"ask:{card_id}" for b in m["buttons"]]
    return next(b["action_id"] for b in drawn if b["label"] == label)


async def click(client: TestClient, action_id: str, delivery: str) -> dict[str, Any]:
    """The page's click, as app.js sends it; the answer shown to the person (a toast)."""
    resp = await client.post("/api/action", json={"action_id": action_id, "delivery_id": delivery})
    assert resp.status == 200, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def test_stale_clicks_are_answered_before_and_after_a_restart(double_factory: Any, cli_home: Path,
                                                                    tmp_path: Path) -> None:
    md = await double_factory(scenario())
    front, hub, client = await up(tmp_path, md, cli_home)
    try:
        started = await client.post("/api/runs", json={"task": "pick a style"})
        run = (await started.json())["id"]
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0")
        await frames_until(ws, lambda f: any(e["kind"] == "ask" and e["payload"].get("state") == "asked"
                                             for e in f["events"]), [])
        tabs, spaces = button(front, hub, run, "1-q1", "tabs"), button(front, hub, run, "1-q1", "spaces")
        assert (await drive(hub).answer(run, "1-q1", "tabs", "alice")).ok  # someone on another front end
        for n in (1, 2):  # answered elsewhere: told who, again on a second click
            late = await click(client, spaces, f"page-{n}")
            assert late == {"ok": False, "message": ANSWERED, "id": run, "needs_input": "", "duplicate": True}
        again = await client.post(f"/api/runs/{run}/answer", json={"ask_id": "1-q1", "text": "spaces"})
        assert again.status == 409 and (await again.json())["error"] == f"question 1-q1: {ANSWERED}"
        await frames_until(ws, lambda f: any(e["kind"] == "ask" and e["text"] == "Dark or light?"
                                             for e in f["events"]), [])
        await ws.close()
        dark = button(front, hub, run, "1-q2", "dark")
        await transcript_has(hub.live[run], "ask", "Dark or light?")
    finally:
        await down(front, hub, client)

    # A new process over the same state: the run comes back by itself, its second question on its old card.
    front, hub, client = await up(tmp_path, md, cli_home)
    try:
        assert await hub.recover() == [] and hub.query.is_live(run)
        assert (await click(client, tabs, "page-3"))["message"] == ANSWERED  # a card from before the restart
        end = await client.post(f"/api/runs/{run}/end")
        assert end.status == 200, await end.text()
        await hub.query.wait(run)
        for n in (4, 5):  # the run has ended: its open question closed with it
            assert (await click(client, dark, f"page-{n}"))["message"] == ENDED
        late = await client.post(f"/api/runs/{run}/answer", json={"ask_id": "1-q2", "text": "light"})
        assert late.status == 409 and (await late.json())["error"] == f"question 1-q2: {ENDED}"
        assert (await click(client, spaces, "page-6"))["message"] == ANSWERED
    finally:
        await down(front, hub, client)
