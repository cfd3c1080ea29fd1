"""Undo over the web API: aiohttp's test client against a real Hub, the real SDK + CLI on the double.

GET /api/runs/{id}/checkpoints lists [{"id", "label", "at", "files"}]; POST /api/runs/{id}/undo {"checkpoint"}
restores (409 while the run is live, 404 an unknown checkpoint, 400 none given; nothing changes then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from tests.hub.test_undo_hub import scenario, worker
from tests.platforms.web.test_web_api import client_for, frames_until
from tests.support.hub_support import QUICK, hub_of
from tests.support.runtime_support import FAST


async def test_checkpoints_and_undo_through_the_api(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario())
    home = tmp_path / "home"
    home.mkdir()
    front = WebFrontend(say=lambda s: None)
    store = MemoryStateStore()
    hub = hub_of({"web": front.surface}, store, root=tmp_path / "runs", env={**md.env(cli_home), "HOME": str(home)},
                 factory=worker, view=QUICK, runtime_options={"resilience": FAST})
    front.attach(hub)
    client = await client_for(front)
    try:
        run = (await (await client.post("/api/runs", json={"task": "make files"})).json())["id"]
        ws = await client.ws_connect(f"/api/runs/{run}/ws?after=0")
        await frames_until(ws, lambda f: any(e["kind"] == "ask" and e["payload"].get("state") == "asked"
                                             for e in f["events"]), [])
        await ws.close()
        [first] = await (await client.get(f"/api/runs/{run}/checkpoints")).json()
        assert (first["id"], first["label"], first["files"]) == ("c1", "round 1 started", ["a.txt"])
        live = await client.post(f"/api/runs/{run}/undo", json={"checkpoint": "c1"})
        assert live.status == 409 and "stop it first" in (await live.json())["error"]

        assert (await client.post(f"/api/runs/{run}/answer", json={"ask_id": "q1", "text": "yes"})).status == 200
        await hub.query.wait(run)
        listed = await (await client.get(f"/api/runs/{run}/checkpoints")).json()
        assert [(c["id"], c["files"]) for c in listed] == [("c2", ["a.txt", "b.txt"]), ("c1", ["a.txt", "b.txt"])]
        assert all(isinstance(c["at"], float) for c in listed)
        workspace = Path(store.get_run(run).workspace)  # type: ignore[union-attr]
        bad = [await client.post(f"/api/runs/{run}/undo", json={"checkpoint": "c9"}),
               await client.post(f"/api/runs/{run}/undo", json={}),
               await client.post("/api/runs/rnope/undo", json={"checkpoint": "c1"})]
        assert [r.status for r in bad] == [404, 400, 404]
        assert (workspace / "b.txt").exists()
        done = await client.post(f"/api/runs/{run}/undo", json={"checkpoint": "c1"})
        assert done.status == 200, await done.text()
        assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()  # made since c1: removed
    finally:
        await client.close()
        await hub.close()
