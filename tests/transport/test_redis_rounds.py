"""A run's next round over Redis: the worker that held round 1 is gone (SIGKILL of its process group),
yet a person continuing the ended run gets round 2 from whichever worker takes it. The front never needs
the old holder: the round's plan goes on the work stream, the session is in Redis, the workspace and
lineage on the shared root.

Real processes (`flower-bot web --redis`, two `flower-worker`s, redis-server), the real SDK + CLI on the
model double in each worker. The scenario is one conversation played by turn number, so round 2's turn
can only be reached by a request that carries round 1's conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import scenario_of
from tests.support.fleet_support import Api, Fleet
from tests.support.hub_support import FIRST_QUESTION
from tests.support.redis_support import RedisServer

pytestmark = pytest.mark.slow

MORE = "also add a --json flag"
ROUNDS = 'name = "two-rounds"' + FIRST_QUESTION + """
[[conversation.turn]]
say = "Round one done with {last_tool_result}."
[[conversation.turn]]
say = "Round two heard: {last_user_text}"
"""


@pytest.fixture
async def fleet(tmp_path: Path, redis_server: RedisServer) -> AsyncIterator[Fleet]:
    f = Fleet(tmp_path, redis_server.url, scenario=ROUNDS)
    try:
        yield f
    finally:
        await f.stop()


@pytest.fixture
async def api(fleet: Fleet) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(session, fleet.base)


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["kind"] == "text"]


async def test_a_round_continues_on_another_worker_when_round_ones_holder_is_gone(fleet: Fleet, api: Api) -> None:
    await fleet.start_front()
    await fleet.start_worker("w1")
    run_id = await api.start("write a tool")
    ask = await api.open_ask(run_id, "Tabs or spaces?")
    assert (await api.run(run_id))["worker"] == "w1"
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": ask["id"], "text": "tabs"})
    assert status == 200 and body["ok"], body
    assert (await api.ended(run_id))["status"] == "done", fleet.logs()
    first = await api.events(run_id)
    assert "Round one done with tabs." in texts(first), texts(first)

    await fleet.start_worker("w2")
    fleet.workers["w1"].kill()  # round 1's holder is gone, as when its machine goes
    await fleet.workers["w1"].proc.wait()

    status, body = await api.post(f"/api/runs/{run_id}/continue", {"text": MORE})
    assert status == 200 and body["ok"] and body["id"] == run_id and body["round"] == 2, body

    async def second_round_over() -> Any:
        run = await api.run(run_id)
        return run if run["status"] == "done" and run["round"] == 2 else None
    try:
        run = await api.until("round 2 to end", second_round_over, timeout=120)
    except AssertionError:
        raise AssertionError(f"{texts(await api.events(run_id))}\n{fleet.logs()}") from None
    assert run["worker"] == "", run  # an ended run has no holder
    assert any(f"worker w2 holds run {run_id}" in line for line in fleet.workers["w2"].lines), fleet.logs()
    events = await api.events(run_id)
    assert f"Round two heard: {MORE}" in texts(events), texts(events)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # the thread goes on: no reset, no repeat
    assert [e["seq"] for e in events[: len(first)]] == [e["seq"] for e in first]
    steps = [e for e in events[len(first):] if e["kind"] == "step"]
    assert steps and steps[0]["payload"].get("round") == 2, steps
    sessions = {e["payload"]["session_id"] for e in events if e["payload"].get("session_id")}
    assert len(sessions) == 1, sessions  # round 2 resumed round 1's session on the other worker


COSTLY = {"input_tokens": 1000, "output_tokens": 40000}  # $0.603 at Sonnet prices


async def test_a_worker_taking_a_run_over_counts_what_the_dead_holder_spent(tmp_path: Path, fleet: Fleet, api: Api,
                                                                            double_factory: Any,
                                                                            cli_home: Path) -> None:
    """A $0.50 cap: w1's first turn costs $0.60 and the cost cap's question waits when w1 is SIGKILLed. w2 takes
    the run over and its books start at $0.60, not at the launch's $0: it asks again before anything runs."""
    md = await double_factory(scenario_of({"name": "main", "after_end": "Back: {last_user_text}", "turn": [
        {"say": "Reading.", "usage": COSTLY, "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
    ]}))
    model = {**md.env(cli_home), "ANTHROPIC_MODEL": "claude-sonnet-4-5"}
    await fleet.start_front()
    await fleet.start_worker("w1", model_env=model)
    status, body = await api.post("/api/runs", {"task": "spend", "budget_usd": 0.5})
    assert status == 201, body
    run_id = str(body["id"])

    async def budget_question() -> Any:
        asks = await api.get(f"/api/runs/{run_id}/asks")
        return next((a for a in asks if a["question"].startswith("Budget reached")), None)
    first = await api.until("the cost cap's question", budget_question)
    assert "$0.60" in first["question"] and "$0.50" in first["question"], first
    await fleet.start_worker("w2", model_env=model)
    fleet.workers["w1"].kill()
    await fleet.workers["w1"].proc.wait()

    async def asked_again() -> Any:  # a second "asked" event: w2's own question (on the same card)
        asked = [e for e in await api.events(run_id) if e["kind"] == "ask" and e["payload"].get("state") == "asked"
                 and e["text"].startswith("Budget reached")]
        return await budget_question() if len(asked) >= 2 else None
    try:
        again = await api.until("w2 to ask the cost cap's question again", asked_again, timeout=60)
    except AssertionError:
        raise AssertionError(f"{[(e['kind'], e['text'][:60]) for e in await api.events(run_id)]}\n"
                             f"{fleet.logs()}") from None
    assert "$0.60" in again["question"], again  # w2's books start where w1's stopped
    assert any(f"worker w2 holds run {run_id}" in line for line in fleet.workers["w2"].lines), fleet.logs()
    status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": again["id"], "text": "+$5"})
    assert status == 200 and body["ok"], body
    assert (await api.ended(run_id))["status"] == "done", fleet.logs()
