"""A run's events across the lives of a real `flower-bot web` process on one root (the real SDK + CLI on
the model double, the HTTP API as a script uses it):

    life 1   the run asks a question                                  ── SIGTERM ──
    life 2   the run is woken: its old events are served with their seqs, the new ones numbered above
             them; answered, it ends; its events are read                ── SIGKILL ──
    life 3   the ended run: /events, ?after=<a middle seq> and the WebSocket catch-up serve exactly what
             life 2 served; a next round (/continue) numbers its events on  ── SIGTERM ──
    life 4   exactly what life 3 served at the end

Every seq of the run, over all lives, is strictly increasing. A SIGKILL right after a read loses none of
what was read: events are written before they are served.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import scenario_of
from tests.support.campaign.botproc import BotProcess
from tests.support.fleet_support import Api
from tests.support.hub_support import ask_call

pytestmark = pytest.mark.slow

QUESTION = "Tabs or spaces?"


@pytest.fixture
async def bot(tmp_path: Path, double_factory: Any, cli_home: Path) -> AsyncIterator[BotProcess]:
    md = await double_factory(scenario_of({"name": "main", "after_end": "Back: {last_user_text}", "turn": [
        {"say": "One question first.", "call": [ask_call(QUESTION, ["tabs", "spaces"])]},
        {"say": "Going with {last_tool_result}."},
    ]}))
    proc = BotProcess(tmp_path / "root", tmp_path / "bot.log", md.env(cli_home), max_runs=2)
    try:
        yield proc
    finally:
        await proc.stop()


async def ended(api: Api, run_id: str) -> list[dict[str, Any]]:
    """The run's whole log once it has ended and nothing runs it any more (no event can follow)."""
    async def probe() -> Any:
        body = await api.get(f"/api/runs/{run_id}/events?after=0")
        return body["events"] if body["status"] in ("done", "failed", "stopped") and not body["live"] else None
    events: list[dict[str, Any]] = await api.until("the run to end", probe)
    return events


def numbers(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["seq"]) for e in events]


def increasing(events: list[dict[str, Any]]) -> bool:
    seqs = numbers(events)
    return all(a < b for a, b in itertools.pairwise(seqs))


async def test_a_runs_events_are_served_with_their_seqs_across_restarts_and_go_on_above_them(
        bot: BotProcess) -> None:
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await api.start("pick a style")
        await api.open_ask(run_id, QUESTION)
        one = await api.events(run_id)
    await bot.kill(signal.SIGTERM)

    await bot.start()  # the run is woken: its question comes back on its old card
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        again = await api.open_ask(run_id, QUESTION)
        status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": again["id"], "text": "tabs"})
        assert status == 200 and body["ok"], body
        two = await ended(api, run_id)
    assert two[: len(one)] == one, bot.tail()  # life 1's events, with their seqs, as they were
    assert increasing(two) and len(two) > len(one), numbers(two)  # the woken run's numbered above them
    assert any(e["kind"] == "text" and e["text"] == "Going with tabs." for e in two[len(one):])
    await bot.kill(signal.SIGKILL)  # right after the read: what was served was written first

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        assert await api.events(run_id) == two
        middle = two[len(two) // 2]["seq"]
        rest = await api.get(f"/api/runs/{run_id}/events?after={middle}")
        assert rest["events"] == [e for e in two if e["seq"] > middle] and rest["dropped"] is False
        async with session.ws_connect(f"{bot.base}/api/runs/{run_id}/ws?after={middle}", origin=bot.base) as ws:
            first = await ws.receive_json(timeout=30)
        assert first["events"] == rest["events"] and (first["status"], first["live"]) == ("done", False)

        status, body = await api.post(f"/api/runs/{run_id}/continue", {"text": "and a --json flag"})
        assert status == 200 and body["round"] == 2, body
        three = await ended(api, run_id)
    assert three[: len(two)] == two and increasing(three), numbers(three)
    assert three[len(two)]["seq"] == two[-1]["seq"] + 1  # the round goes on right after the old last seq
    assert any(e["kind"] == "text" and e["text"] == "Back: and a --json flag" for e in three[len(two):])
    await bot.kill(signal.SIGTERM)

    await bot.start()
    async with aiohttp.ClientSession() as session:
        assert await Api(session, bot.base).events(run_id) == three
