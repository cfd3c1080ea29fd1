"""A run's events across restarts of a `flower-bot web --redis` front, its run going on on a worker
(real processes, a real redis-server, the real SDK + CLI on the demo double in the worker).

The events reach the front through the same hub tap as in one process, and the front keeps them in its
own state store (`<root>/bot-state.db`): a restarted front serves the old ones with their seqs, and what
the worker says after the restart (read from the events stream) is numbered above them.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.e2e.test_events_restart import increasing
from tests.support.fleet_support import Api, Fleet

pytestmark = pytest.mark.slow


async def restart_front(fleet: Fleet) -> None:
    assert fleet.front is not None
    assert await fleet.front.stop() == 0, fleet.logs()  # SIGTERM: the run goes on on its worker
    await fleet.start_front()


async def test_a_restarted_front_serves_the_runs_events_with_their_seqs_and_numbers_new_ones_above(
        fleet: Fleet) -> None:
    await fleet.start_front()
    await fleet.start_worker("w1")
    async with aiohttp.ClientSession() as session:
        api = Api(session, fleet.base)
        run_id = await api.start("pick a style")
        await api.open_ask(run_id, "Tabs or spaces?")
        one = await api.events(run_id)
        await restart_front(fleet)
        first = await api.open_ask(run_id, "Tabs or spaces?")  # the old card, answerable again
        status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": first["id"], "text": "tabs"})
        assert status == 200 and body["ok"], body
        second = await api.open_ask(run_id, "Dark or light?")
        status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": second["id"], "text": "dark"})
        assert status == 200 and body["ok"], body
        assert (await api.ended(run_id))["status"] == "done", fleet.logs()

        async def settled() -> Any:
            body = await api.get(f"/api/runs/{run_id}/events?after=0")
            return body["events"] if not body["live"] else None
        two: list[dict[str, Any]] = await api.until("the run to be over", settled)
        assert two[: len(one)] == one, fleet.logs()  # the first front's events, same seqs
        assert increasing(two) and any(e["kind"] == "text" and "Got tabs" in e["text"] for e in two[len(one):])

        await restart_front(fleet)
        assert await api.events(run_id) == two
        middle = two[len(two) // 2]["seq"]
        async with session.ws_connect(f"{fleet.base}/api/runs/{run_id}/ws?after={middle}", origin=fleet.base) as ws:
            frame = await ws.receive_json(timeout=30)
        assert frame["events"] == [e for e in two if e["seq"] > middle] and frame["dropped"] is False
