"""The HTTP API's routines (adapters/web/routines.py) against a real Hub whose runs are engine doubles (no
CLI): create, list, one with its last runs, pause/resume/run now/delete, bad input, and a one-off firing
by itself on the real clock into a new thread of the page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.hub import Hub, HubSettings
from adapters.state import MemoryStateStore
from adapters.transport import LocalTransport
from adapters.web import WebFrontend, make_app
from tests.support.engine_double import KitDouble

Rig = tuple[WebFrontend, Hub, TestClient]


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    front = WebFrontend(demo=True, max_body=8192, say=lambda s: None)
    hub = Hub({"web": front.surface}, MemoryStateStore(), HubSettings(root=tmp_path / "runs", timezone="UTC"),
              transport=LocalTransport(KitDouble()))  # type: ignore[arg-type]
    front.attach(hub)
    client = TestClient(TestServer(make_app(front), host="127.0.0.1"))
    await client.start_server()
    yield front, hub, client
    await client.close()
    await hub.close(deadline_s=2)
    await front.stop()


async def post(client: TestClient, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    resp = await client.post(path, json=body) if body is not None else await client.post(path)
    return resp.status, await resp.json()


async def test_create_list_one_and_manage(rig: Rig) -> None:
    _, hub, client = rig
    status, made = await post(client, "/api/routines", {
        "task": "triage the new issues", "schedule": "every weekday at 9:00", "timezone": "Europe/Berlin",
        "name": "Daily triage", "options": {"timeout_s": 600, "max_asks": 2, "approve": ["Bash"]},
        "overlap": "queue", "catch_up": False})
    assert status == 201, made
    rid = made["id"]
    assert made["next"].endswith(("T09:00:00+01:00", "T09:00:00+02:00"))
    listed = await (await client.get("/api/routines")).json()
    [one] = listed["routines"]
    assert (one["id"], one["name"], one["place"], one["owner"], one["overlap"], one["catch_up"], one["spec"]) == (
        rid, "Daily triage", "web:page", "web", "queue", False, "0 9 * * 1-5")
    assert one["schedule"] == "every weekday at 9:00 (Europe/Berlin)" and one["next"] == made["next"]

    status, ran = await post(client, f"/api/routines/{rid}/run")
    assert status == 200 and ran["ok"], ran
    run = hub.store.get_run(ran["id"])
    assert run is not None and run.thread.platform == "web" and run.origin.startswith("⏰ Daily triage, ")
    assert run.task == "triage the new issues"
    detail = await (await client.get(f"/api/routines/{rid}")).json()
    assert [(r["run_id"], r["kind"], r["state"]) for r in detail["last"]] == [(ran["id"], "manual", "started")]
    runs = await (await client.get("/api/runs")).json()
    assert ran["id"] in [r["id"] for r in runs["runs"]]

    assert (await post(client, f"/api/routines/{rid}/pause"))[1]["ok"]
    assert (await (await client.get(f"/api/routines/{rid}")).json())["next"] is None
    assert (await post(client, f"/api/routines/{rid}/resume"))[1]["ok"]
    assert (await (await client.get(f"/api/routines/{rid}")).json())["next"] == made["next"]
    resp = await client.delete(f"/api/routines/{rid}")
    assert resp.status == 200 and (await resp.json())["ok"]
    assert (await client.get(f"/api/routines/{rid}")).status == 404
    assert (await (await client.get("/api/routines")).json()) == {"routines": []}


@pytest.mark.parametrize(("body", "words"), [
    ({"task": "t", "schedule": "now and then"}, "cannot read the schedule"),
    ({"task": "t", "schedule": "at 2020-01-01 09:00"}, "in the past"),
    ({"task": "t", "schedule": "every day at 9:00", "timezone": "Nowhere/Special"}, "unknown time zone"),
    ({"task": "t", "schedule": "every 5 seconds"}, "under a minute"),
    ({"task": "t", "schedule": "every day at 9:00", "overlap": "stack"}, "overlap must be"),
    ({"task": "t", "schedule": "every day at 9:00", "options": {"colour": 1}}, "unknown option"),
    ({"task": "t", "schedule": "every day at 9:00", "options": {"max_asks": -1}}, "0 or more"),
    ({"task": "t", "schedule": "every day at 9:00", "catch_up": "yes"}, "'catch_up' must be a boolean"),
    ({"schedule": "every day at 9:00"}, "missing field 'task'"),
    ({"task": "t", "schedule": "every day at 9:00", "when": 1}, "unknown field"),
])
async def test_bad_input_is_400_saying_what_is_accepted_and_nothing_is_saved(rig: Rig, body: dict[str, Any],
                                                                             words: str) -> None:
    _, hub, client = rig
    status, answer = await post(client, "/api/routines", body)
    assert status == 400 and words in answer["error"], answer
    assert hub.query.routines() == []


async def test_unknown_ids_are_404(rig: Rig) -> None:
    _, _, client = rig
    assert (await client.get("/api/routines/rtnope")).status == 404
    for verb in ("pause", "resume", "run"):
        assert (await client.post(f"/api/routines/rtnope/{verb}")).status == 404
    assert (await client.delete("/api/routines/rtnope")).status == 404


async def test_a_one_off_in_a_few_seconds_fires_once_by_itself(rig: Rig) -> None:
    _, hub, client = rig
    await hub.open()
    await hub.recover()
    status, made = await post(client, "/api/routines", {"task": "say hi", "schedule": "in 2 seconds"})
    assert status == 201
    for _ in range(100):
        info = hub.query.routine(made["id"])
        if info is not None and info.last:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # and nothing more after it
    info = hub.query.routine(made["id"])
    assert info is not None and info.next is None
    assert [(o.kind, o.state) for o in info.last] == [("due", "started")]
    assert len(hub.store.list_runs()) == 1
    assert hub.query.routine_firings()["started"] == 1
