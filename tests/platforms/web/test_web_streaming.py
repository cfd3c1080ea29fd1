"""The web page streams: words grow in the thread over the page's own WebSocket, the plan sits in the status
card, and the events API shows partial events only to a client that asks (the seqs stay as they were)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from tests.conftest import scenario_of
from tests.platforms.web.test_web_api import client_for
from tests.support.hub_support import FAST, make_hub

WORDS = " ".join(f"word{i}" for i in range(80)) + "."
TODOS = [{"content": "Read the notes", "status": "in_progress", "activeForm": "Reading"}]


async def test_the_page_sees_words_grow_and_the_events_api_keeps_its_seqs(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Planning.", "stream": True, "call": [{"tool": "TodoWrite", "input": {"todos": TODOS}}]},
        {"say": WORDS, "stream": {"words": 2, "pause_s": 0.05}},
    ]}))
    front = WebFrontend(say=lambda s: None)
    hub = make_hub(tmp_path, md, cli_home, front.surface, MemoryStateStore(),  # type: ignore[arg-type]
                   runtime_options={"resilience": FAST, "partial_text": True})
    front.attach(hub)
    client = await client_for(front)
    try:
        run = (await (await client.post("/api/runs", json={"task": "write", "timeout_s": 60})).json())["id"]
        page = await client.ws_connect("/ws")
        await page.send_json({"op": "watch", "run": run, "after": 0, "events_after": 0})
        writing: list[str] = []
        partial_seen: list[dict[str, Any]] = []
        events_ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0&partial=1")

        async def read_events() -> None:
            while True:
                frame = await events_ws.receive_json()
                if frame.get("writing"):
                    partial_seen.append(frame["writing"])
                if frame["status"] == "done" and not frame["live"]:
                    return

        events_task = asyncio.ensure_future(read_events())

        async def read_page() -> dict[str, Any]:
            while True:
                frame = await page.receive_json()
                for m in frame.get("messages", []) if frame.get("type") == "thread" else []:
                    if m["kind"] == "live" and "word" in m["text"]:
                        writing.append(m["live"])
                        if m["live"] == "done" and m["text"].startswith(WORDS):
                            return m

        done = await asyncio.wait_for(read_page(), 60)
        assert done["text"] == WORDS and "open" in writing  # seen growing, before the model finished
        await asyncio.wait_for(events_task, 60)
        await page.close()
        await events_ws.close()
        thread = front.surface.changes(hub.store.get_run(run).thread)  # type: ignore[union-attr]
        plan = next(m for m in thread if m.get("plan"))
        assert [(t["title"], t["status"]) for t in plan["tasks"]] == [("Read the notes", "in_progress")]
        assert not [m for m in thread if m["kind"] == "prose" and "word1 " in m["text"]]  # not shown twice
        # A client that asked saw the words being written; the default answer has no partial event, no
        # "writing", and seqs numbered without holes as before.
        assert any("word1 " in w["text"] for w in partial_seen)
        whole = await (await client.get(f"/api/runs/{run}/events?after=0")).json()
        assert "writing" not in whole and not [e for e in whole["events"] if e["kind"] == "partial"]
        seqs = [e["seq"] for e in whole["events"]]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        asked = await (await client.get(f"/api/runs/{run}/events?after=0&partial=1")).json()
        assert [e["seq"] for e in asked["events"]] == seqs and asked["writing"] is None  # nothing being written now
    finally:
        await client.close()
        await hub.close()
        await front.stop()
