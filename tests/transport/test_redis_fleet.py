"""Scale-out through real processes: a `flower-bot web --redis` front, `flower-worker`s, a real
redis-server, the real SDK + CLI against the model double in each worker. The web API is how a
person acts; what the model received shows in what it says next ("Got <answer>")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.support.fleet_support import Api, Fleet
from tests.support.redis_support import RedisServer

pytestmark = pytest.mark.slow


@pytest.fixture
async def api(fleet: Fleet) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(session, fleet.base)


async def started(fleet: Fleet, api: Api, *workers: str) -> tuple[str, dict[str, Any]]:
    """The front and these workers up, one run started from the web API and its first question open."""
    await fleet.start_front()
    for name in workers:
        await fleet.start_worker(name)
    run_id = await api.start("pick a style")
    return run_id, await api.open_ask(run_id, "Tabs or spaces?")


def said(events: list[dict[str, Any]], needle: str) -> bool:
    return any(e["kind"] == "text" and needle in e["text"] for e in events)


def notices(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events]


async def test_a_run_goes_front_to_worker_and_back(fleet: Fleet, api: Api) -> None:
    run_id, first = await started(fleet, api, "w1", "w2")
    run = await api.run(run_id)
    assert run["worker"] in ("w1", "w2"), run
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": first["id"], "text": "tabs"})
    # told it was answered (the worker's reply may come before its event: the reply says so itself)
    assert status == 200 and body["ok"] and body["message"] == "Answered: tabs", body
    second = await api.open_ask(run_id, "Dark or light?")
    # mail and the oracle-free path of intents work across the transport as well
    status, body = await api.post(f"/api/runs/{run_id}/send", {"text": "keep it short"})
    assert status == 200 and body["ok"], body
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": second["id"], "text": "dark"})
    assert status == 200 and body["ok"], body
    done = await api.ended(run_id)
    assert done["status"] == "done", fleet.logs()
    events = await api.events(run_id)
    assert said(events, "Got tabs. One more.")
    # an answer to a settled question is refused and changes nothing
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": first["id"], "text": "spaces"})
    assert status in (404, 409) and not body["ok"]


async def test_kill_9_the_holder_while_a_question_waits(fleet: Fleet, api: Api, redis_server: RedisServer) -> None:
    """The holder dies with a question open (its CLI still up, nothing parked). The answer given while
    no worker holds the run is kept; the other worker claims the run, asks the question again on the
    old card, and the kept answer reaches the model as the tool's result in the same session."""
    run_id, first = await started(fleet, api, "w1")
    assert (await api.run(run_id))["worker"] == "w1"
    await fleet.start_worker("w2")
    await transcript_holds(redis_server.url, "Tabs or spaces?")  # what w2 will resume from
    fleet.workers["w1"].kill()
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": first["id"], "text": "spaces"})
    # Kept on its card (w1 was found dead first), or handed to w2's view of the card (w2 took the run
    # over while the front waited for w1's reply): either way it reaches the model once, below.
    assert status == 200 and body["ok"] and ("kept" in body["message"] or "Answered" in body["message"]), body

    async def moved() -> Any:
        run = await api.run(run_id)
        return run if run["worker"] == "w2" else None
    await api.until("w2 to take the run over", moved)
    try:
        second = await api.open_ask(run_id, "Dark or light?", timeout=30)
    except AssertionError:
        raise AssertionError(f"{notices(await api.events(run_id))}\n{fleet.logs()}") from None
    events = await api.events(run_id)
    assert said(events, "Got spaces. One more."), notices(events)
    parked = [e for e in events if e["kind"] == "system" and e["payload"].get("subtype") == "parked"]
    assert parked and parked[0]["payload"]["restored"] is True
    sessions = {e["payload"]["session_id"] for e in events if e["payload"].get("session_id")}
    assert len(sessions) == 1, sessions  # one session from the first question to the end
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": second["id"], "text": "light"})
    assert status == 200 and body["ok"], body
    assert (await api.ended(run_id))["status"] == "done"
    thread = await api.get(f"/api/runs/{run_id}/events?after=0")
    assert thread["dropped"] == 0


async def transcript_holds(url: str, needle: str, timeout: float = 30.0) -> None:
    """Wait until some stored session in Redis holds `needle` (the CLI mirrors its transcript to the
    store a moment after the model's turn; a kill before that leaves nothing to resume)."""
    import asyncio
    import json

    from flower_core import RedisSessionStore

    store = RedisSessionStore(url)

    async def poll() -> None:
        while True:
            for project in store.projects():
                for listed in await store.list_sessions(project):
                    key: Any = {"project_key": project, "session_id": listed["session_id"]}
                    if any(needle in json.dumps(e) for e in await store.load(key) or []):
                        return
            await asyncio.sleep(0.05)
    try:
        await asyncio.wait_for(poll(), timeout)
    finally:
        store.close()


async def test_redis_restarted_mid_run_loses_nothing(fleet: Fleet, api: Api, redis_server: RedisServer) -> None:
    """Redis goes away and comes back (append-only file, fsync always) twice: once while a question
    waits, once right after it is answered while the worker streams the next turn. Every event,
    the answer and the next question arrive; the front saw no hole in the run's message sequence."""
    run_id, first = await started(fleet, api, "w1", "w2")
    before = await api.events(run_id)
    redis_server.restart()
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": first["id"], "text": "tabs"})
    # told it was answered (the worker's reply may come before its event: the reply says so itself)
    assert status == 200 and body["ok"] and body["message"] == "Answered: tabs", body
    redis_server.restart()
    second = await api.open_ask(run_id, "Dark or light?")
    status, body = await api.post(f"/api/runs/{run_id}/send", {"text": "a note after the restarts"})
    assert status == 200 and body["ok"], body
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": second["id"], "text": "dark"})
    assert status == 200 and body["ok"], body
    assert (await api.ended(run_id))["status"] == "done", fleet.logs()
    events = await api.events(run_id)
    assert [e["seq"] for e in events[: len(before)]] == [e["seq"] for e in before]
    assert said(events, "Got tabs. One more.")
    mail = [e for e in events if e["kind"] == "ask" and e["payload"].get("kind") == "mail"]
    assert mail, notices(events)
    asked = [e["text"] for e in events if e["kind"] == "ask" and e["payload"].get("state") == "asked"]
    assert asked == ["Tabs or spaces?", "Dark or light?"]
    assert (await api.run(run_id))["worker"] in ("", "w1", "w2")
    front = fleet.front
    assert front is not None and not [line for line in front.lines if "missing before" in line], fleet.logs()
