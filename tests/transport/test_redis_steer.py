"""A run's model over Redis: changed through the front while the run is parked on a worker, kept when another
worker takes the run over with the launch's older plan (the change is replayed from the run's intent log
before the new holder's first turn), and carried by the model's next request."""

from __future__ import annotations

import pytest

from adapters.hub import RunOptions, Start, Steer
from tests.support.drive import drive
from tests.support.hub_support import THREAD, button
from tests.transport.test_redis_hub import Rig, rig

__all__ = ["rig"]

pytestmark = pytest.mark.slow

OPUS, SONNET = "claude-opus-4-6", "claude-sonnet-4-6"


async def test_a_model_change_survives_a_takeover(rig: Rig) -> None:
    leaving = await rig.worker("leaving", park_after_s=0.0)
    hub, _surface, watch = await rig.front()
    run = (await hub.submit(Start("pick a style", RunOptions(model=OPUS)), "alice", where=THREAD)).run_id
    card = await watch.card("ask:1-q1")
    await watch.until(lambda s: hub.live[run].parked)
    assert {r.body["model"] for r in rig.md.model_requests() if r.body.get("tools")} == {OPUS}
    changed = await hub.submit(Steer(run, model=SONNET), "alice")
    assert changed.ok, changed.message

    await rig.worker("staying")
    await leaving.stop()
    await watch.until(lambda s: hub.query.holder(run) == "staying", timeout=30)
    live = hub.live[run]
    await watch.until(lambda s: live.view.open_card("1-q1") is not None)
    assert (await drive(hub).handle_action(button(card, "tabs"), "alice", delivery_id="d2")).ok
    await watch.until(lambda s: any("Dark or light?" in p.msg.text and p.msg.buttons for p in s.find("ask:", THREAD)))
    after = [r for r in rig.md.model_requests() if r.body.get("tools") and r.last_tool_result.startswith("tabs")]
    assert after and {r.body["model"] for r in after} == {SONNET}
